// Counters in Redis (REDIS_URL), shared by every process behind the load balancer.
//
// Keys (prefix REDIS_KEY_PREFIX):
//   <p>:req:<account>:<windowStartMs>    requests in a one-minute window        (PX 120 s)
//   <p>:msg:<account>:<windowStartMs>    sends in the window (POST /messages, AI apps) (PX 120 s)
//   <p>:mcp:<app>:<windowStartMs>        an AI app's MCP tool calls in the window (PX 120 s)
//   <p>:start:<automation>:<windowStartMs> an automation's starts in the window  (PX 120 s)
//   <p>:calls:<account>:<periodStartMs>  API calls of the quota month           (to period end + 35 d)
//   <p>:bad:<ip>                         invalid keys: hash {s: first hit, n}    (PX 120 s)
//   <p>:block:<ip>                       IP blocked until (ms of the clock)      (PX 120 s)
//   channel <p>:blocks                   "ip until" for every block set, so every process knows it
//   channel <p>:forget                   an account whose keys, app tokens or plan changed: every
//                                        process's token caches forget it (mcp.md "the token stops at once")
// Windows and block times come from the injected clock (passed to the scripts), not from
// Redis's TTLs, so tests can move time; TTLs only clean up. A script touches an account's
// keys and one IP's block key together: standalone Redis (or one shard), not Redis Cluster.
//
// One Lua script (one round trip) decides a request atomically: the IP block, both caps and
// the quota, then counts all three or none. rate-limiter-flexible is not used: its Redis
// windows start at a key's first hit and read the process time, and a send must consume two
// caps atomically.
//
// Leases (leases.ts): a busy account does not pay a round trip per request; near a cap every
// request is decided in Redis again. Sends (POST /messages) always ask Redis. The scripts are in
// redis-scripts.ts.
//
// Failure mode: Redis unreachable → fail open to the per-process memory limiter (each process
// still enforces its own share), one error log per outage, back to Redis when it reconnects.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ApiError } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { INVALID_KEYS_PER_MINUTE, IP_BLOCK_MS, messageCapError, outcome, type Verdict, WINDOW_MS, windowStart } from './caps.js';
import { LEASE_MS, LEASE_SHARE, Leases } from './leases.js';
import { MemoryLimiter } from './memory.js';
import { type Period, quotaPeriodAt } from './period.js';
import { RedisLink } from './redis-link.js';
import { type AdmitReply, defineLimitsCommands, type LimitsCommands } from './redis-scripts.js';
import type { AccountLimitsCtx, AdmitOptions, CapOutcome, Limiter, RecordedApiCalls } from './types.js';

const KEY_TTL_MS = 2 * WINDOW_MS;
const PERIOD_TTL_EXTRA_MS = 35 * 24 * 60 * 60 * 1000;
const VERDICTS: Verdict[] = ['ok', 'requests', 'messages', 'quota', 'ok', 'blocked'];
const MAX_KNOWN_BLOCKS = 10_000;
/** How often (real time) each process reconciles an account's quota counter with the database. */
const RECONCILE_MS = 60_000;
export interface RedisLimiterOptions {
  url: string;
  prefix: string;
  clock: Clock;
  log: Logger;
  recordedApiCalls: RecordedApiCalls;
  /** Per-command timeout (ms): a hung Redis must not hold requests. */
  commandTimeoutMs?: number;
}

export class RedisLimiter implements Limiter {
  private readonly redis: Redis & LimitsCommands;
  /** A second connection for the block channel (a subscribed connection runs no commands). */
  private readonly subscriber: Redis;
  private readonly fallback: MemoryLimiter;
  private readonly prefix: string;
  private readonly clock: Clock;
  private readonly recordedApiCalls: RecordedApiCalls;
  private readonly link: RedisLink;
  /** Blocks this process set or heard of (clock ms): blocked callers are answered without Redis. */
  private knownBlocks = new Map<string, number>();
  /** Last reconciliation with the database per quota counter key (real time). */
  private reconciled = new Map<string, number>();
  private readonly leases: Leases;
  private readonly sweep: NodeJS.Timeout;
  /** Token caches to tell when another process announces a change of an account's credentials. */
  private forgetListeners: ((accountId: string) => void)[] = [];
  /** Waiting for the end of an outage (`whenShared`). */
  private backOnRedis: (() => void)[] = [];

