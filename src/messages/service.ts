// Reads and writes of the messages table that are not the send path (send.ts) nor delivery statuses (status.ts).
import type { Executor } from '../db/index.js';
import type { NewMessage } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { newId } from '../lib/ids.js';
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

/**
 * Stores a received message; undefined when another delivery already stored its wamid (provider
 * ids are unique across the channel).
 */
export const insertInboundMessage = (
  trx: Executor,
  m: Pick<
    NewMessage,
    | 'account_id'
    | 'conversation_id'
    | 'contact_id'
    | 'phone_number_id'
    | 'type'
    | 'text'
    | 'to_phone'
    | 'wamid'
    | 'source'
    | 'provider_timestamp'
  >,
  now: Date,
): Promise<{ id: string } | undefined> =>
  trx
    .insertInto('messages')
    .values({ ...m, id: newId(), direction: 'inbound', status: 'received', created_at: now, updated_at: now })
    .onConflict((oc) => oc.column('wamid').where('wamid', 'is not', null).doNothing())
    .returning('id')
    .executeTakeFirst();
