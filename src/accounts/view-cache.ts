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
import { type Period, quotaPeriodAt } from '../limits/period.js';
import type { UsageMeter, UsageSnapshot } from '../limits/types.js';
import { accountViewOf, type PhoneNumberView, readPhoneNumbers } from './service.js';

export const ACCOUNT_VIEW_TTL_MS = 2_000;
const MAX_ENTRIES = 10_000;

interface Stored {
  usage: UsageSnapshot;
  numbers: PhoneNumberView[];
  /** The view's JSON around the `apiCalls` value, for the account row it was built from. */
  json?: { account: AccountRow; head: string; tail: string; extraBytes: number };
}

/** A view that can be rendered now (`readyView`, then `render`). */
export type ReadyView = Stored;

export interface ViewText {
  text: string;
  /** UTF-8 bytes of `text` (the Content-Length). */
  bytes: number;
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
   * The view as JSON text, the same as JSON.stringify(view): synchronous while the entry is fresh
   * (the text around `apiCalls` is kept, only the number changes between requests). Text rather
   * than bytes: node:http sends a text body in one write with the response head.
   */
  json(account: AccountRow): string | Promise<string> {
    const period = quotaPeriodAt(this.clock.ms());
    const entry = this.entry(account.id, period);
    if (entry.ready) return this.render(account, entry.ready).text;
    return entry.data.then((stored) => this.render(account, stored).text);
  }

  /**
   * The account's view when it can be answered now, without a read, else undefined (json()
   * reads). The memory lane takes it before admitting a call and renders it after counting it.
   */
  readyView(accountId: string): ReadyView | undefined {
    const cur = this.entries.get(accountId);
    return cur?.ready !== undefined && this.fresh(cur, quotaPeriodAt(this.clock.ms()).start.getTime()) ? cur.ready : undefined;
  }

  /** A view's text with this process's calls counted so far, and its size in bytes. */
  render(account: AccountRow, stored: ReadyView): ViewText {
    let json = stored.json;
    if (json?.account !== account) {
      const { usage, phoneNumbers, ...base } = accountViewOf(account, stored.usage, stored.numbers);
      const { period, apiCalls: _, ...rest } = usage;
      const head = `${JSON.stringify(base).slice(0, -1)},"usage":{"period":${JSON.stringify(period)},"apiCalls":`;
      const tail = `,${JSON.stringify(rest).slice(1)},"phoneNumbers":${JSON.stringify(phoneNumbers)}}`;
      // The number is ASCII digits: the text's bytes are its length plus what the kept parts add.
      const extraBytes = Buffer.byteLength(head) - head.length + Buffer.byteLength(tail) - tail.length;
      json = { account, head, tail, extraBytes };
      stored.json = json;
    }
    // The DB part of apiCalls is cached; this process's unwritten calls are always current.
    const text = json.head + (stored.usage.apiCalls + this.usage.pendingApiCalls(account.id, stored.usage.period)) + json.tail;
    return { text, bytes: text.length + json.extraBytes };
  }

  private fresh(entry: Entry, period: number): boolean {
    return entry.period === period && entry.writes === this.usage.writes && Date.now() - entry.loadedAt < this.ttlMs;
  }

  /** Something of the account changed through this process: the next view reads anew. */
  changed(accountId: string): void {
    this.entries.delete(accountId);
  }

  private entry(accountId: string, period: Period): Entry {
    const p = period.start.getTime();
    const cur = this.entries.get(accountId);
    if (cur && this.fresh(cur, p)) return cur;
    const now = Date.now();
    const writes = this.usage.writes;
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
