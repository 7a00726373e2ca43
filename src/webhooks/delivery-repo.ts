// SQL of the dispatcher: claim due deliveries under a lease, record attempts in batches, release.
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import { newId } from '../lib/ids.js';

export interface Claimed {
  id: string;
  event_id: string;
  webhook_id: string;
  attempts: number;
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
}

/**
 * Claims up to `n` due deliveries of enabled URLs (`FOR UPDATE SKIP LOCKED`, then a lease), so
 * several processes never take the same attempt; a crashed process's lease simply expires.
 */
export async function claimDue(db: Db, now: Date, leaseUntil: Date, n: number, skipWebhooks: string[]): Promise<Claimed[]> {
  const skip = skipWebhooks.length ? sql`AND d2.webhook_id NOT IN (${sql.join(skipWebhooks.map((w) => sql`${w}::uuid`))})` : sql``;
  const r = await sql<Claimed>`
    UPDATE webhook_deliveries d SET lease_until = ${leaseUntil}
    FROM (
      SELECT d2.id FROM webhook_deliveries d2 JOIN webhooks w2 ON w2.id = d2.webhook_id
      WHERE d2.status = 'pending' AND d2.next_attempt_at <= ${now}
        AND (d2.lease_until IS NULL OR d2.lease_until <= ${now})
        AND w2.enabled AND w2.deleted_at IS NULL ${skip}
      ORDER BY d2.next_attempt_at
      LIMIT ${n}
      FOR UPDATE OF d2 SKIP LOCKED
    ) due, events e, webhooks w
    WHERE d.id = due.id AND e.id = d.event_id AND w.id = d.webhook_id
    RETURNING d.id, d.event_id, d.webhook_id, d.attempts, d.schedule_start, d.next_trigger, w.url, w.secret,
      w.previous_secret, w.previous_secret_expires_at, e.kind, e.data::text AS data, e.test,
      e.created_at AS event_created_at`.execute(db);
  return r.rows;
}

/** Gives claimed deliveries back untouched (no attempt made: saturated endpoint or shutdown). */
export async function releaseLeases(db: Db, ids: { id: string; lease: Date }[]): Promise<void> {
  if (ids.length === 0) return;
  await sql`
    UPDATE webhook_deliveries d SET lease_until = NULL
    FROM (VALUES ${sql.join(ids.map((r) => sql`(${r.id}::uuid, ${r.lease}::timestamptz)`))}) AS v(id, lease)
    WHERE d.id = v.id AND d.lease_until = v.lease`.execute(db);
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
}

/** A URL whose attempts have all failed for this long is disabled (decisions.md). */
export const FAILING_DISABLE_MS = 5 * 24 * 60 * 60 * 1000;

/** Records a batch of finished attempts in one transaction. */
export async function recordAttempts(db: Db, results: AttemptResult[], now: Date): Promise<void> {
  if (results.length === 0) return;
  const ok = new Set(results.filter((r) => r.status === 'succeeded').map((r) => r.webhookId));
  const failing = [...new Set(results.filter((r) => r.status !== 'succeeded').map((r) => r.webhookId))].filter((w) => !ok.has(w));
  const gone = [...new Set(results.filter((r) => r.gone).map((r) => r.webhookId))];
  const uuids = (ids: Iterable<string>) => sql.join([...ids].map((w) => sql`${w}::uuid`));
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('webhook_attempts')
      .values(
        results.map((r) => ({
          id: newId(),
          delivery_id: r.deliveryId,
          attempt_number: r.attemptNumber,
          trigger: r.trigger as 'scheduled' | 'manual',
          status_code: r.statusCode,
          duration_ms: r.durationMs,
          response_excerpt: r.excerpt,
          error: r.error,
          created_at: r.at,
        })),
      )
      .execute();
    // Only the holder of the lease moves the delivery (a lease taken over after expiry wins).
    await sql`
      UPDATE webhook_deliveries d SET status = v.status, attempts = d.attempts + 1, last_attempt_at = v.at,
        last_status_code = v.code, next_attempt_at = v.next_at, lease_until = NULL, next_trigger = 'scheduled',
        updated_at = ${now}
      FROM (VALUES ${sql.join(
        results.map(
          (r) =>
            sql`(${r.deliveryId}::uuid, ${r.lease}::timestamptz, ${r.status}, ${r.statusCode}::int, ${r.nextAttemptAt}::timestamptz, ${r.at}::timestamptz)`,
        ),
      )}) AS v(id, lease, status, code, next_at, at)
      WHERE d.id = v.id AND d.lease_until = v.lease`.execute(trx);
    if (ok.size > 0)
      await sql`UPDATE webhooks SET failing_since = NULL WHERE id IN (${uuids(ok)}) AND failing_since IS NOT NULL`.execute(trx);
    if (failing.length > 0) {
      await sql`UPDATE webhooks SET failing_since = ${now} WHERE id IN (${uuids(failing)}) AND failing_since IS NULL`.execute(trx);
      await sql`
        UPDATE webhooks SET enabled = false, disabled_reason = 'failing', updated_at = ${now}
        WHERE id IN (${uuids(failing)}) AND enabled AND failing_since <= ${new Date(now.getTime() - FAILING_DISABLE_MS)}`.execute(trx);
    }
    if (gone.length > 0)
      await sql`
        UPDATE webhooks SET enabled = false, disabled_reason = 'gone', failing_since = COALESCE(failing_since, ${now}),
          updated_at = ${now}
        WHERE id IN (${uuids(gone)})`.execute(trx);
  });
}
