// GET /me without database reads in its requests. The account row and limits come from the key
// cache; this keeps the rest of the view per account: the month's recorded counters, the contact
// count and the phone numbers.
//
// The view is kept as the JSON text GET /me answers, built once per entry (and again after one of
// this process's usage batch writes): a request costs a map lookup, not a rebuild and a
// serialisation of the whole view.
//
// Freshness (docs/decisions.md "GET /me"):
// - an entry is used for the TTL after its read began; in its last quarter a request starts the
//   next read in the background, which replaces the entry when it is done, so while an account is
//   asked about steadily no request waits for a read (whose cost grows with the account: it
//   counts the contacts, ~10 ms at 100,000). Past the TTL a request waits for it;
// - `apiCalls` is what the database recorded plus what this process wrote since (its own usage
//   batches, added without a read) plus its unwritten calls when the text was built (the call
//   being answered included), so it lags by at most the TTL and never goes back. A read that one
//   of this process's batch writes overlapped cannot tell whether it saw that batch: its entry is
//   stale at the next batch write, and a refresh like it is thrown away;
// - the services that change what the view shows (an account's plan or limits, its numbers, a
//   new contact) drop the account's entry through `changed`: the next GET /me reads anew;
// - anything else (other processes, webhook deliveries, a running CSV import) shows within the
//   TTL, well inside the half minute api.md §8 allows the usage counter to lag.
// The operator's account view always reads the database.

import { type PhoneNumberView, readPhoneNumbers } from '../channel/phone-numbers.js';
import type { Db } from '../db/index.js';
import type { AccountRow } from '../db/types.js';
import type { Clock } from '../lib/clock.js';
import { type Period, quotaPeriodAt } from '../limits/period.js';
import type { UsageMeter, UsageSnapshot } from '../limits/types.js';
import { withPending } from '../limits/usage.js';
import { type AccountView, accountViewOf } from './service.js';

export const ACCOUNT_VIEW_TTL_MS = 2_000;
const MAX_ENTRIES = 10_000;

const BATCHED = ['apiCalls', 'automationSteps', 'automationHttpRequests'] as const;
type Written = Record<(typeof BATCHED)[number], number>;

interface Stored {
  usage: UsageSnapshot;
  numbers: PhoneNumberView[];
  /** What this process had written when the read ended; null when a batch write overlapped it. */
  written: Written | null;
  /** The usage meter's batch writes when the read began. */
  writes: number;
  /** The view's JSON text, built from these rows for one account row after a number of batch writes. */
  built?: { account: AccountRow; writes: number; json: string };
}

interface Entry {
  /** Start (ms) of the quota month the entry was read for. */
  period: number;
  /** Clock time (ms) the entry stops being used. */
  until: number;
  data: Promise<Stored>;
  /** Set once `data` resolves: the view is built without a promise. */
  ready?: Stored;
  /** The read under way that will replace this entry. */
  next?: Entry;
}

export class AccountViewCache {
  private entries = new Map<string, Entry>();

  constructor(
    private readonly db: Db,
    private readonly usage: UsageMeter,
    private readonly clock: Clock,
    private readonly ttlMs = ACCOUNT_VIEW_TTL_MS,
  ) {}

  /** The account's view (decisions.md "GET /me") as JSON text, synchronous while its entry is usable. */
  json(account: AccountRow): string | Promise<string> {
    const now = this.clock.ms();
    const period = quotaPeriodAt(now);
    let cur = this.entries.get(account.id);
    if (cur && cur.period !== period.start.getTime()) cur = undefined;
    if (cur?.ready && now < cur.until && (cur.ready.written || cur.ready.writes === this.usage.writes)) {
      if (now >= cur.until - this.ttlMs / 4) this.refresh(account.id, cur, period, now);
      return this.build(account, cur.ready);
    }
    // No usable entry: the read under way (its own, or the refresh of an expired one), or a new one.
    let entry = cur && !cur.ready && now < cur.until ? cur : cur?.next;
    if (!entry || now >= entry.until) entry = this.read(account.id, period, now);
    if (entry !== cur) this.keep(account.id, entry);
    return entry.data.then((stored) => this.build(account, stored));
  }

  /** Something the view shows changed through this process: the next view reads anew. */
  changed(accountId: string): void {
    this.entries.delete(accountId);
  }

  private build(account: AccountRow, stored: Stored): string {
    const writes = this.usage.writes;
    if (stored.built?.account !== account || stored.built.writes !== writes) {
      const usage = withPending(this.usage, account.id, stored.usage);
      const { written } = stored;
      if (written) for (const r of BATCHED) usage[r] += this.usage.writtenOf(account.id, usage.period, r) - written[r];
      const view: AccountView = accountViewOf(account, usage, stored.numbers);
      stored.built = { account, writes, json: JSON.stringify(view) };
    }
    return stored.built.json;
  }

  /** The next read, in the background: it replaces `cur` when done, unless `cur` was dropped meanwhile. */
  private refresh(accountId: string, cur: Entry, period: Period, now: number): void {
    if (cur.next) return;
    const next = this.read(accountId, period, now);
    cur.next = next;
    const forget = () => {
      if (cur.next === next) cur.next = undefined;
    };
    next.data.then((stored) => {
      if (!stored.written) forget();
      else if (this.entries.get(accountId) === cur) this.keep(accountId, next);
    }, forget);
  }

  private read(accountId: string, period: Period, now: number): Entry {
    const { writes, started, busy } = this.usage;
    const data = Promise.all([this.usage.recorded(accountId, period), readPhoneNumbers(this.db, accountId)]).then(
      ([usage, numbers]): Stored => {
        // Exact only if no batch write was under way while the database was read.
        const exact = !busy && this.usage.started === started;
        const written = exact ? (Object.fromEntries(BATCHED.map((r) => [r, this.usage.writtenOf(accountId, period, r)])) as Written) : null;
        entry.ready = { usage, numbers, written, writes };
        return entry.ready;
      },
    );
    const entry: Entry = { period: period.start.getTime(), until: now + this.ttlMs, data };
    return entry;
  }

  private keep(accountId: string, entry: Entry): void {
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(accountId, entry);
    // A failed read is not kept: the next request tries again.
    entry.data.catch(() => {
      if (this.entries.get(accountId) === entry) this.entries.delete(accountId);
    });
  }
}
