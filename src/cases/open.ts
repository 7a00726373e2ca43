// Opening a case from the inbound path (api.md §3 "Case": a customer writes and no case is open).
import { sql } from 'kysely';
import type { Trx } from '../db/index.js';
import type { CaseRow } from '../db/types.js';
import { newId } from '../lib/ids.js';
import { emitCaseEvent, emitCaseEvents } from './service.js';

export interface OpenCaseInput {
  accountId: string;
  conversationId: string;
  contactId: string;
  /** Provider timestamp of the inbound message. */
  at: Date;
  /** The channel's ad referral of this message, if any. */
  referral?: { id: string; headline: string; sourceUrl: string };
}

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
 * Inside the inbound transaction, with `open` from lockOpenCase: when the conversation has no
 * open case, opens one in the account's default pipeline's first `open` stage and emits
 * `case.opened`; otherwise updates the open case's lastInboundAt. Either way the message is
 * counted in the case's `inbound_count` (classification runs after the first three: src/
 * classification/queue.ts). Returns the case with its count and reason state.
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
/** The case an inbound message counts in: its id, its inbound messages so far (this one included), its reason state. */
export interface InboundCase {
  id: string;
  inboundCount: number;
  reasonStatus: string;
  reasonSource: string | null;
}

export async function openCaseForInbound(trx: Trx, input: OpenCaseInput, open: CaseRow | undefined, now: Date): Promise<InboundCase> {
  const at = input.at;
  const referral: StoredAd | null =
    input.referral && now.getTime() - at.getTime() <= AD_WINDOW_MS ? { ...input.referral, at: at.toISOString() } : null;

  if (open) {
    const deadline = open.last_inbound_at.getTime() + open.inactivity_hours * HOUR_MS;
    if (at.getTime() < deadline) {
      const counted = await trx
        .updateTable('cases')
        .set({
          last_inbound_at: sql`GREATEST(last_inbound_at, ${at}::timestamptz)`,
          ...(referral && !open.ad ? { ad: JSON.stringify(referral) } : {}),
          inbound_count: sql`inbound_count + 1`,
          updated_at: now,
        })
        .where('id', '=', open.id)
        .returning(['inbound_count', 'reason_status', 'reason_source'])
        .executeTakeFirstOrThrow();
      return { id: open.id, inboundCount: counted.inbound_count, reasonStatus: counted.reason_status, reasonSource: counted.reason_source };
    }
    await trx
      .updateTable('cases')
      .set({ status: 'closed', closed_at: now, close_reason: 'inactivity', updated_at: now })
      .where('id', '=', open.id)
      .execute();
    await emitCaseEvent(trx, 'case.closed', open.id, now);
  }

  // The default pipeline and its first `open` stage, in one read.
  const pipeline = await trx
    .selectFrom('pipelines')
    .select((eb) => [
      'pipelines.id',
      'pipelines.inactivity_hours',
      eb
        .selectFrom('stages')
        .select('stages.id')
        .whereRef('stages.pipeline_id', '=', 'pipelines.id')
        .where('stages.kind', '=', 'open')
        .orderBy('stages.position')
        .orderBy('stages.id')
        .limit(1)
        .as('stage_id'),
    ])
    .where('pipelines.account_id', '=', input.accountId)
    .where('pipelines.is_default', '=', true)
    .executeTakeFirst();
  const stage = pipeline?.stage_id ? { id: pipeline.stage_id } : undefined;

  let ad = referral;
  if (!ad) {
    const earlier = await trx
      .selectFrom('cases')
      .select('ad')
      .where('contact_id', '=', input.contactId)
      .where('ad', 'is not', null)
      .orderBy('opened_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirst();
    const prev = earlier?.ad as StoredAd | null | undefined;
    if (prev?.at && at.getTime() - new Date(prev.at).getTime() <= AD_WINDOW_MS) ad = prev;
  }

  const id = newId();
  await trx
    .insertInto('cases')
    .values({
      id,
      account_id: input.accountId,
      conversation_id: input.conversationId,
      contact_id: input.contactId,
      pipeline_id: pipeline?.id ?? null,
      stage_id: stage?.id ?? null,
      stage_entered_at: stage ? at : null,
      status: 'open',
      opened_at: at,
      last_inbound_at: at,
      reason_status: 'pending',
      inbound_count: 1,
      handled_by: 'none',
      inactivity_hours: pipeline?.inactivity_hours ?? 24,
      ad: ad ? JSON.stringify(ad) : null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  // Entering a pipeline is a stage change too (api.md §3): both events show the same new case.
  await emitCaseEvents(trx, stage ? ['case.opened', 'case.stage_changed'] : ['case.opened'], id, now);
  return { id, inboundCount: 1, reasonStatus: 'pending', reasonSource: null };
}
