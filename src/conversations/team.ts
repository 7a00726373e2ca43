// A team member answers in a conversation (operator API): the one send path, with origin `team`.
import { getAccount } from '../accounts/service.js';
import { sendInConversation } from '../messages/send.js';
import type { MessageRecord } from '../messages/view.js';
import type { Services } from '../services.js';

export interface TeamReply {
  text?: string | undefined;
  template?: { id: string; variables?: Record<string, string> | undefined } | undefined;
  by: { id?: string | undefined; name: string };
}

/**
 * Sends the reply in the conversation, on its own channel (WhatsApp from its number with the rules
 * of POST /messages: window, template; Instagram as text within its window), recording the team as
 * who answers (messages/send.ts).
 */
export async function sendTeamReply(s: Services, accountId: string, conversationId: string, body: TeamReply): Promise<MessageRecord> {
  const account = await getAccount(s.db, accountId);
  return sendInConversation(s, account, {
    conversationId,
    ...(body.text !== undefined ? { text: body.text } : {}),
    ...(body.template
      ? { template: { id: body.template.id, ...(body.template.variables ? { variables: body.template.variables } : {}) } }
      : {}),
    origin: { source: 'team', by: { id: body.by.id ?? null, name: body.by.name } },
  });
}
