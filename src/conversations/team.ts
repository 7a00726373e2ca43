// A team member answers in a conversation (operator API): the one send path, with origin `team`.
import { getAccount } from '../accounts/service.js';
import { getContact } from '../contacts/service.js';
import { ApiError } from '../http/errors.js';
import { sendMessage } from '../messages/send.js';
import type { MessageRecord } from '../messages/view.js';
import type { Services } from '../services.js';
import { getConversationRow } from './service.js';

export interface TeamReply {
  text?: string | undefined;
  template?: { id: string; variables?: Record<string, string> | undefined } | undefined;
  by: { id?: string | undefined; name: string };
}

/**
 * Sends the reply to the conversation's contact from the conversation's number, with the rules of
 * POST /messages (window, template); the send records the team as who answers (messages/send.ts).
 */
export async function sendTeamReply(s: Services, accountId: string, conversationId: string, body: TeamReply): Promise<MessageRecord> {
  const account = await getAccount(s.db, accountId);
  const conversation = await getConversationRow(s.db, accountId, conversationId);
  // The social channel is not built yet: nothing can leave through it.
  if (conversation.channel !== 'whatsapp' || !conversation.phone_number_id) throw new ApiError('conversation_social');
  const contact = await getContact(s.db, accountId, conversation.contact_id);
  if (!contact.phone) throw new ApiError('conversation_social');
  return sendMessage(s, account, {
    to: contact.phone,
    phoneNumberId: conversation.phone_number_id,
    ...(body.text !== undefined ? { text: body.text } : {}),
    ...(body.template
      ? { template: { id: body.template.id, ...(body.template.variables ? { variables: body.template.variables } : {}) } }
      : {}),
    origin: { source: 'team', by: { id: body.by.id ?? null, name: body.by.name } },
  });
}
