// Meta's webhook batches, acknowledged at once (docs/cloud.md "Inbound: acknowledged at once").
// The receiver verifies the signature, stores the raw batch in one insert (`inbound_queue`, owned
// here) and answers 200; every process runs an InboundWorker (a ClaimLoop, jobs/claim-loop.ts)
// that claims queued rows with FOR UPDATE SKIP LOCKED and a lease, runs each through its channel's
// processor (the same inbound, status and template code as before) and deletes it. A row whose
// processing failed for a reason that is not our own rule (the database went away) is tried again
// by QUEUE_RETRY_SCHEDULE; one that was being processed by a process that died is claimed again once
// its lease lapses; past the last try it is parked as a dead letter (jobs/dead-letters.ts), its
// ordering keys removed so its customers' later batches go on. Processing is idempotent (wamid dedupe, forward-only statuses), so a batch run
// twice changes nothing the second time.
//
// Order: each row carries its ordering keys (one per customer of a number, one per WABA with
// template updates), also kept one per row in `inbound_queue_keys` (key, queue_id) for the check.
// A row is claimed only when no earlier row (lower id: receipt order) that is still queued shares
// a key, so a customer's later batch waits for the earlier one, whichever
// worker or process holds it, while other customers' batches run side by side.
import { sql } from 'kysely';
import type { Executor, Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import { ClaimLoop } from '../jobs/claim-loop.js';
import { describeFailure, LAPSED, logDeath, maxTries, recordDeath, retryAt } from '../jobs/dead-letters.js';
import { newId } from '../lib/ids.js';
import type { Services } from '../services.js';

export interface QueuedBatch {
  id: string;
  channel: string;
  body: string;
  numbers: string[];
  wabas: string[];
  received_at: Date;
  /** Claims of this batch, this one included (each failed try, or a lapsed lease, left it queued). */
  attempts: number;
  claim: string;
  failed_at: Date | null;
  last_error: string | null;
}

/**
 * A channel's processing of queued batches claimed together (their customers differ), one outcome
 * per batch in order; `failed` > 0 tries that batch again later.
 */
export type BatchProcessor = (s: Services, rows: QueuedBatch[]) => Promise<{ failed: number; error?: string | undefined }[]>;

export const POLL_MS = 250;
/** Groups of batches processed at once in this process. */
const MAX_IN_FLIGHT = 4;
/**
 * Batches claimed together and processed as one set-wise pass (conversations/inbound.ts): the
 * statements of a pass cost about the same for 10 messages as for 80, so a backlog is worked
 * through in larger passes rather than more of them.
 */
const GROUP = 8;
/** A claim lapses after this long: a process that died mid-batch gives it back. */
export const LEASE_MS = 60_000;

/**
 * Stores one verified batch: one INSERT, committed before the receiver answers 200. Wakes this
 * process's worker (others find it at their next poll).
 */
export async function enqueueInbound(
  s: Services,
  b: { channel: string; body: string; numbers: string[]; wabas: string[]; keys: string[] },
): Promise<void> {
  const now = s.clock.now();
  // One statement: the batch and its ordering keys commit together.
  await sql`
    WITH q AS (
      INSERT INTO inbound_queue (channel, body, numbers, wabas, keys, received_at, run_at)
      VALUES (${b.channel}, ${b.body}, ${b.numbers}::text[], ${b.wabas}::text[], ${b.keys}::text[], ${now}, ${now})
      RETURNING id, keys)
    INSERT INTO inbound_queue_keys (key, queue_id) SELECT k, q.id FROM q, unnest(q.keys) k`.execute(s.db);
  s.inbound.wake();
}

export class InboundWorker {
  private readonly loop: ClaimLoop<QueuedBatch[]>;

  constructor(
    private readonly s: Services,
    private readonly processors: Record<string, BatchProcessor>,
  ) {
    this.loop = new ClaimLoop({
      name: 'inbound worker',
      pollMs: POLL_MS,
      maxInFlight: MAX_IN_FLIGHT,
      claim: async (limit) => {
        // Due batches up to `limit` groups, spread over the groups (in receipt order within each).
        const rows = await this.claim(limit * GROUP);
        const groups = Math.min(limit, Math.ceil(rows.length / GROUP));
        return Array.from({ length: groups }, (_, g) => rows.filter((_, i) => i % groups === g));
      },
      idOf: (rows) => rows[0]!.id,
      run: (rows) => this.run(rows),
      log: s.log,
    });
  }

  start(): void {
    this.loop.start();
  }

  wake(): void {
    this.loop.wake();
  }

  /** Stops claiming; batches in flight finish. */
  stop(graceMs = 20_000): Promise<void> {
    return this.loop.stop(graceMs);
  }

  /** Processes every batch due now until none is (POST /admin/v1/jobs/inbound/run); returns how many ran. */
  runOnce(): Promise<number> {
    return this.loop.runOnce();
  }

  private async claim(limit: number): Promise<QueuedBatch[]> {
    if (limit <= 0) return [];
    const now = this.s.clock.now();
    return claimBatches(this.s.db, now, new Date(now.getTime() + LEASE_MS), limit);
  }

  private async run(rows: QueuedBatch[]): Promise<number> {
    // Claimed more often than the schedule allows without an outcome: the process died (or hung)
    // holding it each time. It is not tried once more.
    const live: QueuedBatch[] = [];
    for (const row of rows) {
      // The claim that finds it so is not a try: the tries made are one fewer.
      if (row.attempts > maxTries(this.s))
        await this.outcome({ ...row, attempts: row.attempts - 1 }, { failed: 1, error: row.last_error ?? LAPSED }, true);
      else live.push(row);
    }
    const byChannel = new Map<string, QueuedBatch[]>();
    for (const row of live) byChannel.set(row.channel, [...(byChannel.get(row.channel) ?? []), row]);
    for (const [channel, list] of byChannel) {
      let results: { failed: number; error?: string | undefined }[];
      try {
        const processor = this.processors[channel];
        if (!processor) throw new Error(`no processor for channel ${channel}`);
        results = await processor(this.s, list);
      } catch (err) {
        this.s.log.error({ err, queued: list.map((r) => r.id) }, 'inbound batch failed');
        results = list.map(() => ({ failed: 1, error: describeFailure(err) }));
      }
      await this.done(list.filter((_, i) => results[i]!.failed === 0));
      for (const [i, row] of list.entries()) if (results[i]!.failed > 0) await this.outcome(row, results[i]!, false);
    }
    return rows.length;
  }

  /** Deletes processed batches (one statement); a lapsed claim's row is left to its new holder. */
  private async done(rows: QueuedBatch[]): Promise<void> {
    if (rows.length === 0) return;
    try {
      await sql`
        DELETE FROM inbound_queue q USING unnest(${rows.map((r) => r.id)}::bigint[], ${rows.map((r) => r.claim)}::uuid[]) AS d(id, claim)
        WHERE q.id = d.id AND q.claim = d.claim`.execute(this.s.db);
    } catch (err) {
      // The leases lapse and the batches are claimed again (processing them twice changes nothing).
      this.s.log.warn(
        { err: { message: (err as Error).message }, queued: rows.map((r) => r.id) },
        'inbound batch: could not record the outcome',
      );
    }
  }

  /** Deletes a processed batch; puts a failed one back by the schedule, or parks it as dead after its last try. */
  private async outcome(row: QueuedBatch, r: { failed: number; error?: string | undefined }, lapsed: boolean): Promise<void> {
    const s = this.s;
    try {
      if (r.failed === 0) {
        await sql`DELETE FROM inbound_queue WHERE id = ${row.id} AND claim = ${row.claim}`.execute(s.db);
        return;
      }
      const error = r.error ?? 'failed';
      const at = lapsed ? null : retryAt(s, row.attempts);
      if (at) {
        await sql`
          UPDATE inbound_queue SET run_at = ${at}, claim = NULL, failed_at = COALESCE(failed_at, ${s.clock.now()}), last_error = ${error}
          WHERE id = ${row.id} AND claim = ${row.claim}`.execute(s.db);
        s.log.warn({ queued: row.id, attempts: row.attempts, failed: r.failed, retryAt: at }, 'inbound batch tried again later');
        return;
      }
      const now = s.clock.now();
      const died = await transaction(s.db, async (trx) => {
        const parked = await sql<{ failed_at: Date }>`
          UPDATE inbound_queue SET dead_at = ${now}, claim = NULL, failed_at = COALESCE(failed_at, ${now}), last_error = ${error}
          WHERE id = ${row.id} AND claim = ${row.claim}
          RETURNING failed_at`.execute(trx);
        const first = parked.rows[0];
        if (!first) return false;
        // Its customers' later batches no longer wait for it.
        await sql`DELETE FROM inbound_queue_keys WHERE queue_id = ${row.id}`.execute(trx);
        await recordDeath(
          trx,
          {
            queue: 'inbound',
            itemId: row.id,
            accountId: sql`(SELECT account_id FROM phone_numbers WHERE cloud_phone_number_id = any(${row.numbers}::text[]) ORDER BY created_at LIMIT 1)`,
            firstFailedAt: first.failed_at,
            attempts: row.attempts,
            lastError: error,
          },
          now,
        );
        return true;
      });
      if (died) logDeath(s, { queue: 'inbound', itemId: row.id, attempts: row.attempts, lastError: error });
    } catch (err) {
      // The lease lapses and the batch is claimed again (processing it twice changes nothing).
      s.log.warn({ err: { message: (err as Error).message }, queued: row.id }, 'inbound batch: could not record the outcome');
    }
  }
}

/** Operator's retry of a dead batch (admin/dead-letters.ts): queued again, due now, its keys back. */
export async function reviveInbound(trx: Trx, itemId: string, now: Date): Promise<boolean> {
  const r = await sql<{ id: string }>`
    WITH b AS (
      UPDATE inbound_queue SET dead_at = NULL, attempts = 0, failed_at = NULL, last_error = NULL, claim = NULL, run_at = ${now}
      WHERE id = ${itemId}::bigint AND dead_at IS NOT NULL
      RETURNING id, keys),
    k AS (INSERT INTO inbound_queue_keys (key, queue_id) SELECT k, b.id FROM b, unnest(b.keys) k ON CONFLICT DO NOTHING)
    SELECT id FROM b`.execute(trx);
  return r.rows.length > 0;
}

/** Operator's discard of a dead batch: gone (its keys went when it died). */
export async function discardInbound(trx: Trx, itemId: string): Promise<void> {
  await sql`DELETE FROM inbound_queue WHERE id = ${itemId}::bigint AND dead_at IS NOT NULL`.execute(trx);
}

/**
 * Claims up to `limit` due batches, oldest first, skipping any that shares a key with an earlier
 * queued batch (claimed, backing off or due; a dead one has no keys left): their `run_at` becomes
 * the lease's end. The live batches' own index (`inbound_queue_live`) keeps the dead ones, which
 * stay at the head of the queue until the operator acts, out of every claim's way.
 */
export async function claimBatches(db: Executor, now: Date, lease: Date, limit: number): Promise<QueuedBatch[]> {
  const claim = newId();
  const r = await sql<QueuedBatch>`
    UPDATE inbound_queue q SET claim = ${claim}, run_at = ${lease}, attempts = q.attempts + 1
    WHERE q.id IN (
      SELECT b.id FROM inbound_queue b
      WHERE b.run_at <= ${now} AND b.dead_at IS NULL
        AND NOT EXISTS (
          SELECT 1 FROM unnest(b.keys) k
          WHERE EXISTS (SELECT 1 FROM inbound_queue_keys e WHERE e.key = k AND e.queue_id < b.id))
      ORDER BY b.id LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING q.id, q.channel, q.body, q.numbers, q.wabas, q.received_at, q.attempts, q.claim, q.failed_at, q.last_error`.execute(db);
  return r.rows.map((row) => ({ ...row, id: String(row.id) }));
}
