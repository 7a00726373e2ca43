// Opening a case from the inbound path (api.md §3 "Case": a customer writes and no case is open).
import { sql } from 'kysely';
import { hasCatalogueSql } from '../classification/reasons.js';
import type { Executor, Trx } from '../db/index.js';
import type { CaseRow } from '../db/types.js';
import { newId } from '../lib/ids.js';
import type { NewEvent } from '../webhooks/outbox.js';
import { type CaseJoined, caseEventData, casesQuery } from './view.js';

/** api.md §2 "Case" `ad`: the ad that brought the customer, if within the previous 7 days. */
export const AD_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;
const HOUR_MS = 60 * 60 * 1000;

/** Stored form of `ad`: the view shows id, headline and sourceUrl; `at` dates the click. */
type StoredAd = { id: string; headline: string; sourceUrl: string; at: string };

/**
 * The conversation's open case, locked: the inbound path takes it right after the conversation
 * and before it writes any event (the outbox's delivery counter is the last lock: docs/
 * architecture.md "Lock order"). The caller holds the conversation's lock, so no other inbound
 * decides meanwhile whether a case opens.
 */
export const lockOpenCase = (trx: Trx, conversationId: string): Promise<CaseRow | undefined> =>
  trx
    .selectFrom('cases')
    .selectAll()
    .where('conversation_id', '=', conversationId)
    .where('status', '=', 'open')
    .forUpdate()
    .executeTakeFirst();

/** An open case whose inactivity deadline has not passed at `at` (else the next message closes it). */
export const stillOpenAt = (c: Pick<CaseRow, 'last_inbound_at' | 'inactivity_hours'>, at: Date): boolean =>
  at.getTime() < c.last_inbound_at.getTime() + c.inactivity_hours * HOUR_MS;

/** The conversation's open case, read without a lock (a handoff's note names it). */
export const openCaseOf = (trx: Trx, conversationId: string): Promise<{ id: string } | undefined> =>
  trx.selectFrom('cases').select('id').where('conversation_id', '=', conversationId).where('status', '=', 'open').executeTakeFirst();

/**
 * The open cases of these conversations, locked, by conversation: the inbound path takes them right
 * after the conversations and before it writes any event (lockOpenCase's set-wise form).
 */
export async function lockOpenCases(trx: Trx, conversationIds: string[]): Promise<Map<string, CaseRow>> {
  if (conversationIds.length === 0) return new Map();
  const rows = await trx
    .selectFrom('cases')
    .selectAll()
    .where('conversation_id', 'in', conversationIds)
    .where('status', '=', 'open')
    .orderBy('id')
    .forUpdate()
    .execute();
  return new Map(rows.map((c) => [c.conversation_id, c]));
}

/** One inbound message of a round, for its case. */
export interface InboundCaseInput {
  conversationId: string;
  contactId: string;
  /** The contact's name now (the events show it). */
  contactName: string;
  /** The contact was created by this message (it has no earlier case). */
  contactCreated: boolean;
  /** Provider timestamp of the inbound message. */
  at: Date;
  /** The channel's ad referral of this message, if any. */
  referral?: { id: string; headline: string; sourceUrl: string };
  /** The conversation's open case, from lockOpenCases. */
  open: CaseRow | undefined;
}

/** The case an inbound message counts in: its id, its inbound messages so far (this one included), its reason state. */
export interface InboundCase {
  id: string;
  inboundCount: number;
  reasonStatus: string;
  reasonSource: string | null;
  /** The case events this message caused, in order (the outbox writes them with the round's others). */
  events: NewEvent[];
}

/**
 * Inside the inbound transaction, for messages of distinct conversations (one round): a
 * conversation with no open case opens one in the account's default pipeline's first `open` stage
 * (`case.opened`); an open case counts the message and moves its lastInboundAt. Either way the
 * message is counted in the case's `inbound_count` (classification runs after the first three:
 * src/classification/queue.ts). Set-wise: one statement per kind of write (the new cases' insert
 * reads the default pipeline and its stage itself), one read of earlier ads (known contacts only),
 * one of the closed cases' views. Returns, per input in order, the case with its count, reason
 * state and events; and whether the account has a reasons catalogue, which the update and the
 * insert read with their rows (the classification queue then needs no statement of its own when
 * there is none).
 *
 * - The new case also emits `case.stage_changed` when it enters a pipeline stage (api.md §3:
 *   "enters a pipeline"). Without a default pipeline the case has stage null and only
 *   `case.opened` is emitted.
 * - An open case whose inactivity deadline passed before this message was written (the
 *   `case-timeouts` job had not run yet) is closed first (`inactivity`, `case.closed`) and a new
 *   one opens: the message starts a new inquiry either way.
 * - `ad`: this message's referral (if the message is within 7 days), else the latest ad of the
 *   contact's earlier cases when that click is within 7 days of this message.
 */
