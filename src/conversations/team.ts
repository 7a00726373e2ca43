// A team member answers in a conversation (operator API): the one send path, with origin `team`.
// The reply takes the conversation over in the send's own transaction (`origin.inTransaction`,
// after the message insert): its running execution is cancelled, its agent's stretch ends
// ("Intervino el equipo") and the conversation shows the team as handling it while the case lasts.
import { getAccount } from '../accounts/service.js';
import { endStretchByTeam } from '../agents/stretches.js';
import { cancelRunning } from '../automations/cancel.js';
import type { Trx } from '../db/index.js';
import { sendInConversation } from '../messages/send.js';
import type { StoredSend } from '../messages/send-store.js';
import type { MessageRecord } from '../messages/view.js';
import type { Services } from '../services.js';
import { setHandling } from './service.js';

export interface TeamReply {
  text?: string | undefined;
  template?: { id: string; variables?: Record<string, string> | undefined } | undefined;
  by: { type?: 'member' | undefined; id?: string | undefined; name: string };
}

/**
 * Sends the reply in the conversation, on its own channel (WhatsApp from its number with the rules
 * of POST /messages: window, template; Instagram as text within its window), recording the team as
 * who answers (messages/send.ts) and taking the conversation over (teamTakesOver).
 */
export async function sendTeamReply(s: Services, accountId: string, conversationId: string, body: TeamReply): Promise<MessageRecord> {
  const account = await getAccount(s.db, accountId);
  const by = { ...(body.by.type ? { type: body.by.type } : {}), id: body.by.id ?? null, name: body.by.name };
  return sendInConversation(s, account, {
    conversationId,
    ...(body.text !== undefined ? { text: body.text } : {}),
    ...(body.template
      ? { template: { id: body.template.id, ...(body.template.variables ? { variables: body.template.variables } : {}) } }
      : {}),
    origin: { source: 'team', by, inTransaction: (trx, _messageId, stored) => teamTakesOver(trx, by, stored) },
  });
}

/**
 * After the message insert, in the send's transaction (the conversation and its open case locked):
 * the running execution is cancelled, the team handles the conversation while the open case lasts,
 * and the agent's stretch ends (docs/architecture.md "Lock order").
 */
async function teamTakesOver(trx: Trx, by: { id: string | null; name: string }, stored: StoredSend): Promise<void> {
  const { conversationId, openCaseId, now } = stored;
  await cancelRunning(trx, { conversationId }, now);
  await setHandling(trx, conversationId, { type: 'team', id: by.id, name: by.name, caseId: openCaseId });
  await endStretchByTeam(trx, conversationId, now);
}
