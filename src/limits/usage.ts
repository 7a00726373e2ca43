// Monthly usage counters (api.md §8). API calls are counted in memory and written in batches
// (one upsert per account and resource per flush) so a request costs no database write;
// api.md allows the counter to lag up to half a minute.
import { type RawBuilder, sql } from 'kysely';
import type { Db, Executor } from '../db/index.js';
import type { Clock } from '../lib/clock.js';
import { type Period, quotaPeriod, quotaPeriodAt } from './period.js';
import type { UsageMeter, UsageSnapshot } from './types.js';

export const FLUSH_EVERY_MS = 5_000;

/** The usage_counters resource of webhook deliveries (the monthly delivery quota). */
export const DELIVERY_QUOTA_RESOURCE = 'webhookDeliveries';

/** Resources counted in memory and written in batches. */
export type BatchedResource = 'apiCalls' | 'automationSteps' | 'automationHttpRequests';

/** Counts not yet written: account id → quota period start (ms) → resource → count. */
type Counts = Map<string, Map<number, Map<BatchedResource, number>>>;

const countOf = (counts: Counts, accountId: string, period: number, resource: BatchedResource = 'apiCalls'): number =>
  counts.get(accountId)?.get(period)?.get(resource) ?? 0;

function add(counts: Counts, accountId: string, period: number, n: number, resource: BatchedResource = 'apiCalls'): void {
  let periods = counts.get(accountId);
  if (!periods) {
    periods = new Map();
    counts.set(accountId, periods);
  }
  let resources = periods.get(period);
  if (!resources) {
    resources = new Map();
    periods.set(period, resources);
  }
  resources.set(resource, (resources.get(resource) ?? 0) + n);
}

export class DbUsageMeter implements UsageMeter {
  private pending: Counts = new Map();
  /** The batch being written: still counted by snapshots until its write commits. */
  private writing: Counts = new Map();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  /** Batches written so far: a read of the database counters older than the last one is stale. */
  writes = 0;
  /** Batches begun so far (written, or failed and put back). */
  started = 0;
  /** A batch is being written now. */
  busy = false;
  /** What this process's batches wrote, in all (for the current and the last quota month). */
  private written: Counts = new Map();

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
    add(this.pending, accountId, quotaPeriodAt(this.clock.ms()).start.getTime(), 1);
  }

  countLater(accountId: string, resource: BatchedResource, n = 1): void {
    add(this.pending, accountId, quotaPeriodAt(this.clock.ms()).start.getTime(), n, resource);
  }

  pendingOf(accountId: string, period: Period, resource: BatchedResource): number {
    const p = period.start.getTime();
    return countOf(this.pending, accountId, p, resource) + countOf(this.writing, accountId, p, resource);
  }

  writtenOf(accountId: string, period: Period, resource: BatchedResource): number {
    return countOf(this.written, accountId, period.start.getTime(), resource);
  }

  async recordedApiCalls(accountId: string, period: Period): Promise<number> {
    const counts = await readCounters(this.db, accountId, period);
    return (counts.apiCalls ?? 0) + this.pendingOf(accountId, period, 'apiCalls');
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
    this.started += 1;
    this.busy = true;
    const rows = [...batch].flatMap(([accountId, periods]) =>
      [...periods].flatMap(([period, resources]) =>
        [...resources].map(([resource, count]) => ({ account_id: accountId, period_start: new Date(period), resource, count })),
      ),
    );
    try {
      await this.db
        .insertInto('usage_counters')
        .values(rows)
        .onConflict((oc) =>
          oc.columns(['account_id', 'period_start', 'resource']).doUpdateSet({ count: sql`usage_counters.count + excluded.count` }),
        )
        .execute();
      this.wrote(batch);
      this.writes += 1;
    } catch (e) {
      // Put the counts back so a database hiccup loses nothing; the next flush retries.
      for (const [accountId, periods] of batch)
        for (const [period, resources] of periods) for (const [resource, n] of resources) add(this.pending, accountId, period, n, resource);
      throw e;
    } finally {
      this.writing = new Map();
      this.busy = false;
    }
  }

  /** Adds a committed batch to `written`, dropping months before the last one. */
  private wrote(batch: Counts): void {
    // Any month that started more than 32 days before this one is at least two months old.
    const last = quotaPeriodAt(this.clock.ms()).start.getTime() - 32 * 86_400_000;
    for (const [accountId, periods] of batch)
      for (const [period, resources] of periods) for (const [resource, n] of resources) add(this.written, accountId, period, n, resource);
    for (const [accountId, periods] of this.written) {
      for (const period of periods.keys()) if (period < last) periods.delete(period);
      if (periods.size === 0) this.written.delete(accountId);
    }
  }

  async snapshot(accountId: string): Promise<UsageSnapshot> {
    const period = quotaPeriod(this.clock.now());
    return withPending(this, accountId, await this.recorded(accountId, period));
  }

  async recorded(accountId: string, period: Period): Promise<UsageSnapshot> {
    // Both reads at once (two pooled connections on PostgreSQL): one round trip of waiting.
    const [counts, now] = await Promise.all([
      readCounters(this.db, accountId, period),
      // What the account holds now (not counted per month): contacts and connected AI apps.
      this.db
        .selectNoFrom([
          sql<number>`(SELECT count(*)::int FROM contacts WHERE account_id = ${accountId} AND erased_at IS NULL)`.as('contacts'),
          sql<number>`(SELECT count(*)::int FROM ai_apps WHERE account_id = ${accountId} AND revoked_at IS NULL)`.as('aiApps'),
        ])
        .executeTakeFirstOrThrow(),
    ]);
    return {
      period,
      apiCalls: counts.apiCalls ?? 0,
      webhookDeliveries: counts.webhookDeliveries ?? 0,
      contacts: now.contacts,
      automationSteps: counts.automationSteps ?? 0,
      automationHttpRequests: counts.automationHttpRequests ?? 0,
      aiApps: now.aiApps,
    };
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush().catch(() => {});
  }
}

