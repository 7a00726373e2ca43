// In-process counters (no REDIS_URL, and the fallback while Redis is unreachable). Same rules
// as the Redis limiter: fixed one-minute windows of the injected clock per account, the IP
// block for invalid keys, and the monthly API-call counter seeded from the database.

import type { ApiError } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { decide, INVALID_KEYS_PER_MINUTE, IP_BLOCK_MS, messageCapError, outcome, WINDOW_MS, windowStart } from './caps.js';
import { type Period, quotaPeriodAt } from './period.js';
import type { AccountLimitsCtx, AdmitOptions, CapOutcome, Limiter, RecordedApiCalls } from './types.js';

interface Window {
  start: number;
  n: number;
}
interface IpState {
  /** First invalid key of the current minute (window from the first hit). */
  start: number;
  n: number;
  blockedUntil: number;
}
interface CallsState {
  period: number;
  n: number;
  /** Real time of the last read from the database (other processes' batches show up there). */
  loadedAt: number;
}

/** Re-read the recorded API calls this often (only matters for several processes without Redis). */
const CALLS_REFRESH_MS = 30_000;
const RETRY_LOAD_MS = 5_000;
const MAX_IPS = 100_000;

export class MemoryLimiter implements Limiter {
  private requests = new Map<string, Window>();
  private messages = new Map<string, Window>();
  /** MCP tool calls per AI app. */
  private appCalls = new Map<string, Window>();
  /** Starts per automation. */
  private starts = new Map<string, Window>();
  private calls = new Map<string, CallsState>();
  private loading = new Map<string, Promise<CallsState>>();
  private ips = new Map<string, IpState>();
  /** Console login failures per email or IP (fixed windows). */
  private logins = new Map<string, Window>();

  constructor(
    private readonly clock: Clock,
    private readonly recordedApiCalls: RecordedApiCalls,
  ) {}

  ipBlocked(ip: string): boolean {
    const s = this.ips.get(ip);
    return s !== undefined && s.blockedUntil > this.clock.ms();
  }

  async invalidKey(ip: string): Promise<boolean> {
    const now = this.clock.ms();
    let s = this.ips.get(ip);
    if (s && s.blockedUntil > now) return true;
    if (!s) {
      if (this.ips.size >= MAX_IPS) this.sweepIps(now);
      s = { start: now, n: 0, blockedUntil: 0 };
      this.ips.set(ip, s);
    }
    if (now - s.start >= WINDOW_MS || now < s.start) {
      s.start = now;
      s.n = 0;
    }
    s.n += 1;
    if (s.n > INVALID_KEYS_PER_MINUTE) {
      s.blockedUntil = now + IP_BLOCK_MS;
      s.n = 0;
      s.start = now;
      return true;
    }
    return false;
  }

  admit(ctx: AccountLimitsCtx, opts: AdmitOptions): CapOutcome | Promise<CapOutcome> {
    const now = this.clock.ms();
    const period = quotaPeriodAt(now);
    const calls = this.calls.get(ctx.accountId);
    if (calls && calls.period === period.start.getTime()) {
      // Other processes' batches show up in the database: re-read now and then, off the request.
      if (Date.now() - calls.loadedAt >= CALLS_REFRESH_MS) void this.loadCalls(ctx.accountId, period);
      // The counter is in memory (the hot path): decide without yielding.
      return this.decideNow(ctx, opts, calls, now);
    }
    return this.loadCalls(ctx.accountId, period).then((st) => this.decideNow(ctx, opts, st, this.clock.ms()));
  }

  async admitMcpCalls(ctx: AccountLimitsCtx, appId: string, n: number): Promise<{ ok: boolean; room: number }> {
    const cap = ctx.limits.mcpCallsPerMinute;
    const w = current(this.appCalls, appId, windowStart(this.clock.ms()));
    if (cap !== null && w.n + n > cap) return { ok: false, room: Math.max(0, cap - w.n) };
    w.n += n;
    return { ok: true, room: n };
  }

