// SQL of the dispatcher: claim due deliveries under a lease, record attempts in batches, release.
import { type RawBuilder, sql } from 'kysely';
import type { Db, Executor } from '../db/index.js';
import { recordDeath } from '../jobs/dead-letters.js';
import { newId } from '../lib/ids.js';
import { addUsageCounts, DELIVERY_QUOTA_RESOURCE } from '../limits/usage.js';

export interface Claimed {
  id: string;
  event_id: string;
  webhook_id: string;
  account_id: string;
  attempts: number;
  /** Claims since the last recorded attempt, this one included (a lease that lapsed counts). */
  tries: number;
  last_error: string | null;
  schedule_start: number;
  next_trigger: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  kind: string;
  data: string;
  test: boolean;
  event_created_at: Date;
  /** When the delivery was queued, and its account's plan and limits (see countsAtFirstAttempt). */
  queued_at: Date;
  /** When it was due before this claim moved it to the lease's end (given back: due then again). */
  due_at: Date;
  plan: string;
  limits: Record<string, number | null>;
}

/**
 * Claims up to `n` due deliveries of enabled URLs (`FOR UPDATE SKIP LOCKED`, then a lease), so
 * several processes never take the same attempt; a crashed process's lease simply expires. The
 * claim also moves `next_attempt_at` to the lease's end (as the runners' claims move `run_at`):
 * a held delivery is due again only if its holder dies, so the due index no longer holds it at
 * its head, and a claim walks only what it can take (docs/performance.md "Reads in proportion to
 * their input"). `due_at` keeps when it was due, for a delivery given back (releaseLeases).
 */
export async function claimDue(db: Db, now: Date, leaseUntil: Date, n: number, skipWebhooks: string[]): Promise<Claimed[]> {
  const skip = skipWebhooks.length ? sql`AND d2.webhook_id NOT IN (${sql.join(skipWebhooks.map((w) => sql`${w}::uuid`))})` : sql``;
  const r = await sql<Claimed>`
    UPDATE webhook_deliveries d SET lease_until = ${leaseUntil}, next_attempt_at = ${leaseUntil}, tries = d.tries + 1
    FROM (
      SELECT d2.id, d2.next_attempt_at AS due_at FROM webhook_deliveries d2 JOIN webhooks w2 ON w2.id = d2.webhook_id
      WHERE d2.status = 'pending' AND d2.next_attempt_at <= ${now}
        AND (d2.lease_until IS NULL OR d2.lease_until <= ${now})
        AND w2.enabled AND w2.deleted_at IS NULL ${skip}
      ORDER BY d2.next_attempt_at
      LIMIT ${n}
      FOR UPDATE OF d2 SKIP LOCKED
    ) due, events e, webhooks w, accounts a
    WHERE d.id = due.id AND e.id = d.event_id AND w.id = d.webhook_id AND a.id = d.account_id
    RETURNING d.id, d.event_id, d.webhook_id, d.account_id, d.attempts, d.tries, d.last_error, d.schedule_start, d.next_trigger, w.url, w.secret,
      w.previous_secret, w.previous_secret_expires_at, e.kind, e.data::text AS data, e.test,
      e.created_at AS event_created_at, d.created_at AS queued_at, due.due_at, a.plan, a.limits`.execute(db);
  return r.rows;
}

/** A held delivery `d` of a URL disabled meanwhile stays parked when it is given back or retried (parkDeliveries). */
const dueIfEnabled = (at: RawBuilder<unknown>) =>
  sql`CASE WHEN EXISTS (SELECT 1 FROM webhooks w WHERE w.id = d.webhook_id AND w.enabled AND w.deleted_at IS NULL) THEN ${at} END`;

/**
 * A claimed delivery that failed for our own reason (not the receiver's: those follow
 * WEBHOOK_RETRY_SCHEDULE): due again at `at`, or, when `at` is null (its last try), parked as `dead`
 * with a dead letter. Only the holder of the lease moves it. Returns whether it died.
 */
