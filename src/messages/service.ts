// Reads and writes of the messages table that are not the send path (send.ts) nor delivery statuses (status.ts).
import type { Executor } from '../db/index.js';
import { ApiError } from '../http/errors.js';
import { type MessageRecord, messageView } from './view.js';

/** GET /messages/{id}: one message of the account, with the contact's phone for inbound ones. */
export async function getMessage(db: Executor, accountId: string, id: string): Promise<MessageRecord> {
  const row = await db
    .selectFrom('messages')
    .leftJoin('contacts', 'contacts.id', 'messages.contact_id')
    .selectAll('messages')
    .select('contacts.phone as contact_phone')
    .where('messages.account_id', '=', accountId)
    .where('messages.id', '=', id)
    .executeTakeFirst();
  if (!row) throw new ApiError('message_not_found');
  const { contact_phone, ...m } = row;
  return messageView(m, contact_phone);
}
