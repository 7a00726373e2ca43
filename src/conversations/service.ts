// Conversations: one contact on one channel number (decisions.md, "Cases").
import { sql } from 'kysely';
import type { Executor } from '../db/index.js';
import type { ConversationRow } from '../db/types.js';
import { newId } from '../lib/ids.js';

export const WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * The conversation of a contact on a number, created on first use and locked (NO KEY UPDATE). The
 * caller holds the contact's lock (docs/architecture.md "Lock order"), so this is the second lock.
 */
export async function conversationFor(
  trx: Executor,
  k: { accountId: string; contactId: string; phoneNumberId: string | null; channel?: 'whatsapp' | 'socialchat' },
  now: Date,
): Promise<ConversationRow> {
  const channel = k.channel ?? 'whatsapp';
  // A plain lock, not an upsert: ON CONFLICT DO UPDATE would write a row version on every message
  // and lock it FOR UPDATE (its columns are the unique key), blocking the messages' key checks.
  const find = () =>
    trx
      .selectFrom('conversations')
      .selectAll()
      .where('account_id', '=', k.accountId)
      .where('contact_id', '=', k.contactId)
      .where('channel', '=', channel)
      .where('phone_number_id', k.phoneNumberId === null ? 'is' : '=', k.phoneNumberId)
      .forNoKeyUpdate()
      .executeTakeFirst();
  const existing = await find();
  if (existing) return existing;
  const created = await trx
    .insertInto('conversations')
    .values({ id: newId(), account_id: k.accountId, contact_id: k.contactId, phone_number_id: k.phoneNumberId, channel, created_at: now })
    .onConflict((oc) => oc.columns(['account_id', 'contact_id', 'channel', 'phone_number_id']).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (created) return created;
  const raced = await find();
  if (!raced) throw new Error('conversation vanished after a conflicting insert');
  return raced;
}

/** Free text is allowed within 24 h of the contact's last inbound message (api.md §3). */
export const windowOpen = (c: Pick<ConversationRow, 'last_inbound_at'>, now: Date): boolean =>
  c.last_inbound_at !== null && now.getTime() - c.last_inbound_at.getTime() < WINDOW_MS;

/**
 * An inbound message at `at` (the provider's timestamp) opens the 24-hour window from there; an
 * older timestamp (a late or re-ordered delivery) never shrinks it.
 */
export const touchInboundWindow = (trx: Executor, conversationId: string, at: Date): Promise<ConversationRow> =>
  trx
    .updateTable('conversations')
    .set({ last_inbound_at: sql`GREATEST(last_inbound_at, ${at}::timestamptz)` })
    .where('id', '=', conversationId)
    .returningAll()
    .executeTakeFirstOrThrow();