export async function failDelivery(
  db: Db,
  c: Pick<Claimed, 'id' | 'account_id' | 'tries'>,
  lease: Date,
  error: string,
  at: Date | null,
  now: Date,
): Promise<boolean> {
  if (at) {
    await sql`
      UPDATE webhook_deliveries d SET lease_until = NULL, next_attempt_at = ${dueIfEnabled(sql`${at}::timestamptz`)},
        failed_at = COALESCE(failed_at, ${now}), last_error = ${error}, updated_at = ${now}
      WHERE id = ${c.id} AND lease_until = ${lease}`.execute(db);
    return false;
  }
  return db.transaction().execute(async (trx) => {
    const parked = await sql<{ failed_at: Date }>`
      UPDATE webhook_deliveries SET status = 'dead', lease_until = NULL, next_attempt_at = NULL,
        failed_at = COALESCE(failed_at, ${now}), last_error = ${error}, updated_at = ${now}
      WHERE id = ${c.id} AND lease_until = ${lease}
      RETURNING failed_at`.execute(trx);
    const first = parked.rows[0];
    if (!first) return false;
    await recordDeath(
      trx,
      {
        queue: 'webhook_deliveries',
        itemId: c.id,
        accountId: c.account_id,
        firstFailedAt: first.failed_at,
        attempts: c.tries,
        lastError: error,
      },
      now,
    );
    return true;
  });
}

/** Operator's retry of a dead delivery (admin/dead-letters.ts): pending and due now, as a manual attempt. */
export async function reviveDelivery(trx: Executor, itemId: string, now: Date): Promise<boolean> {
  const r = await sql`
    UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ${now}, lease_until = NULL, tries = 0,
      failed_at = NULL, last_error = NULL, next_trigger = 'manual', schedule_start = attempts, updated_at = ${now}
    WHERE id = ${itemId}::uuid AND status = 'dead'`.execute(trx);
  return Number(r.numAffectedRows ?? 0) > 0;
}

/** Operator's discard of a dead delivery: `failed`, kept in the delivery log, never sent. */
export async function discardDelivery(trx: Executor, itemId: string, now: Date): Promise<void> {
  await sql`UPDATE webhook_deliveries SET status = 'failed', updated_at = ${now} WHERE id = ${itemId}::uuid AND status = 'dead'`.execute(
    trx,
  );
}

/** Gives claimed deliveries back untouched (no attempt made: saturated endpoint or shutdown): due when they were. */
export async function releaseLeases(db: Db, ids: { id: string; lease: Date; due: Date }[]): Promise<void> {
  if (ids.length === 0) return;
  await sql`
    UPDATE webhook_deliveries d SET lease_until = NULL, next_attempt_at = ${dueIfEnabled(sql`v.due`)}, tries = greatest(d.tries - 1, 0)
    FROM (VALUES ${sql.join(ids.map((r) => sql`(${r.id}::uuid, ${r.lease}::timestamptz, ${r.due}::timestamptz)`))}) AS v(id, lease, due)
    WHERE d.id = v.id AND d.lease_until = v.lease`.execute(db);
}

/**
 * The pending deliveries of URLs no longer enabled (disabled, deleted) wait with no due time: no
 * claim walks them. Re-enabling a URL makes them due again (service.ts updateWebhook).
 */

export function parkDeliveries(webhookIds: RawBuilder<unknown>, now: Date) {
  return sql`UPDATE webhook_deliveries SET next_attempt_at = NULL, updated_at = ${now}
    WHERE webhook_id IN (${webhookIds}) AND status = 'pending' AND next_attempt_at IS NOT NULL`;
}

export interface AttemptResult {
  deliveryId: string;
  webhookId: string;
  lease: Date;
  attemptNumber: number;
  trigger: string;
  at: Date;
  statusCode: number | null;
  durationMs: number;
  excerpt: string | null;
  error: string | null;
  /** succeeded | pending (retry at nextAttemptAt) | failed */
  status: 'succeeded' | 'pending' | 'failed';
  nextAttemptAt: Date | null;
  /** 410 Gone: the receiver asked us to stop. */
  gone: boolean;
  accountId: string;
  /** The delivery's claims since its last recorded attempt (Claimed.tries): our own failures to record this one count too. */
  tries: number;
  /**
   * The quota month (its start) this delivery counts in when its first attempt is recorded;
   * null when it was counted as it was queued (accounts with a delivery limit).
   */
  countIn: Date | null;
}

/** A URL whose attempts have all failed for this long is disabled (decisions.md). */
export const FAILING_DISABLE_MS = 5 * 24 * 60 * 60 * 1000;

/**
 * Records a batch of finished attempts. The usual batch (every URL answered 2xx) is one
 * statement, atomic on its own: under load each round trip costs more than the rows it writes,
 * and a transaction would take five (BEGIN, three statements, COMMIT).
 */
