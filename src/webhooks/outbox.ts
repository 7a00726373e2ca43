// The outbox (decisions.md, "Webhooks"): an event row written in the same transaction as the
// change it reports, fanned out to one delivery per enabled subscribed URL of the account. The
// monthly delivery quota is checked here, when deliveries are queued (api.md §6, §8). The same
// statement notifies the console's live streams (console/bus.ts), delivered at commit.
import { sql } from 'kysely';
import { notifyConsole } from '../console/bus.js';
import type { Executor } from '../db/index.js';
import { newId } from '../lib/ids.js';
import { quotaPeriod } from '../limits/period.js';
import { effectiveLimits, planHasApi } from '../limits/plans.js';
import { addUsageCounts, DELIVERY_QUOTA_RESOURCE, lockDeliveryCount } from '../limits/usage.js';

export const EVENT_KINDS = [
  'message.received',
  'message.status',
  'contact.created',
  'contact.opted_out',
  'campaign.completed',
  'automation.completed',
  'automation.failed',
  'agent.goal_reached',
  'agent.handed_off',
  'agent.conversation_reviewed',
  'case.opened',
  'case.classified',
  'case.closed',
  'case.outcome',
  'case.stage_changed',
] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

/** decisions.md: `data` above 262,144 bytes serialised is replaced by a truncation marker. */
export const MAX_DATA_BYTES = 262_144;

export interface NewEvent {
  accountId: string;
  kind: EventKind;
  data: Record<string, unknown>;
  test?: boolean;
  /** Only this webhook (the test event of one URL). */
  webhookId?: string;
}

/** The stored (and sent) `data`: the JSON text, or the truncation marker when it is too big. */
export function eventDataJson(data: Record<string, unknown>): string {
  const json = JSON.stringify(data);
  // Byte length only matters when the text could be over the limit (UTF-8 is ≤ 3 bytes per unit).
  if (json.length * 3 <= MAX_DATA_BYTES) return json;
  const size = Buffer.byteLength(json);
  return size > MAX_DATA_BYTES ? JSON.stringify({ truncated: true, id: null, size }) : json;
}

/**
 * Whether an account's deliveries are counted when their first attempt is recorded instead of
 * when queued: accounts without a monthly delivery limit (no quota to check; api.md lets the
 * usage counter lag up to half a minute). The first attempt follows at once, so the count lags
 * by the send; a delivery whose URL is deleted before any attempt is never counted, and one
 * queued just before a change of the delivery limit may be counted by the other rule.
 */
export function countsAtFirstAttempt(plan: string, limits: Record<string, number | null>): boolean {
  return effectiveLimits(plan, limits).webhookDeliveriesPerMonth === null;
}

/**
 * Writes the event and its deliveries inside `trx`. Callers wake the dispatcher after commit
 * (`services.dispatcher.wake()`); the dispatcher's poll finds them anyway.
 * One statement when the account has no subscribed URL, two otherwise (three with a delivery
 * limit: the counter row is read and locked); deliveries past the month's quota are
 * recorded as `skipped` (reason `quota`) and never sent.
 */
export async function emitEvent(trx: Executor, e: NewEvent, now: Date): Promise<string> {
  const id = newId();
  // One round trip: the event row, and the account's plan and subscribed URLs.
  const target = await sql<{ plan: string; limits: Record<string, number | null>; subs: string[] }>`
    WITH ev AS (
      INSERT INTO events (id, account_id, kind, data, test, created_at)
      VALUES (${id}, ${e.accountId}, ${e.kind}, ${eventDataJson(e.data)}::jsonb, ${e.test ?? false}, ${now})
      RETURNING data::text AS d)
    SELECT a.plan, a.limits, ARRAY(
      SELECT w.id::text FROM webhooks w
      WHERE w.account_id = a.id AND w.enabled AND w.deleted_at IS NULL
        AND (w.events IS NULL OR ${e.kind} = ANY (w.events))
        AND (${e.webhookId ?? null}::uuid IS NULL OR w.id = ${e.webhookId ?? null}::uuid)
      ORDER BY w.id) AS subs, ${e.test ? sql`NULL` : notifyConsole(sql`a.id`, id, e.kind, sql`(SELECT d FROM ev)`)} AS console
    FROM accounts a WHERE a.id = ${e.accountId}`.execute(trx);
  const row = target.rows[0];
  // api.md §1: only plans with the API include webhooks.
  if (!row || row.subs.length === 0 || !planHasApi(row.plan)) return id;

  const period = quotaPeriod(now);
  const limit = effectiveLimits(row.plan, row.limits).webhookDeliveriesPerMonth;
  if (limit === null) {
    // No quota to keep (countsAtFirstAttempt): the month's count is added when each delivery's
    // first attempt is recorded. Counting here would hold the account's one counter row locked
    // until commit, so every writer of the account would queue on it.
    await insertDeliveries(e, id, row.subs, row.subs.length, now).execute(trx);
    return id;
  }
  // The month's counter row stays locked so concurrent writers of this account queue within the quota.
  const used = await lockDeliveryCount(trx, e.accountId, period);
  const allowed = Math.max(0, Math.min(row.subs.length, limit - used));
  // One round trip: the deliveries and the month's count (the counter row is locked last).
  await sql`
    WITH d AS (${insertDeliveries(e, id, row.subs, allowed, now)})
    ${addUsageCounts(sql`SELECT ${e.accountId}, ${period.start}, ${DELIVERY_QUOTA_RESOURCE}, ${allowed}::int WHERE ${allowed}::int > 0`)}`.execute(
    trx,
  );
  return id;
}

/** One delivery per URL: the first `allowed` pending, the rest skipped (quota). */
function insertDeliveries(e: NewEvent, eventId: string, subs: string[], allowed: number, now: Date) {
  const rows = subs.map(
    (webhookId, i) =>
      sql`(${newId()}::uuid, ${eventId}::uuid, ${webhookId}::uuid, ${e.accountId}::uuid, ${i < allowed ? 'pending' : 'skipped'},
        ${i < allowed ? null : 'quota'}, ${i < allowed ? now : null}::timestamptz, ${now}::timestamptz, ${now}::timestamptz)`,
  );
  return sql`
    INSERT INTO webhook_deliveries (id, event_id, webhook_id, account_id, status, skip_reason, next_attempt_at, created_at, updated_at)
    VALUES ${sql.join(rows)}`;
}
