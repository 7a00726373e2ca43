// Lease bookkeeping of the Redis limiter (docs/limits.md): a busy account does not pay a round
// trip per request. When Redis admits a request it may grant this process a few more
// request-and-call tokens of the same window (at most 1/LEASE_SHARE of what is left under each
// cap, so near a cap every request is decided in Redis again and the cap stays exact). The lease
// size doubles while leases run out within their second and halves when they do not; unused
// tokens go back to Redis when a lease ends. Lease times are real time: they pace this process,
// they are not the windows the caps count in.

import { windowStart } from './caps.js';
import { quotaPeriodAt } from './period.js';

/** A lease's lifetime (real time): unused tokens go back to Redis after it. */
export const LEASE_MS = 1_000;
/** A lease takes at most this fraction (1/n) of what is left under a cap. */
export const LEASE_SHARE = 16;
const MAX_LEASE = 4_096;
const MAX_TRACKED = 100_000;

/** Tokens this process holds for one account's window (requests and API calls alike). */
export interface Lease {
  win: number;
  period: number;
  reqKey: string;
  callsKey: string;
  /** Tokens not used yet. */
  left: number;
  /** The shared request counter right after the grant (it includes the whole grant). */
  counted: number;
  /** API calls counter right after the grant. */
  calls: number;
  /** Real time the lease ends. */
  until: number;
  /** The caps it was granted under: a changed override (PATCH limits) ends it. */
  rpm: number | null;
  quota: number | null;
}

export class Leases {
  private leases = new Map<string, Lease>();
  /** Grants being asked for, per account. */
  private renewals = new Map<string, Promise<unknown>>();
  /** Tokens to ask for on an account's next grant (adapts to its traffic in this process). */
  private size = new Map<string, number>();

  /** `giveBack` returns a lease's unused tokens (left > 0) to the shared counters. */
  constructor(private readonly giveBack: (lease: Lease) => void) {}

  /**
   * Takes one token of the account's lease when it is current (same window, period and caps, not
   * expired): the request and API-call counts it stands for; null when Redis must decide.
   */
  take(accountId: string, now: number, rpm: number | null, quota: number | null): { requests: number; calls: number } | null {
    const lease = this.leases.get(accountId);
    if (!lease || lease.left <= 0 || lease.win !== windowStart(now) || lease.period !== quotaPeriodAt(now).start.getTime()) return null;
    if (Date.now() >= lease.until || lease.rpm !== rpm || lease.quota !== quota) return null;
    lease.left -= 1;
    return { requests: lease.counted - lease.left, calls: lease.calls - lease.left };
  }

  /** The grant in flight for the account, if any (requests meanwhile wait for it and take from it). */
  renewal(accountId: string): Promise<unknown> | undefined {
    return this.renewals.get(accountId);
  }

  /** Tracks a grant in flight until it settles. */
  renewing(accountId: string, asked: Promise<unknown>): void {
    const done = () => this.renewals.delete(accountId);
    this.renewals.set(accountId, asked.then(done, done));
  }

  grant(accountId: string, lease: Omit<Lease, 'until'>): void {
    this.leases.set(accountId, { ...lease, until: Date.now() + LEASE_MS });
  }

  /**
   * Tokens to ask for: double the last grant when it was used up within its second (the
   * account is busy in this process), halve it when its time ran out with tokens left.
   */
  nextSize(accountId: string): number {
    const last = this.leases.get(accountId);
    let size = this.size.get(accountId) ?? 1;
    if (last && last.left === 0 && Date.now() < last.until) size = Math.min(MAX_LEASE, size * 2);
    else if (last && last.left > 0) size = Math.max(1, Math.floor(size / 2));
    if (size === 1) this.size.delete(accountId);
    else {
      if (this.size.size >= MAX_TRACKED) this.size.clear();
      this.size.set(accountId, size);
    }
    return size;
  }

  /** Ends an account's lease, giving its unused tokens back. */
  end(accountId: string): void {
    const lease = this.leases.get(accountId);
    if (!lease) return;
    this.leases.delete(accountId);
    if (lease.left > 0) this.giveBack(lease);
  }

  /** Ends leases whose time is up (all of them at shutdown); idle accounts start small again. */
  endExpired(all: boolean): void {
    const t = Date.now();
    for (const [accountId, lease] of this.leases) {
      if (!all && lease.until > t) continue;
      if (lease.left > 0) {
        const size = Math.floor((this.size.get(accountId) ?? 1) / 2);
        if (size > 1) this.size.set(accountId, size);
        else this.size.delete(accountId);
      }
      this.end(accountId);
    }
  }

  /** Redis failed: the leases' tokens are lost with it (nothing to give back to). */
  clear(): void {
    this.leases.clear();
  }
}
