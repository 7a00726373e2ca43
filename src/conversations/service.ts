// Conversations: one contact on one channel number (decisions.md, "Cases").
import { sql } from 'kysely';
import type { Executor } from '../db/index.js';
import type { ConversationRow } from '../db/types.js';
import { newId } from '../lib/ids.js';

export const WINDOW_MS = 24 * 60 * 60 * 1000;

export async function conversationFor(
  trx: Executor,
  k: { accountId: string; contactId: string; phoneNumberId: string | null; channel?: 'whatsapp' | 'socialchat' },
  now: Date,
): Promise<ConversationRow> {
  const channel = k.channel ?? 'whatsapp';
  return trx
    .insertInto('conversations')
    .values({ id: newId(), account_id: k.accountId, contact_id: k.contactId, phone_number_id: k.phoneNumberId, channel, created_at: now })
    .onConflict((oc) => oc.columns(['account_id', 'contact_id', 'channel', 'phone_number_id']).doUpdateSet({ channel }))
    .returningAll()
    .executeTakeFirstOrThrow();
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
