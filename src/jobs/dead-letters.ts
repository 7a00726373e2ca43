// Dead letters (docs/operating.md "Dead letters"): what every durable queue shares. An item is
// tried a bounded number of times for our own failures (unexpected errors, a process that died
// holding it), on one schedule, QUEUE_RETRY_SCHEDULE: the first try, then one more after each
// delay. Each queue counts the claims that made no progress (the claim statement adds one, so a
// crash mid-item counts too) and, past the last one, parks the item (its queue decides how: see
// migrations/0019_dead_letters.sql) and writes one `dead_letters` row, logged once at error level.
// The operator lists, retries or discards them (admin/dead-letters.ts).
import { sql } from 'kysely';
import type { Executor } from '../db/index.js';
import { newId } from '../lib/ids.js';
import type { Services } from '../services.js';

export const QUEUES = ['inbound', 'webhook_deliveries', 'executions', 'agent_turns', 'classification'] as const;
export type QueueName = (typeof QUEUES)[number];

/** Tries in all: the first one and one after each delay of the schedule. */
export const maxTries = (s: Services): number => s.config.QUEUE_RETRY_SCHEDULE.length + 1;

/**
 * After the `tries`-th try failed: when to try again, or null when it was the last (the item dies).
 * `tries` counts from 1; a try that made progress before failing counts as the first.
 */
export function retryAt(s: Services, tries: number): Date | null {
  const delayS = s.config.QUEUE_RETRY_SCHEDULE[Math.max(tries, 1) - 1];
  return delayS === undefined ? null : new Date(s.clock.ms() + Math.round(delayS * 1000));
}

/** The last error of an item whose claims lapsed (the process died, or hung, holding it). */
export const LAPSED = 'interrupted: the process stopped (or hung) while it held the item';

const MAX_ERROR_LENGTH = 300;

/**
 * The error an item failed with, as kept and listed: its SQLSTATE code and message, without the
 * values a database message may quote (a phone, a customer's text): quoted literals and long digit
 * runs are elided. Database errors carry the data elsewhere (`detail`, `where`, the parameters): never
 * read here.
 */
export function describeFailure(err: unknown): string {
  const e = err as { message?: unknown; code?: unknown } | null;
  const message = typeof e?.message === 'string' && e.message !== '' ? e.message : String(err);
  const clean = message
    .replace(/"[^"]*"/g, '"…"')
    .replace(/'[^']*'/g, "'…'")
    .replace(/\d{6,}/g, '…')
    .replace(/\s+/g, ' ')
    .trim();
  const code = typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? `${e.code}: ` : '';
  return `${code}${clean}`.slice(0, MAX_ERROR_LENGTH);
}

export interface Death {
  queue: QueueName;
  itemId: string;
  /** SQL giving the account (or null), evaluated in the statement that records the death. */
  accountId: string | null | ReturnType<typeof sql>;
  firstFailedAt: Date;
  attempts: number;
  lastError: string;
}

/**
 * Records a parked item, in the transaction that parks it. An item retried by the operator that
 * dies again updates its row (one row per item).
 */
export async function recordDeath(trx: Executor, d: Death, now: Date): Promise<void> {
  const account = typeof d.accountId === 'string' || d.accountId === null ? sql`${d.accountId}::uuid` : d.accountId;
  await sql`
    INSERT INTO dead_letters (id, queue, item_id, account_id, first_failed_at, attempts, last_error, died_at)
    VALUES (${newId()}::uuid, ${d.queue}, ${d.itemId}, ${account}, ${d.firstFailedAt}::timestamptz, ${d.attempts}::int,
      ${d.lastError}, ${now}::timestamptz)
    ON CONFLICT (queue, item_id) DO UPDATE SET attempts = EXCLUDED.attempts, last_error = EXCLUDED.last_error,
      died_at = EXCLUDED.died_at, first_failed_at = EXCLUDED.first_failed_at, account_id = EXCLUDED.account_id`.execute(trx);
}

/**
 * A parked item its own queue put back outside the dead-letters API (a webhook delivery redelivered
 * from the delivery log): its dead letter goes with it, in the same transaction.
 */
export async function forgetDeath(trx: Executor, queue: QueueName, itemId: string): Promise<void> {
  await sql`DELETE FROM dead_letters WHERE queue = ${queue} AND item_id = ${itemId}`.execute(trx);
}

/** The one error line of a death (after its commit). */
export function logDeath(s: Services, d: Pick<Death, 'queue' | 'itemId' | 'attempts' | 'lastError'>): void {
  s.log.error(
    { queue: d.queue, item: d.itemId, attempts: d.attempts, error: d.lastError },
    'dead letter: an item failed on every try and was parked (GET /admin/v1/dead-letters)',
  );
}