export async function openCasesForInbound(
  trx: Trx,
  accountId: string,
  inputs: InboundCaseInput[],
  now: Date,
): Promise<{ cases: InboundCase[]; catalogue: boolean | undefined }> {
  if (inputs.length === 0) return { cases: [], catalogue: undefined };
  /** Whether the account has a reasons catalogue, as the statements below read it (classification). */
  let catalogue: boolean | undefined;
  const referralOf = (i: InboundCaseInput): StoredAd | null =>
    i.referral && now.getTime() - i.at.getTime() <= AD_WINDOW_MS ? { ...i.referral, at: i.at.toISOString() } : null;
  const counted = inputs.filter((i) => i.open && stillOpenAt(i.open, i.at));
  const expired = inputs.filter((i) => i.open && !stillOpenAt(i.open, i.at));
  const opening = inputs.filter((i) => !i.open || !stillOpenAt(i.open, i.at));
  const out = new Map<InboundCaseInput, InboundCase>();

  if (counted.length > 0) {
    const { rows } = await sql<{
      id: string;
      inbound_count: number;
      reason_status: string;
      reason_source: string | null;
      catalogue: boolean;
    }>`
      WITH catalogue AS (SELECT ${hasCatalogueSql(accountId)} AS yes)
      UPDATE cases c SET last_inbound_at = GREATEST(c.last_inbound_at, u.at), ad = COALESCE(c.ad, u.ad),
        inbound_count = c.inbound_count + 1, updated_at = ${now}
      FROM unnest(${counted.map((i) => i.open!.id)}::uuid[], ${counted.map((i) => i.at)}::timestamptz[],
        ${counted.map((i) => jsonOrNull(referralOf(i)))}::jsonb[]) AS u(id, at, ad)
      WHERE c.id = u.id
      RETURNING c.id, c.inbound_count, c.reason_status, c.reason_source, (SELECT yes FROM catalogue) AS catalogue`.execute(trx);
    if (rows[0]) catalogue = rows[0].catalogue;
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const i of counted) {
      const r = byId.get(i.open!.id)!;
      out.set(i, { id: r.id, inboundCount: r.inbound_count, reasonStatus: r.reason_status, reasonSource: r.reason_source, events: [] });
    }
  }
  if (expired.length > 0) {
    await trx
      .updateTable('cases')
      .set({ status: 'closed', closed_at: now, close_reason: 'inactivity', updated_at: now })
      .where(
        'id',
        'in',
        expired.map((i) => i.open!.id),
      )
      .execute();
  }

  const fresh: { input: InboundCaseInput; id: string; ad: StoredAd | null }[] = [];
  /** The new cases that entered a pipeline's stage. */
  const staged = new Set<string>();
  const views = new Map<string, Record<string, unknown>>();
  if (opening.length > 0) {
    // The latest ad of each contact's earlier cases (a contact created by this message has none).
    const asking = opening.filter((i) => !referralOf(i) && !i.contactCreated).map((i) => i.contactId);
    const earlier = asking.length > 0 ? await latestAds(trx, asking) : new Map<string, StoredAd>();
    for (const i of opening) {
      let ad = referralOf(i);
      const prev = earlier.get(i.contactId);
      if (!ad && prev?.at && i.at.getTime() - new Date(prev.at).getTime() <= AD_WINDOW_MS) ad = prev;
      fresh.push({ input: i, id: newId(), ad });
    }
    // The default pipeline and its first `open` stage are read by the insert itself (one round trip).
    const { rows } = await sql<CaseRow & { pipeline_name: string | null; stage_name: string | null; catalogue: boolean }>`
      WITH p AS (
        SELECT p.id, p.name, p.inactivity_hours, s.id AS stage_id, s.name AS stage_name
        FROM pipelines p
        LEFT JOIN LATERAL (
          SELECT id, name FROM stages WHERE pipeline_id = p.id AND kind = 'open' ORDER BY position, id LIMIT 1) s ON true
        WHERE p.account_id = ${accountId} AND p.is_default
        LIMIT 1),
      ins AS (
        INSERT INTO cases (id, account_id, conversation_id, contact_id, pipeline_id, stage_id, stage_entered_at, status,
          opened_at, last_inbound_at, reason_status, inbound_count, handled_by, inactivity_hours, ad, created_at, updated_at)
        SELECT u.id, ${accountId}, u.conversation_id, u.contact_id, p.id, p.stage_id, CASE WHEN p.stage_id IS NOT NULL THEN u.at END,
          'open', u.at, u.at, 'pending', 1, 'none', COALESCE(p.inactivity_hours, 24), u.ad, ${now}, ${now}
        FROM unnest(${fresh.map((f) => f.id)}::uuid[], ${fresh.map((f) => f.input.conversationId)}::uuid[],
          ${fresh.map((f) => f.input.contactId)}::uuid[], ${fresh.map((f) => f.input.at)}::timestamptz[],
          ${fresh.map((f) => jsonOrNull(f.ad))}::jsonb[]) WITH ORDINALITY AS u(id, conversation_id, contact_id, at, ad, n)
        LEFT JOIN p ON true
        ORDER BY u.n
        RETURNING *)
      SELECT ins.*, p.name AS pipeline_name, p.stage_name, ${hasCatalogueSql(accountId)} AS catalogue
      FROM ins LEFT JOIN p ON true`.execute(trx);
    if (rows[0]) catalogue = rows[0].catalogue;
    // The new cases as their views show them (casesQuery's join, from what this pass knows).
    const nameOf = new Map(fresh.map((f) => [f.id, f.input.contactName]));
    for (const { pipeline_name, stage_name, catalogue: _, ...row } of rows) {
      if (row.stage_id) staged.add(row.id);
      const joined: CaseJoined = {
        ...row,
        contact_name: nameOf.get(row.id) ?? null,
        pipeline_name,
        stage_name: row.stage_id ? stage_name : null,
        stage_kind: row.stage_id ? 'open' : null,
      };
      views.set(row.id, caseEventData(joined));
    }
  }

  // The closed cases' data as their views show them now, in one read.
  if (expired.length > 0) {
    const closed = await casesQuery(trx)
      .where(
        'cases.id',
        'in',
        expired.map((i) => i.open!.id),
      )
      .execute();
    for (const row of closed) views.set(row.id, caseEventData(row));
  }
  for (const f of fresh) {
    const i = f.input;
    const event = (kind: NewEvent['kind'], id: string): NewEvent => ({ accountId, kind, data: views.get(id)! });
    // Entering a pipeline is a stage change too (api.md §3): both events show the same new case.
    const events = [
      ...(i.open ? [event('case.closed', i.open.id)] : []),
      event('case.opened', f.id),
      ...(staged.has(f.id) ? [event('case.stage_changed', f.id)] : []),
    ];
    out.set(i, { id: f.id, inboundCount: 1, reasonStatus: 'pending', reasonSource: null, events });
  }
  return { cases: inputs.map((i) => out.get(i)!), catalogue };
}

const jsonOrNull = (v: unknown): string | null => (v === null ? null : JSON.stringify(v));

/**
 * The ad of each contact's latest case that came from one (the contacts' earlier cases), through
 * the index of the cases with an ad (`cases_contact_ad`): cases has no other index by contact.
 */
export async function latestAds(trx: Executor, contactIds: string[]): Promise<Map<string, StoredAd>> {
  const { rows } = await sql<{ contact_id: string; ad: StoredAd }>`
    SELECT DISTINCT ON (contact_id) contact_id, ad FROM cases
    WHERE contact_id = ANY (${contactIds}::uuid[]) AND ad IS NOT NULL
    ORDER BY contact_id, opened_at DESC, id DESC`.execute(trx);
  return new Map(rows.map((r) => [r.contact_id, r.ad]));
}