/** Recorded usage plus this process's counts not written yet. */
export const withPending = (usage: UsageMeter, accountId: string, recorded: UsageSnapshot): UsageSnapshot => ({
  ...recorded,
  apiCalls: recorded.apiCalls + usage.pendingOf(accountId, recorded.period, 'apiCalls'),
  automationSteps: recorded.automationSteps + usage.pendingOf(accountId, recorded.period, 'automationSteps'),
  automationHttpRequests: recorded.automationHttpRequests + usage.pendingOf(accountId, recorded.period, 'automationHttpRequests'),
});

export async function readCounters(db: Executor, accountId: string, period: Period): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('usage_counters')
    .select(['resource', 'count'])
    .where('account_id', '=', accountId)
    .where('period_start', '=', period.start)
    .execute();
  return Object.fromEntries(rows.map((r) => [r.resource, Number(r.count)]));
}

/**
 * Reads the month's delivery count of the account and keeps its counter row locked until the
 * transaction ends, so concurrent writers of the account queue within the quota.
 */
export async function lockDeliveryCount(trx: Executor, accountId: string, period: Period): Promise<number> {
  const cur = await sql<{ count: number | string }>`
    INSERT INTO usage_counters (account_id, period_start, resource, count)
    VALUES (${accountId}, ${period.start}, ${DELIVERY_QUOTA_RESOURCE}, 0)
    ON CONFLICT (account_id, period_start, resource) DO UPDATE SET count = usage_counters.count
    RETURNING count`.execute(trx);
  return Number(cur.rows[0]?.count ?? 0);
}

/**
 * The statement (or CTE body) that adds counts to usage_counters: `rows` is a SELECT of
 * (account_id, period_start, resource, count), so callers compose it into their own one round trip.
 */
export const addUsageCounts = (rows: RawBuilder<unknown>) => sql`
  INSERT INTO usage_counters (account_id, period_start, resource, count)
  ${rows}
  ON CONFLICT (account_id, period_start, resource) DO UPDATE SET count = usage_counters.count + excluded.count`;

/** The usage_counters resources of automations (api.md §8, GET /me `usage`). */
export type AutomationResource = 'automationSteps' | 'automationHttpRequests';

/**
 * Adds `n` to the account's automation counter of the period and returns the new count. The
 * counter row stays locked until the transaction ends, so two executions of one account cannot
 * both take the last step of the quota; it is taken after the execution row and before any
 * event (docs/architecture.md "Lock order").
 */
export async function addAutomationUsage(
  trx: Executor,
  accountId: string,
  period: Period,
  resource: AutomationResource,
  n = 1,
): Promise<number> {
  const r = await sql<{ count: number | string }>`
    ${addUsageCounts(sql`SELECT ${accountId}::uuid, ${period.start}::timestamptz, ${resource}, ${n}::bigint`)}
    RETURNING count`.execute(trx);
  return Number(r.rows[0]?.count ?? 0);
}
