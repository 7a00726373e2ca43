// Reads and writes of the messages table that are not the send path (send.ts) nor delivery statuses (status.ts).
import { sql } from 'kysely';
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

/** One inbound message as an inbound round stores it. */
export interface InboundMessageRow {
  id: string;
  conversation_id: string;
  contact_id: string;
  phone_number_id: string | null;
  type: string;
  text: string | null;
  to_phone: string | null;
  wamid: string | null;
  source: string;
  provider_timestamp: Date;
}

/**
 * An inbound round's messages in one insert, in order (status `received`); returns the ids stored
 * (one whose wamid was stored meanwhile is not).
 */
export async function insertInboundMessages(trx: Executor, accountId: string, rows: InboundMessageRow[], now: Date): Promise<Set<string>> {
  const col = <K extends keyof InboundMessageRow>(k: K) => rows.map((r) => r[k]);
  const inserted = await sql<{ id: string }>`
    INSERT INTO messages (id, account_id, conversation_id, contact_id, phone_number_id, type, text, to_phone, wamid, source,
      provider_timestamp, direction, status, created_at, updated_at)
    SELECT id, ${accountId}, conversation_id, contact_id, number_id, type, text, to_phone, wamid, source, at, 'inbound', 'received', ${now}, ${now}
    FROM unnest(${col('id')}::uuid[], ${col('conversation_id')}::uuid[], ${col('contact_id')}::uuid[], ${col('phone_number_id')}::uuid[],
      ${col('type')}::text[], ${col('text')}::text[], ${col('to_phone')}::text[], ${col('wamid')}::text[], ${col('source')}::text[],
      ${col('provider_timestamp')}::timestamptz[])
      AS u(id, conversation_id, contact_id, number_id, type, text, to_phone, wamid, source, at)
    ORDER BY id
    ON CONFLICT (wamid) WHERE wamid IS NOT NULL DO NOTHING
    RETURNING id`.execute(trx);
  return new Set(inserted.rows.map((r) => r.id));
}
