// Conversations: one contact on one channel number (decisions.md, "Cases").

import { type RawBuilder, sql } from 'kysely';
import { conversationUpdatedOf } from '../console/bus.js';
import type { Executor, Trx } from '../db/index.js';
import type { ConversationRow, MessageRow, NoteRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { page } from '../http/schemas.js';
import { newId } from '../lib/ids.js';
import { type ConversationView, conversationMessageView, conversationView } from './view.js';

export const WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * The conversation of a contact on a number, created on first use and locked (NO KEY UPDATE). The
 * caller holds the contact's lock (docs/architecture.md "Lock order"), so this is the second lock.
 */
export async function conversationFor(
  trx: Executor,
  k: {
    accountId: string;
    contactId: string;
    phoneNumberId: string | null;
    channel?: 'whatsapp' | 'socialchat';
    /** socialchat: the social account it happens on (its key with the contact). */
    socialAccountId?: string | null;
  },
  now: Date,
): Promise<ConversationRow> {
  const channel = k.channel ?? 'whatsapp';
  const socialAccountId = k.socialAccountId ?? null;
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
      .where('social_account_id', socialAccountId === null ? 'is' : '=', socialAccountId)
      .forNoKeyUpdate()
      .executeTakeFirst();
  const existing = await find();
  if (existing) return existing;
  const created = await trx
    .insertInto('conversations')
    .values({
      id: newId(),
      account_id: k.accountId,
      contact_id: k.contactId,
      phone_number_id: k.phoneNumberId,
      social_account_id: socialAccountId,
      channel,
      created_at: now,
    })
    .onConflict((oc) => oc.columns(['account_id', 'contact_id', 'channel', 'phone_number_id', 'social_account_id']).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (created) return created;
  const raced = await find();
  if (!raced) throw new Error('conversation vanished after a conflicting insert');
  return raced;
}

/**
 * conversationFor as CTEs of a send's one statement (messages/send.ts), after the contact's
 * (`send_contact`, contacts/service.ts sendContactCtes): `send_conversation`, one row or none. The
 * WhatsApp conversation of that contact on the number, locked FOR NO KEY UPDATE after the contact
 * (the lock order); else created when `create` holds (an SQL condition over `send_contact`). Only
 * a concurrent creation of the same conversation, which this statement's snapshot cannot see,
 * falls to the unique index's DO UPDATE, which returns that row (locked FOR UPDATE).
 */
export const sendConversationCtes = (accountId: string, phoneNumberId: string, now: Date, create: RawBuilder<boolean>) => sql`
  send_conversation_found AS (
    SELECT * FROM conversations
    WHERE account_id = ${accountId} AND contact_id = (SELECT id FROM send_contact) AND channel = 'whatsapp'
      AND phone_number_id = ${phoneNumberId} AND social_account_id IS NULL
    FOR NO KEY UPDATE
  ),
  send_conversation_new AS (
    INSERT INTO conversations (id, account_id, contact_id, phone_number_id, social_account_id, channel, created_at)
    SELECT ${newId()}::uuid, ${accountId}::uuid, c.id, ${phoneNumberId}::uuid, NULL::uuid, 'whatsapp', ${now}::timestamptz
    FROM send_contact c
    WHERE ${create} AND NOT EXISTS (SELECT 1 FROM send_conversation_found)
    ON CONFLICT (account_id, contact_id, channel, phone_number_id, social_account_id)
      DO UPDATE SET created_at = conversations.created_at
    RETURNING *
  ),
  send_conversation AS (
    SELECT * FROM send_conversation_found UNION ALL SELECT * FROM send_conversation_new
  )`;

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

/** Who answers a conversation now; null: nobody in particular. */
export type Handling = {
  type: 'automation' | 'agent' | 'team';
  id: string | null;
  /** null after a handoff: the team, nobody in particular yet. */
  name: string | null;
  /** `team`: the case open when the team took over (its handling lapses when that case closes). */
  caseId: string | null;
} | null;

/** Sets (or clears) the conversation's handling; the caller holds the conversation's lock. */
export async function setHandling(trx: Executor, conversationId: string, handling: Handling): Promise<void> {
  // Its `conversation.updated` in the same statement.
  const u = conversationUpdatedOf('h', 'ev', [conversationId]);
  await sql`WITH h AS (${setHandlingSql(conversationId, handling)} RETURNING *), ev AS (${u.events}) SELECT ${u.notify}`.execute(trx);
}

/**
 * The statement of setHandling, for a caller that composes it into its own (a WITH clause):
 * starting an execution sets the handling in the statement that inserts it.
 */
export const setHandlingSql = (conversationId: string, handling: Handling) => sql`
  UPDATE conversations SET handling_type = ${handling?.type ?? null}, handling_id = ${handling?.id ?? null},
    handling_name = ${handling?.name ?? null}, handling_case_id = ${handling?.caseId ?? null}::uuid
  WHERE id = ${conversationId}`;

/** A team's handling set when no case was open lasts while this case (the first to open) stays open. */
export async function teamTakesCase(trx: Executor, conversationId: string, caseId: string): Promise<void> {
  await trx
    .updateTable('conversations')
    .set({ handling_case_id: caseId })
    .where('id', '=', conversationId)
    .where('handling_type', '=', 'team')
    .where('handling_case_id', 'is', null)
    .execute();
}

/** A write of conversations composed into another statement: its CTEs, and what its final SELECT evaluates. */
export interface ComposedWrite {
  /** `name AS (…), …`, for a WITH clause. */
  ctes: RawBuilder<unknown>;
  /** The CTE of the written rows (a later CTE that reads it runs after it: lock order). */
  rows: string;
  /** Notifies the console's streams (delivered at commit); the final SELECT evaluates it. */
  notify: RawBuilder<unknown>;
}

/**
 * clearHandling's statement in parts, for a caller that composes it into its own: an execution's
 * end writes the handling and the execution row in one statement (step-writes.ts updateExecution).
 */
export function clearHandlingWrite(ids: readonly string[], type: 'automation' | 'agent' | 'team'): ComposedWrite {
  // The cleared ones' `conversation.updated` in the same statement.
  const u = conversationUpdatedOf('handling_cleared', 'handling_events', ids);
  return {
    ctes: sql`
      handling_cleared AS (
        UPDATE conversations SET handling_type = NULL, handling_id = NULL, handling_name = NULL, handling_case_id = NULL
        WHERE id = ANY (${[...ids]}::uuid[]) AND handling_type = ${type}
        RETURNING *),
      handling_events AS (${u.events})`,
    rows: 'handling_cleared',
    notify: u.notify,
  };
}

/**
 * Clears the handling of one conversation or several when it is still of this type (an execution
 * ending leaves a team's handling alone); the caller holds their locks (lockConversations).
 */
export async function clearHandling(
  trx: Executor,
  conversationId: string | string[],
  type: 'automation' | 'agent' | 'team',
): Promise<void> {
  const ids = typeof conversationId === 'string' ? [conversationId] : conversationId;
  if (ids.length === 0) return;
  const w = clearHandlingWrite(ids, type);
  await sql`WITH ${w.ctes} SELECT ${w.notify}`.execute(trx);
}

/** Locks these conversations (FOR NO KEY UPDATE), in id order: lock 3 of docs/architecture.md "Lock order". */
export async function lockConversations(trx: Executor, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await trx
    .selectFrom('conversations')
    .select('id')
    .where('id', 'in', [...ids].sort())
    .orderBy('id')
    .forNoKeyUpdate()
    .execute();
}

/** An internal note for the team (a handoff's note; later an agent's summary). */
export async function addNote(
  trx: Executor,
  n: {
    accountId: string;
    conversationId: string;
    caseId: string | null;
    text: string;
    by: { type: 'automation' | 'agent' | 'team'; id: string | null; name: string };
  },
  now: Date,
): Promise<NoteRow> {
  return trx
    .insertInto('conversation_notes')
    .values({
      id: newId(),
      account_id: n.accountId,
      conversation_id: n.conversationId,
      case_id: n.caseId,
      text: n.text,
      by: JSON.stringify(n.by),
      created_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The conversations with what their view needs: the open case and the handled case's status. */
export const viewQuery = (db: Executor, accountId: string) =>
  db
    .selectFrom('conversations as c')
    .leftJoin('cases as oc', (j) => j.onRef('oc.conversation_id', '=', 'c.id').on('oc.status', '=', 'open'))
    .leftJoin('cases as hc', 'hc.id', 'c.handling_case_id')
    .select([
      'c.id',
      'c.contact_id',
      'c.channel',
      'c.phone_number_id',
      'c.social_account_id',
      'c.last_inbound_at',
      'c.handling_type',
      'c.handling_id',
      'c.handling_name',
      'c.handling_case_id',
      'c.created_at',
      'oc.id as open_case_id',
      'hc.status as handling_case_status',
    ])
    .where('c.account_id', '=', accountId);

/** A conversation of the account (404 when unknown or of another account). */
export async function getConversationRow(db: Executor, accountId: string, id: string): Promise<ConversationRow> {
  const row = await db.selectFrom('conversations').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
  if (!row) throw new ApiError('conversation_not_found');
  return row;
}

export async function getConversation(db: Executor, accountId: string, id: string): Promise<ConversationView> {
  const row = await viewQuery(db, accountId).where('c.id', '=', id).executeTakeFirst();
  if (!row) throw new ApiError('conversation_not_found');
  return conversationView(row);
}

/** One page of the account's conversations in creation order (UUIDv7 ids), after the cursor id. */
export async function listConversations(
  db: Executor,
  accountId: string,
  q: { limit: number; after?: string | undefined; contactId?: string | undefined; channel?: 'whatsapp' | 'socialchat' | undefined },
) {
  let query = viewQuery(db, accountId);
  if (q.after) query = query.where('c.id', '>', q.after);
  if (q.contactId) query = query.where('c.contact_id', '=', q.contactId);
  if (q.channel) query = query.where('c.channel', '=', q.channel);
  const rows = await query
    .orderBy('c.id')
    .limit(q.limit + 1)
    .execute();
  const p = page(rows, q.limit);
  return { data: p.data.map(conversationView), hasMore: p.hasMore, nextCursor: p.nextCursor };
}

/** One page of a conversation's messages, both directions, oldest first (404: unknown conversation). */
export async function listConversationMessages(
  db: Executor,
  accountId: string,
  id: string,
  q: { limit: number; after?: string | undefined },
) {
  await getConversationRow(db, accountId, id);
  let query = db.selectFrom('messages').selectAll().where('conversation_id', '=', id).where('account_id', '=', accountId);
  if (q.after) query = query.where('id', '>', q.after);
  const rows: MessageRow[] = await query
    .orderBy('id')
    .limit(q.limit + 1)
    .execute();
  const p = page(rows, q.limit);
  return { data: p.data.map(conversationMessageView), hasMore: p.hasMore, nextCursor: p.nextCursor };
}

/** The conversation's internal notes, oldest first (404: unknown conversation). */
export async function listNotes(db: Executor, accountId: string, id: string) {
  await getConversationRow(db, accountId, id);
  const rows = await db
    .selectFrom('conversation_notes')
    .selectAll()
    .where('conversation_id', '=', id)
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute();
  return {
    data: rows.map((n) => ({ id: n.id, text: n.text, by: n.by, caseId: n.case_id, createdAt: n.created_at.toISOString() })),
  };
}

/**
 * The WhatsApp conversations of many contacts with one number, made where missing (a campaign's
 * slice: sender.ts): one insert and one read for the whole slice. No lock is taken: the messages
 * inserted next only hold their conversation's key (FOR KEY SHARE), which no writer blocks.
 */
export async function conversationsForMany(
  trx: Executor,
  k: { accountId: string; phoneNumberId: string; contactIds: string[] },
  now: Date,
): Promise<Map<string, string>> {
  if (k.contactIds.length === 0) return new Map();
  const ids = k.contactIds.map(() => newId());
  await sql`
    INSERT INTO conversations (id, account_id, contact_id, phone_number_id, social_account_id, channel, created_at)
    SELECT v.id, ${k.accountId}::uuid, v.contact_id, ${k.phoneNumberId}::uuid, NULL, 'whatsapp', ${now}::timestamptz
    FROM unnest(${ids}::uuid[], ${k.contactIds}::uuid[]) AS v(id, contact_id)
    ON CONFLICT (account_id, contact_id, channel, phone_number_id, social_account_id) DO NOTHING`.execute(trx);
  const { rows } = await sql<{ id: string; contact_id: string }>`
    SELECT id, contact_id FROM conversations
    WHERE account_id = ${k.accountId}::uuid AND channel = 'whatsapp' AND phone_number_id = ${k.phoneNumberId}::uuid
      AND social_account_id IS NULL AND contact_id = any(${k.contactIds}::uuid[])`.execute(trx);
  return new Map(rows.map((r) => [r.contact_id, r.id]));
}

/**
 * Locks the conversation (docs/architecture.md "Lock order": before its executions and stretches)
 * and answers whether an automation execution or an AI agent stretch runs in it: one of them at a
 * time answers a conversation (automations/triggers.ts). An operator's retry of a dead one
 * (admin/dead-letters.ts) puts it back only when this is false; the lock keeps a customer's
 * message from starting another meanwhile.
 */
export async function lockConversationBusy(trx: Trx, conversationId: string): Promise<boolean> {
  const { rows } = await sql<{ busy: boolean }>`
    SELECT EXISTS (SELECT 1 FROM automation_executions e WHERE e.conversation_id = c.id AND e.status = 'running')
        OR EXISTS (SELECT 1 FROM agent_stretches st WHERE st.conversation_id = c.id AND st.status = 'running') AS busy
    FROM conversations c WHERE c.id = ${conversationId} FOR NO KEY UPDATE`.execute(trx);
  return rows[0]?.busy ?? true;
}
