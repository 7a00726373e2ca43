// GET /me without database reads in steady state. The account row and limits come from the key
// cache; this keeps the rest of the view per account for a short time: the month's recorded
// counters, the contact count and the phone numbers.
//
// The view is kept as the JSON text GET /me answers, built once per entry: a request costs a map
// lookup, not a rebuild and a serialisation of the whole view.
//
// Freshness (docs/decisions.md "GET /me"):
// - `apiCalls` is what the database recorded plus this process's unwritten calls when the text
//   was built (the call being answered included), so it lags by at most the TTL; an entry read
//   before one of the usage meter's batch writes is stale, so `apiCalls` never goes back;
// - the services that change what the view shows (an account's plan or limits, its numbers, a
//   new contact) drop the account's entry through `changed`: the next GET /me reads anew;
// - anything else (other processes, webhook deliveries) shows within the TTL, well inside the
//   half minute api.md §8 allows the usage counter to lag.
// The operator's account view always reads the database.

import { type PhoneNumberView, readPhoneNumbers } from '../channel/phone-numbers.js';
import type { Db } from '../db/index.js';
import type { AccountRow } from '../db/types.js';
import type { Clock } from '../lib/clock.js';
import { quotaPeriodAt } from '../limits/period.js';
import type { UsageMeter, UsageSnapshot } from '../limits/types.js';
import { withPending } from '../limits/usage.js';
import { type AccountView, accountViewOf } from './service.js';

export const ACCOUNT_VIEW_TTL_MS = 2_000;
const MAX_ENTRIES = 10_000;

interface Stored {
  usage: UsageSnapshot;
  numbers: PhoneNumberView[];
  /** The view's JSON text, built from these rows for one account row. */
  built?: { account: AccountRow; json: string };
}

interface Entry {
  /** Start (ms) of the quota month the entry was read for. */
  period: number;
  /** Clock time (ms) the entry stops being used. */
  until: number;
  /** The usage meter's batch writes when the read started. */
  writes: number;
  data: Promise<Stored>;
  /** Set once `data` resolves: the view is built without a promise. */
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

  /** The account's view (decisions.md "GET /me") as JSON text, synchronous while its entry is fresh. */
  json(account: AccountRow): string | Promise<string> {
    const entry = this.entry(account.id);
    if (entry.ready) return this.build(account, entry.ready);
    return entry.data.then((stored) => this.build(account, stored));
  }

  /** Something the view shows changed through this process: the next view reads anew. */
  changed(accountId: string): void {
    this.entries.delete(accountId);
  }

  private build(account: AccountRow, stored: Stored): string {
    if (stored.built?.account !== account) {
      const view: AccountView = accountViewOf(account, withPending(this.usage, account.id, stored.usage), stored.numbers);
      stored.built = { account, json: JSON.stringify(view) };
    }
    return stored.built.json;
  }

  private entry(accountId: string): Entry {
    const now = this.clock.ms();
    const period = quotaPeriodAt(now);
    const cur = this.entries.get(accountId);
    if (cur && cur.period === period.start.getTime() && cur.writes === this.usage.writes && now < cur.until) return cur;
    // One read per account at a time, whatever the number of concurrent requests.
    const data = Promise.all([this.usage.recorded(accountId, period), readPhoneNumbers(this.db, accountId)]).then(
      ([usage, numbers]): Stored => {
        entry.ready = { usage, numbers };
        return entry.ready;
      },
    );
    const entry: Entry = { period: period.start.getTime(), until: now + this.ttlMs, writes: this.usage.writes, data };
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(accountId, entry);
    // A failed read is not kept: the next request tries again.
    data.catch(() => {
      if (this.entries.get(accountId) === entry) this.entries.delete(accountId);
    });
    return entry;
  }
}