  async admitMessage(ctx: AccountLimitsCtx): Promise<ApiError | null> {
    const cap = ctx.limits.messagesPerMinute;
    const w = current(this.messages, ctx.accountId, windowStart(this.clock.ms()));
    if (cap !== null && w.n + 1 > cap) return messageCapError(cap);
    w.n += 1;
    return null;
  }

  async admitAutomationStart(automationId: string, perMinute: number): Promise<boolean> {
    const w = current(this.starts, automationId, windowStart(this.clock.ms()));
    if (w.n + 1 > perMinute) return false;
    w.n += 1;
    return true;
  }

  async windowCounts(scopes: string[], windowMs: number, add: number): Promise<number[]> {
    const now = this.clock.ms();
    const start = now - (now % windowMs);
    if (this.logins.size >= MAX_IPS) for (const [k, w] of this.logins) if (w.start !== start) this.logins.delete(k);
    return scopes.map((scope) => {
      const w = current(this.logins, scope, start);
      w.n += add;
      return w.n;
    });
  }

  /** One process: its own caches were told already. */
  announceForget(_accountId: string): void {}
  onForget(_listener: (accountId: string) => void): void {}

  /** Synchronous: no other request of this process interleaves between the check and the count. */
  private decideNow(ctx: AccountLimitsCtx, opts: AdmitOptions, calls: CallsState, now: number): CapOutcome {
    if ((this.ips.get(opts.ip)?.blockedUntil ?? 0) > now) return outcome(ctx, now, 'blocked', 0, 0);
    const win = windowStart(now);
    const req = current(this.requests, ctx.accountId, win);
    const msg = opts.message ? current(this.messages, ctx.accountId, win) : null;
    const verdict = decide(ctx, opts.message, { requests: req.n, messages: msg?.n ?? 0, apiCalls: calls.n });
    if (verdict === 'ok') {
      req.n += 1;
      if (msg) msg.n += 1;
      calls.n += 1;
    }
    return outcome(ctx, now, verdict, req.n, calls.n);
  }

  /** Loads the counter from the database (one read per account at a time). */
  private loadCalls(accountId: string, period: Period): Promise<CallsState> {
    const p = period.start.getTime();
    const cur = this.calls.get(accountId);
    const key = `${accountId}:${p}`;
    let load = this.loading.get(key);
    if (!load) {
      load = this.recordedApiCalls(accountId, period)
        .then(
          (n) => {
            // Counts of a month only grow: a read racing this process's own counting never lowers it.
            const st: CallsState = { period: p, n: cur && cur.period === p ? Math.max(n, cur.n) : n, loadedAt: Date.now() };
            this.calls.set(accountId, st);
            return st;
          },
          // Database unreachable: keep counting from what we have (fail open) and retry soon.
          () => {
            const st: CallsState =
              cur && cur.period === p ? cur : { period: p, n: 0, loadedAt: Date.now() - CALLS_REFRESH_MS + RETRY_LOAD_MS };
            st.loadedAt = Date.now() - CALLS_REFRESH_MS + RETRY_LOAD_MS;
            this.calls.set(accountId, st);
            return st;
          },
        )
        .finally(() => this.loading.delete(key));
      this.loading.set(key, load);
    }
    return load;
  }

  private sweepIps(now: number): void {
    for (const [ip, s] of this.ips) if (s.blockedUntil <= now && now - s.start >= WINDOW_MS) this.ips.delete(ip);
    if (this.ips.size >= MAX_IPS) this.ips.clear();
  }

  async redisHealth() {
    return 'not_configured' as const;
  }

  async close(): Promise<void> {}
}

/** The account's counter for window `win` (a new window starts at zero). */
function current(map: Map<string, Window>, accountId: string, win: number): Window {
  let w = map.get(accountId);
  if (!w) {
    w = { start: win, n: 0 };
    map.set(accountId, w);
  } else if (w.start !== win) {
    w.start = win;
    w.n = 0;
  }
  return w;
}
