// GET /me without database reads in steady state (issue "Measure ourselves": /me at ≥ 0.60 of
// bare node:http). The account row and limits come from the key cache; this caches the rest of
// the view per account: the month's counters, the contact count and the phone numbers.
//
// Freshness (docs/performance.md):
// - this process's own API calls are added at read time (the usage meter's unwritten batch), and
//   an entry read before one of the meter's batch writes is stale, so `apiCalls` never goes back;
// - a write through this process (any non-GET /api/v1 request of the account, an inbound message,
//   an operator change of its numbers or plan) drops the account's entry: the next /me reads anew;
// - anything else (other processes, webhook deliveries queued by events) shows within the TTL,
//   well inside the half minute api.md §8 allows the usage counter to lag.
// The operator's account view always reads the database.
import type { Db } from '../db/index.js';
import type { AccountRow } from '../db/types.js';
import type { Clock } from '../lib/clock.js';
import { type Period, quotaPeriod } from '../limits/period.js';
import type { UsageMeter, UsageSnapshot } from '../limits/types.js';
import { accountViewOf, type PhoneNumberView, readPhoneNumbers } from './service.js';

export const ACCOUNT_VIEW_TTL_MS = 2_000;
const MAX_ENTRIES = 10_000;

interface Stored {
  usage: UsageSnapshot;
  numbers: PhoneNumberView[];
  /** The view's JSON around the `apiCalls` value, for the account row it was built from. */
  json?: { account: AccountRow; head: Buffer; tail: Buffer };
}

interface Entry {
  period: number;
  /** Real time (ms) the read started. */
  loadedAt: number;
  /** The usage meter's batch writes when the read started. */
  writes: number;
  data: Promise<Stored>;
  /** Set once `data` resolves: answers without a promise. */
  ready?: Stored;
}

export class AccountViewCache {
  private entries = new Map<string, Entry>();

  constructor(
    private readonly db: Db,
    private readonly usage: UsageMeter,
    private readonly clock: Clock,
    private readonly ttlMs = ACCOUNT_VIEW_TTL_MS,
  ) {}

  /**
   * The view as JSON (UTF-8), the same bytes as JSON.stringify(view): synchronous while the entry
   * is fresh (the bytes around `apiCalls` are kept encoded, only the number changes between
   * requests, and nothing is encoded again on the way out).
   */
  json(account: AccountRow): Buffer | Promise<Buffer> {
    const period = quotaPeriod(this.clock.now());
    const entry = this.entry(account.id, period);
    if (entry.ready) return this.jsonOf(account, entry.ready);
    return entry.data.then((stored) => this.jsonOf(account, stored));
  }

  private jsonOf(account: AccountRow, stored: Stored): Buffer {
    let json = stored.json;
    if (json?.account !== account) {
      const { usage, phoneNumbers, ...base } = accountViewOf(account, stored.usage, stored.numbers);
      const { period, apiCalls: _, ...rest } = usage;
      json = {
        account,
        head: Buffer.from(`${JSON.stringify(base).slice(0, -1)},"usage":{"period":${JSON.stringify(period)},"apiCalls":`),
        tail: Buffer.from(`,${JSON.stringify(rest).slice(1)},"phoneNumbers":${JSON.stringify(phoneNumbers)}}`),
      };
      stored.json = json;
    }
    // The DB part of apiCalls is cached; this process's unwritten calls are always current.
    const calls = String(stored.usage.apiCalls + this.usage.pendingApiCalls(account.id, stored.usage.period));
    // Digits are one byte each. Buffers under 4 KB come from Node's shared pool: no allocation.
    const out = Buffer.allocUnsafe(json.head.length + calls.length + json.tail.length);
    json.head.copy(out, 0);
    out.write(calls, json.head.length, 'latin1');
    json.tail.copy(out, json.head.length + calls.length);
    return out;
  }

  /** Something of the account changed through this process: the next view reads anew. */
  changed(accountId: string): void {
    this.entries.delete(accountId);
  }

  private entry(accountId: string, period: Period): Entry {
    const p = period.start.getTime();
    const now = Date.now();
    const writes = this.usage.writes;
    const cur = this.entries.get(accountId);
    if (cur && cur.period === p && cur.writes === writes && now - cur.loadedAt < this.ttlMs) return cur;
    // One read per account at a time, whatever the number of concurrent requests.
    const data = Promise.all([this.usage.recorded(accountId, period), readPhoneNumbers(this.db, accountId)]).then(
      ([usage, numbers]): Stored => {
        entry.ready = { usage, numbers };
        return entry.ready;
      },
    );
    const entry: Entry = { period: p, loadedAt: now, writes, data };
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(accountId, entry);
    // A failed read is not kept: the next request tries again.
    data.catch(() => {
      if (this.entries.get(accountId) === entry) this.entries.delete(accountId);
    });
    return entry;
  }
}
