// The services' transactions. Locks are taken in one order (docs/architecture.md "Lock order"),
// so a deadlock should not happen; one that still does (a path outside the order, a lock
// PostgreSQL takes on its own) or a serialization failure is ours, never the caller's: the whole
// transaction runs again a few times before the error reaches the request.
import type { Db, Trx } from './index.js';
import { isStalePlan } from './prepared.js';

/** deadlock_detected, serialization_failure: the transaction was rolled back and may simply run again. */
const RETRYABLE = new Set(['40P01', '40001']);

/** Runs after the first try (so at most 4 tries in all). */
export const TRANSACTION_RETRIES = 3;

export function isRetryableConflict(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  // A statement prepared before a newer release's migration changed its columns: the connection
  // is dropped and the transaction runs again on another (prepared.ts).
  return (typeof code === 'string' && RETRYABLE.has(code)) || isStalePlan(err);
}

export interface RetryOptions {
  retries?: number;
  /** Waits between tries (tests may pass one that does not wait). */
  sleep?: (ms: number) => Promise<void>;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs `fn` in a transaction, again (after a short jittered wait) when PostgreSQL rolled it back
 * for a deadlock or a serialization failure. `fn` must only touch the database: it may run more
 * than once, so never call a provider or wake anyone inside it.
 */
export function transaction<T>(db: Db, fn: (trx: Trx) => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  return retrying(() => db.transaction().execute(fn), opts);
}

/**
 * The same retries for `fn` that runs one statement on its own (it commits alone, as a send's
 * store does without an origin): PostgreSQL rolled it back whole, so it may simply run again.
 */
export async function retrying<T>(fn: () => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const retries = opts.retries ?? TRANSACTION_RETRIES;
  const sleep = opts.sleep ?? realSleep;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= retries || !isRetryableConflict(err)) throw err;
      // Jitter keeps the transactions that collided from colliding again in step.
      await sleep(Math.round((5 + Math.random() * 20) * 2 ** attempt));
    }
  }
}
