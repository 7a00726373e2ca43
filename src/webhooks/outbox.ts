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

/** Transactions that queued a delivery to send (queuedDeliveries). */
const queued = new WeakSet<Executor>();

/**
 * Whether this transaction queued a delivery to send: its caller wakes the dispatcher after the
 * commit (`services.dispatcher.wake()`), and only then — a commit whose events reach no URL (an
 * account without webhooks) costs the dispatcher no claim. The dispatcher's poll finds what a
 * wake missed anyway.
 */
export const queuedDeliveries = (trx: Executor): boolean => queued.has(trx);

/** Writes the event and its deliveries inside `trx`: emitEvents with one event (queuedDeliveries tells). */
export async function emitEvent(trx: Executor, e: NewEvent, now: Date): Promise<string> {
  return (await emitEvents(trx, [e], now))[0]!;
}

interface Target {
  n: number;
  account_id: string;
  plan: string;
  limits: Record<string, number | null>;
  hooks: { id: string; events: string[] | null }[] | null;
}

/**
 * Writes events (in this order) and their deliveries inside `trx`, set-wise: one statement writes
 * every event, notifies the console's streams (in event order, delivered at commit) and reads each
 * account's plan and enabled URLs; one more writes every delivery of an account without a delivery
 * limit, two more (the counter row read and locked, then the deliveries and the count) one with a
 * limit. Deliveries past the month's quota are recorded as `skipped` (reason `quota`) and never sent.
 * Returns the events' ids, in order.
 */
export async function emitEvents(trx: Executor, events: readonly NewEvent[], now: Date): Promise<string[]> {
  if (events.length === 0) return [];
  const ids = events.map(() => newId());
  const accounts = [...new Set(events.map((e) => e.accountId))];
  const { rows } = await sql<Target>`
    WITH input AS (
      SELECT * FROM unnest(${ids}::uuid[], ${events.map((e) => e.accountId)}::uuid[], ${events.map((e) => e.kind)}::text[],
        ${events.map((e) => eventDataJson(e.data))}::text[], ${events.map((e) => e.test ?? false)}::bool[])
        WITH ORDINALITY AS u(id, account_id, kind, data, test, n)),
    ev AS (
      INSERT INTO events (id, account_id, kind, data, test, created_at)
      SELECT id, account_id, kind, data::jsonb, test, ${now} FROM input ORDER BY n
      RETURNING id, account_id, kind, test, data::text AS d),
    hooks AS (
      SELECT w.account_id, jsonb_agg(jsonb_build_object('id', w.id, 'events', w.events) ORDER BY w.id) AS list
      FROM webhooks w WHERE w.account_id = ANY (${accounts}::uuid[]) AND w.enabled AND w.deleted_at IS NULL
      GROUP BY w.account_id)
    SELECT i.n::int AS n, a.id AS account_id, a.plan, a.limits, h.list AS hooks,
      CASE WHEN NOT ev.test THEN ${notifyConsole(sql`ev.account_id`, sql`ev.id`, sql`ev.kind`, sql`ev.d`)} END AS console
    FROM ev JOIN input i ON i.id = ev.id JOIN accounts a ON a.id = ev.account_id
    LEFT JOIN hooks h ON h.account_id = ev.account_id
    ORDER BY i.n`.execute(trx);

  // Each account's deliveries, in event order: (event index, subscribed webhook ids).
  const byAccount = new Map<string, { row: Target; subs: { event: number; webhooks: string[] }[] }>();
  for (const row of rows) {
    const e = events[row.n - 1]!;
    // api.md §1: only plans with the API include webhooks.
    if (!row.hooks || !planHasApi(row.plan)) continue;
    const webhooks = row.hooks
      .filter((w) => (w.events === null || w.events.includes(e.kind)) && (e.webhookId === undefined || w.id === e.webhookId))
      .map((w) => w.id);
    if (webhooks.length === 0) continue;
    const acc = byAccount.get(row.account_id) ?? { row, subs: [] };
    acc.subs.push({ event: row.n - 1, webhooks });
    byAccount.set(row.account_id, acc);
  }
  for (const [accountId, { row, subs }] of byAccount) {
    const total = subs.reduce((sum, x) => sum + x.webhooks.length, 0);
    const limit = effectiveLimits(row.plan, row.limits).webhookDeliveriesPerMonth;
    if (limit === null) {
      // No quota to keep (countsAtFirstAttempt): the month's count is added when each delivery's
      // first attempt is recorded. Counting here would hold the account's one counter row locked
      // until commit, so every writer of the account would queue on it.
      await insertDeliveries(accountId, subs, ids, total, now).execute(trx);
      queued.add(trx);
      continue;
    }
    // The month's counter row stays locked so concurrent writers of this account queue within the quota.
    const period = quotaPeriod(now);
    const used = await lockDeliveryCount(trx, accountId, period);
    const allowed = Math.max(0, Math.min(total, limit - used));
    if (allowed > 0) queued.add(trx);
    // One round trip: the deliveries and the month's count (the counter row is locked last).
    await sql`
      WITH d AS (${insertDeliveries(accountId, subs, ids, allowed, now)})
      ${addUsageCounts(sql`SELECT ${accountId}, ${period.start}, ${DELIVERY_QUOTA_RESOURCE}, ${allowed}::int WHERE ${allowed}::int > 0`)}`.execute(
      trx,
    );
  }
  return ids;
}

/** One delivery per subscribed URL of each event, in event order: the first `allowed` pending, the rest skipped (quota). */
function insertDeliveries(
  accountId: string,
  subs: { event: number; webhooks: string[] }[],
  eventIds: string[],
  allowed: number,
  now: Date,
) {
  let i = 0;
  const rows = subs.flatMap(({ event, webhooks }) =>
    webhooks.map((webhookId) => {
      const pending = i++ < allowed;
      return sql`(${newId()}::uuid, ${eventIds[event]!}::uuid, ${webhookId}::uuid, ${accountId}::uuid, ${pending ? 'pending' : 'skipped'},
        ${pending ? null : 'quota'}, ${pending ? now : null}::timestamptz, ${now}::timestamptz, ${now}::timestamptz)`;
    }),
  );
  return sql`
    INSERT INTO webhook_deliveries (id, event_id, webhook_id, account_id, status, skip_reason, next_attempt_at, created_at, updated_at)
    VALUES ${sql.join(rows)}`;
}
