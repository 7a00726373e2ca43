// Monthly usage counters (api.md §8). API calls are counted in memory and written in batches
// (one upsert per account and resource per flush) so a request costs no database write;
// api.md allows the counter to lag up to half a minute.
import { sql } from 'kysely';
import type { Db, Executor } from '../db/index.js';
import type { Clock } from '../lib/clock.js';
import { type Period, quotaPeriod } from './period.js';
import type { UsageMeter, UsageSnapshot } from './types.js';

export const FLUSH_EVERY_MS = 5_000;

export class DbUsageMeter implements UsageMeter {
  private pending = new Map<string, { period: number; n: number }>();
  /** The batch being written: still counted by snapshots until its write commits. */
  private writing = new Map<string, { period: number; n: number }>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    flushEveryMs = FLUSH_EVERY_MS,
  ) {
    if (flushEveryMs > 0) {
      this.timer = setInterval(() => void this.flush().catch(() => {}), flushEveryMs);
      this.timer.unref();
    }
  }

  countApiCall(accountId: string): void {
    const period = quotaPeriod(this.clock.now()).start.getTime();
    const key = `${accountId}:${period}`;
    const cur = this.pending.get(key);
    if (cur) cur.n += 1;
    else this.pending.set(key, { period, n: 1 });
  }

  /** Calls counted in memory but not yet written, for this account and period. */
  pendingApiCalls(accountId: string, period: Period): number {
    const key = `${accountId}:${period.start.getTime()}`;
    return (this.pending.get(key)?.n ?? 0) + (this.writing.get(key)?.n ?? 0);
  }

  async recordedApiCalls(accountId: string, period: Period): Promise<number> {
    const counts = await readCounters(this.db, accountId, period);
    return (counts.apiCalls ?? 0) + this.pendingApiCalls(accountId, period);
  }

  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writePending());
    return this.flushing;
  }

  private async writePending(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.writing = batch;
    const rows = [...batch.entries()].map(([key, v]) => ({
      account_id: key.slice(0, key.indexOf(':')),
      period_start: new Date(v.period),
      resource: 'apiCalls',
      count: v.n,
    }));
    try {
      await this.db
        .insertInto('usage_counters')
        .values(rows)
        .onConflict((oc) =>
          oc.columns(['account_id', 'period_start', 'resource']).doUpdateSet({ count: sql`usage_counters.count + excluded.count` }),
        )
        .execute();
    } catch (e) {
      // Put the counts back so a database hiccup loses nothing; the next flush retries.
      for (const [k, v] of batch) {
        const cur = this.pending.get(k);
        if (cur) cur.n += v.n;
        else this.pending.set(k, v);
      }
      throw e;
    } finally {
      this.writing = new Map();
    }
  }

  async snapshot(accountId: string): Promise<UsageSnapshot> {
    const period = quotaPeriod(this.clock.now());
    // Both reads at once (two pooled connections on PostgreSQL): GET /me waits one round trip.
    const [counts, contacts] = await Promise.all([
      readCounters(this.db, accountId, period),
      this.db
        .selectFrom('contacts')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('account_id', '=', accountId)
        .executeTakeFirstOrThrow(),
    ]);
    return {
      period,
      apiCalls: (counts.apiCalls ?? 0) + this.pendingApiCalls(accountId, period),
      webhookDeliveries: counts.webhookDeliveries ?? 0,
      contacts: contacts.n,
      automationSteps: counts.automationSteps ?? 0,
      automationHttpRequests: counts.automationHttpRequests ?? 0,
    };
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush().catch(() => {});
  }
}

export async function readCounters(db: Executor, accountId: string, period: Period): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('usage_counters')
    .select(['resource', 'count'])
    .where('account_id', '=', accountId)
    .where('period_start', '=', period.start)
    .execute();
  return Object.fromEntries(rows.map((r) => [r.resource, Number(r.count)]));
}

/** Adds `n` to a monthly counter inside the caller's transaction (webhook deliveries when queued). */
export async function addUsage(trx: Executor, accountId: string, period: Period, resource: string, n: number): Promise<void> {
  if (n <= 0) return;
  await trx
    .insertInto('usage_counters')
    .values({ account_id: accountId, period_start: period.start, resource, count: n })
    .onConflict((oc) =>
      oc.columns(['account_id', 'period_start', 'resource']).doUpdateSet({ count: sql`usage_counters.count + excluded.count` }),
    )
    .execute();
}