export async function recordAttempts(db: Db, results: AttemptResult[], now: Date): Promise<void> {
  if (results.length === 0) return;
  const ok = new Set(results.filter((r) => r.status === 'succeeded').map((r) => r.webhookId));
  const failing = [...new Set(results.filter((r) => r.status !== 'succeeded').map((r) => r.webhookId))].filter((w) => !ok.has(w));
  const gone = [...new Set(results.filter((r) => r.gone).map((r) => r.webhookId))];
  if (failing.length === 0 && gone.length === 0) {
    await sql`WITH ${attemptsAndDeliveries(results, now)}, healthy AS (${clearFailing(ok)}) SELECT 1`.execute(db);
    return;
  }
  await db.transaction().execute(async (trx) => {
    await sql`WITH ${attemptsAndDeliveries(results, now)} SELECT 1`.execute(trx);
    if (ok.size > 0) await clearFailing(ok).execute(trx);
    if (failing.length > 0) {
      await sql`UPDATE webhooks SET failing_since = ${now} WHERE id IN (${uuids(failing)}) AND failing_since IS NULL`.execute(trx);
      await sql`
        WITH off AS (
          UPDATE webhooks SET enabled = false, disabled_reason = 'failing', updated_at = ${now}
          WHERE id IN (${uuids(failing)}) AND enabled AND failing_since <= ${new Date(now.getTime() - FAILING_DISABLE_MS)}
          RETURNING id)
        ${parkDeliveries(sql`SELECT id FROM off`, now)}`.execute(trx);
    }
    if (gone.length > 0)
      await sql`
        WITH off AS (
          UPDATE webhooks SET enabled = false, disabled_reason = 'gone', failing_since = COALESCE(failing_since, ${now}),
            updated_at = ${now}
          WHERE id IN (${uuids(gone)})
          RETURNING id)
        ${parkDeliveries(sql`SELECT id FROM off`, now)}`.execute(trx);
  });
}

const uuids = (ids: Iterable<string>) => sql.join([...ids].map((w) => sql`${w}::uuid`));

/** A URL that answered 2xx is no longer failing (a no-op for the usual healthy URL). */
function clearFailing(ok: Set<string>) {
  return ok.size > 0
    ? sql`UPDATE webhooks SET failing_since = NULL WHERE id IN (${uuids(ok)}) AND failing_since IS NOT NULL`
    : sql`SELECT 1`;
}

/** CTEs: the attempt log rows, and the deliveries moved on (only by the holder of the lease). */
function attemptsAndDeliveries(results: AttemptResult[], now: Date) {
  const values = sql.join(
    results.map(
      (r) =>
        sql`(${newId()}::uuid, ${r.deliveryId}::uuid, ${r.attemptNumber}::int, ${r.trigger}, ${r.statusCode}::int, ${r.durationMs}::int,
          ${r.excerpt}::text, ${r.error}::text, ${r.at}::timestamptz, ${r.lease}::timestamptz, ${r.status}, ${r.nextAttemptAt}::timestamptz,
          ${r.accountId}::uuid, ${r.countIn}::timestamptz, ${r.webhookId}::uuid)`,
    ),
  );
  return sql`v (id, delivery_id, attempt_number, trigger, code, duration_ms, excerpt, error, at, lease, status, next_at, account_id, count_in,
      webhook_id) AS (
      VALUES ${values}),
    logged AS (
      INSERT INTO webhook_attempts (id, delivery_id, attempt_number, trigger, status_code, duration_ms, response_excerpt, error, created_at)
      SELECT id, delivery_id, attempt_number, trigger, code, duration_ms, excerpt, error, at FROM v),
    moved AS (
      -- A lease taken over after expiry wins: this holder no longer moves the delivery.
      -- A retry of a URL disabled meanwhile waits parked (parkDeliveries) rather than due.
      UPDATE webhook_deliveries d SET status = v.status, attempts = d.attempts + 1, last_attempt_at = v.at,
        last_status_code = v.code, next_attempt_at = CASE WHEN w.enabled AND w.deleted_at IS NULL THEN v.next_at END,
        lease_until = NULL, next_trigger = 'scheduled', tries = 0, failed_at = NULL, last_error = NULL, updated_at = ${now}
      FROM v JOIN webhooks w ON w.id = v.webhook_id WHERE d.id = v.delivery_id AND d.lease_until = v.lease
      RETURNING d.id, d.attempts),
    counted AS (
      -- A delivery moves from 0 to 1 attempt once, whoever records it: counted exactly once.
      ${addUsageCounts(sql`
        SELECT v.account_id, v.count_in, ${DELIVERY_QUOTA_RESOURCE}::text, count(*)::int FROM moved JOIN v ON v.delivery_id = moved.id
        WHERE moved.attempts = 1 AND v.count_in IS NOT NULL
        GROUP BY v.account_id, v.count_in ORDER BY v.account_id`)})`;
}