  constructor(opts: RedisLimiterOptions) {
    this.prefix = opts.prefix;
    this.clock = opts.clock;
    this.recordedApiCalls = opts.recordedApiCalls;
    this.fallback = new MemoryLimiter(opts.clock, opts.recordedApiCalls);
    this.link = new RedisLink({
      url: opts.url,
      commandTimeoutMs: opts.commandTimeoutMs,
      log: opts.log,
      now: () => opts.clock.ms(),
      lines: {
        down: 'Redis unreachable: limits fall back to per-process memory counters (fail open) until it is back',
        up: 'Redis reachable again: minute caps, API quota and IP blocks are shared across processes again',
      },
      onFailure: () => this.leases.clear(),
      onBack: () => {
        for (const resolve of this.backOnRedis.splice(0)) resolve();
      },
    });
    const connection = this.link.connection;
    this.redis = defineLimitsCommands(connection);
    this.leases = new Leases((lease) => {
      if (this.redis.status === 'ready') this.redis.chasquiReturn(lease.reqKey, lease.callsKey, lease.left).catch(() => {});
    });
    // Blocks set by any process reach every process at once, so a blocked IP is refused even on
    // requests this process decides from a lease. Errors are the main connection's to report.
    this.subscriber = this.redis.duplicate();
    this.subscriber.on('error', () => {});
    this.subscriber.on('ready', () => void this.subscriber.subscribe(this.blockChannel(), this.forgetChannel()).catch(() => {}));
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.forgetChannel()) {
        for (const listener of this.forgetListeners) listener(message);
        return;
      }
      const [ip, until] = message.split(' ');
      if (ip && Number(until) > 0) this.rememberBlock(ip, Number(until));
    });
    this.sweep = setInterval(() => this.leases.endExpired(false), LEASE_MS);
    this.sweep.unref();
  }

  /** Resolves when the limiter decides in Redis again after an outage (at once when there is none). */
  whenShared(): Promise<void> {
    if (!this.link.down) return Promise.resolve();
    return new Promise((resolve) => this.backOnRedis.push(resolve));
  }

  private key(kind: string, id: string, suffix?: number): string {
    return suffix === undefined ? `${this.prefix}:${kind}:${id}` : `${this.prefix}:${kind}:${id}:${suffix}`;
  }

  announceForget(accountId: string): void {
    if (this.redis.status === 'ready') this.redis.publish(this.forgetChannel(), accountId).catch(() => {});
  }

  onForget(listener: (accountId: string) => void): void {
    this.forgetListeners.push(listener);
  }

  private forgetChannel(): string {
    return `${this.prefix}:forget`;
  }

  private blockChannel(): string {
    return `${this.prefix}:blocks`;
  }

  private rememberBlock(ip: string, until: number): void {
    if (this.knownBlocks.size >= MAX_KNOWN_BLOCKS) this.knownBlocks.clear();
    this.knownBlocks.set(ip, until);
  }

  ipBlocked(ip: string): boolean {
    const until = this.knownBlocks.get(ip);
    if (until !== undefined) {
      if (until > this.clock.ms()) return true;
      this.knownBlocks.delete(ip);
    }
    return this.link.down ? this.fallback.ipBlocked(ip) : false;
  }

  async invalidKey(ip: string): Promise<boolean> {
    if (!(await this.link.usable())) return this.fallback.invalidKey(ip);
    try {
      const now = this.clock.ms();
      const r = await this.redis.chasquiInvalidKey(
        this.key('bad', ip),
        this.key('block', ip),
        now,
        WINDOW_MS,
        INVALID_KEYS_PER_MINUTE,
        IP_BLOCK_MS,
        KEY_TTL_MS,
      );
      this.link.recovered();
      if (r === 1) {
        this.rememberBlock(ip, now + IP_BLOCK_MS);
        this.redis.publish(this.blockChannel(), `${ip} ${now + IP_BLOCK_MS}`).catch(() => {});
      }
      return r !== 0;
    } catch (e) {
      this.link.failed(e);
      return this.fallback.invalidKey(ip);
    }
  }

  admit(ctx: AccountLimitsCtx, opts: AdmitOptions): CapOutcome | Promise<CapOutcome> {
    const now = this.clock.ms();
    const { requestsPerMinute: rpm, messagesPerMinute: mpm, apiCallsPerMonth: quota } = ctx.limits;
    // Nothing to count for an account without caps or quota (its usage is the database's).
    if (rpm === null && quota === null && (!opts.message || mpm === null)) return outcome(ctx, now, 'ok', 0, 0);
    if (opts.message) return this.admitRemote(ctx, opts, now);
    const leased = this.leases.take(ctx.accountId, now, rpm, quota);
    if (leased) return outcome(ctx, now, 'ok', leased.requests, leased.calls);
    // One grant in flight per account: requests arriving meanwhile wait for it and take from it,
    // rather than each asking Redis and replacing the others' leases.
    const renewing = this.leases.renewal(ctx.accountId);
    if (renewing) return renewing.then(() => this.admit(ctx, opts));
    const asked = this.admitRemote(ctx, opts, now);
    this.leases.renewing(ctx.accountId, asked);
    return asked;
  }

  async admitMcpCalls(ctx: AccountLimitsCtx, appId: string, n: number): Promise<{ ok: boolean; room: number }> {
    const cap = ctx.limits.mcpCallsPerMinute;
    // No cap: nothing to count (no usage figure shows tool calls).
    if (cap === null) return { ok: true, room: n };
    const r = await this.take(this.key('mcp', appId, windowStart(this.clock.ms())), cap, n);
    if (r === null) return this.fallback.admitMcpCalls(ctx, appId, n);
    return r.ok ? { ok: true, room: n } : { ok: false, room: Math.max(0, cap - r.count) };
  }

  async admitMessage(ctx: AccountLimitsCtx): Promise<ApiError | null> {
    const cap = ctx.limits.messagesPerMinute;
    if (cap === null) return null;
    const r = await this.take(this.key('msg', ctx.accountId, windowStart(this.clock.ms())), cap, 1);
    if (r === null) return this.fallback.admitMessage(ctx);
    return r.ok ? null : messageCapError(cap);
  }

  async admitAutomationStart(automationId: string, perMinute: number): Promise<boolean> {
    const r = await this.take(this.key('start', automationId, windowStart(this.clock.ms())), perMinute, 1);
    if (r === null) return this.fallback.admitAutomationStart(automationId, perMinute);
    return r.ok;
  }

  async windowCounts(scopes: string[], windowMs: number, add: number): Promise<number[]> {
    const now = this.clock.ms();
    const start = now - (now % windowMs);
    const counts: number[] = [];
    for (const scope of scopes) {
      const r = await this.take(this.key('window', scope, start), -1, add, windowMs);
      if (r === null) return this.fallback.windowCounts(scopes, windowMs, add);
      counts.push(r.count);
    }
    return counts;
  }

  /** Counts `k` on a window counter when they fit under `cap`; null when Redis cannot be asked (use the fallback). */
  private async take(key: string, cap: number, k: number, ttlMs = KEY_TTL_MS): Promise<{ ok: boolean; count: number } | null> {
    if (!(await this.link.usable())) return null;
    try {
      const [ok, count] = await this.redis.chasquiTake(key, cap, ttlMs, k);
      this.link.recovered();
      return { ok: ok === 1, count };
    } catch (e) {
      this.link.failed(e);
      return null;
    }
  }

  private async admitRemote(ctx: AccountLimitsCtx, opts: AdmitOptions, now: number): Promise<CapOutcome> {
    if (!(await this.link.usable())) return this.fallback.admit(ctx, opts);
    const win = windowStart(now);
    const period = quotaPeriodAt(now);
    const keys = [
      this.key('req', ctx.accountId, win),
      this.key('msg', ctx.accountId, win),
      this.key('calls', ctx.accountId, period.start.getTime()),
      this.key('block', opts.ip),
    ] as const;
    const { requestsPerMinute: rpm, messagesPerMinute: mpm, apiCallsPerMonth: quota } = ctx.limits;
    const wanted = opts.message ? 1 : this.leases.nextSize(ctx.accountId);
    // A request that is not a send got here because its lease is used up, over, or granted under
    // other caps: give back what is left first (the same connection keeps the order), so the
    // decision below counts only requests actually served.
    if (!opts.message) this.leases.end(ctx.accountId);
    const args = (skipQuota: boolean) =>
      [rpm ?? -1, mpm ?? -1, opts.message ? 1 : 0, quota ?? -1, KEY_TTL_MS, skipQuota ? 1 : 0, now, wanted, LEASE_SHARE] as (
        | string
        | number
      )[];
    let r: AdmitReply;
    try {
      r = await this.redis.chasquiAdmit(...keys, ...args(false));
      if (r[0] === 4) {
        // First call of this account in the period (or Redis lost its data): start the
        // shared counter from what the database recorded, then decide.
        // The database unreachable: skip the quota for this request (fail open) and seed later.
        const recorded = await this.recordedApiCalls(ctx.accountId, period).catch(() => null);
        if (recorded !== null) {
          const ttl = Math.max(0, period.end.getTime() - now) + PERIOD_TTL_EXTRA_MS;
          await this.redis.set(keys[2], recorded, 'PX', ttl, 'NX');
        }
        r = await this.redis.chasquiAdmit(...keys, ...args(recorded === null));
      }
      this.link.recovered();
    } catch (e) {
      this.link.failed(e);
      return this.fallback.admit(ctx, opts);
    }
    const [code, requests, , calls, granted] = r;
    const verdict = VERDICTS[code] ?? 'ok';
    if (verdict === 'blocked') this.rememberBlock(opts.ip, calls);
    if (granted > 0 && !opts.message) {
      this.leases.grant(ctx.accountId, {
        win,
        period: period.start.getTime(),
        reqKey: keys[0],
        callsKey: keys[2],
        left: granted - 1,
        counted: requests,
        calls,
        rpm,
        quota,
      });
    }
    this.reconcileSoon(ctx.accountId, keys[2], period);
    const extra = Math.max(0, granted - 1);
    return outcome(ctx, now, verdict, requests - extra, calls - extra);
  }

  /** At most once a minute per counter, off the request path: raise it to the database's count. */
  private reconcileSoon(accountId: string, callsKey: string, period: Period): void {
    const last = this.reconciled.get(callsKey);
    const t = Date.now();
    if (last === undefined) {
      // Just seeded or first seen here: start the clock without reading.
      if (this.reconciled.size >= 100_000) this.reconciled.clear();
      this.reconciled.set(callsKey, t);
      return;
    }
    if (t - last < RECONCILE_MS) return;
    this.reconciled.set(callsKey, t);
    void this.recordedApiCalls(accountId, period)
      .then((n) => this.redis.chasquiRaise(callsKey, n))
      .catch(() => {});
  }

  /** One PING on the limiter's connection (its command timeout bounds it). */
  async redisHealth(): Promise<'ok' | 'down'> {
    return (await this.link.answers()) ? 'ok' : 'down';
  }

  async close(): Promise<void> {
    this.link.closing();
    clearInterval(this.sweep);
    this.leases.endExpired(true);
    try {
      if (this.redis.status === 'ready') await this.redis.quit();
    } catch {
      /* closing anyway */
    }
    this.redis.disconnect();
    this.subscriber.disconnect();
    await this.fallback.close();
  }
}
