// Counters in Redis (REDIS_URL), shared by every process behind the load balancer.
//
// Keys (prefix REDIS_KEY_PREFIX):
//   <p>:req:<account>:<windowStartMs>    requests in a one-minute window        (PX 120 s)
//   <p>:msg:<account>:<windowStartMs>    POST /messages in the window           (PX 120 s)
//   <p>:calls:<account>:<periodStartMs>  API calls of the quota month           (to period end + 35 d)
//   <p>:bad:<ip>                         invalid keys: hash {s: first hit, n}    (PX 120 s)
//   <p>:block:<ip>                       IP blocked until (ms of the clock)      (PX 120 s)
//   channel <p>:blocks                   "ip until" for every block set, so every process knows it
// Windows and block times come from the injected clock (passed to the scripts), not from
// Redis's TTLs, so tests can move time; TTLs only clean up. A script touches an account's
// keys and one IP's block key together: standalone Redis (or one shard), not Redis Cluster.
//
// One Lua script (one round trip) decides a request atomically: the IP block, both caps and
// the quota, then counts all three or none. rate-limiter-flexible is not used: its Redis
// windows start at a key's first hit and read the process time, and a send must consume two
// caps atomically.
//
// Leases (docs/limits.md): a busy account does not pay a round trip per request. When the
// script admits a request it may grant this process a few more request-and-call tokens of the
// same window, at most 1/16 of what is left under each cap, so near a cap every request is
// decided in Redis again and the cap stays exact. The lease size doubles while leases run out
// within their second and halves when they do not; unused tokens go back to Redis when a lease
// ends. Sends (POST /messages) always ask Redis.
//
// Failure mode: Redis unreachable → fail open to the per-process memory limiter (each process
// still enforces its own share), one error log per outage, back to Redis when it reconnects.
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../lib/clock.js';
import { INVALID_KEYS_PER_MINUTE, IP_BLOCK_MS, outcome, type Verdict, WINDOW_MS, windowStart } from './caps.js';
import { MemoryLimiter } from './memory.js';
import { type Period, quotaPeriodAt } from './period.js';
import type { AccountLimitsCtx, AdmitOptions, CapOutcome, Limiter, RecordedApiCalls } from './types.js';

// KEYS: req, msg, calls, block. ARGV: requestCap, messageCap, isMessage, quota, windowTtlMs,
// skipQuota, now (-1 = no cap), tokens wanted (≥ 1), share divisor. Returns {verdict, requests,
// messages, apiCalls, granted}; verdict 0 ok, 1 request cap, 2 message cap, 3 quota, 4 the
// quota counter needs seeding from the database, 5 the IP is blocked (apiCalls = until).
// `granted` tokens (≥ 1, this request's included) were counted on the request and quota counters.
const ADMIT_LUA = `
local reqCap = tonumber(ARGV[1])
local msgCap = tonumber(ARGV[2])
local isMsg = ARGV[3] == '1'
local quota = tonumber(ARGV[4])
local ttl = tonumber(ARGV[5])
local skipQuota = ARGV[6] == '1'
local blockedUntil = redis.call('GET', KEYS[4])
if blockedUntil and tonumber(blockedUntil) > tonumber(ARGV[7]) then return {5, 0, 0, tonumber(blockedUntil), 0} end
local req = tonumber(redis.call('GET', KEYS[1]) or '0')
if reqCap >= 0 and req + 1 > reqCap then return {1, req, 0, 0, 0} end
local msg = 0
if isMsg then
  msg = tonumber(redis.call('GET', KEYS[2]) or '0')
  if msgCap >= 0 and msg + 1 > msgCap then return {2, req, msg, 0, 0} end
end
local calls = redis.call('GET', KEYS[3])
if calls then
  calls = tonumber(calls)
  if quota >= 0 and calls >= quota then return {3, req, msg, calls, 0} end
elseif not skipQuota then
  return {4, req, msg, 0, 0}
end
local grant = tonumber(ARGV[8])
local div = tonumber(ARGV[9])
if reqCap >= 0 then grant = math.min(grant, math.max(1, math.floor((reqCap - req) / div))) end
if calls and quota >= 0 then grant = math.min(grant, math.max(1, math.floor((quota - calls) / div))) end
req = redis.call('INCRBY', KEYS[1], grant)
redis.call('PEXPIRE', KEYS[1], ttl)
if isMsg then
  msg = redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], ttl)
end
if calls then calls = redis.call('INCRBY', KEYS[3], grant) else calls = 0 end
return {0, req, msg, calls, grant}
`;

// KEYS: req, calls. ARGV: unused tokens of a lease. Gives them back (never below zero).
const RETURN_LUA = `
for i = 1, 2 do
  local cur = redis.call('GET', KEYS[i])
  if cur then redis.call('DECRBY', KEYS[i], math.min(tonumber(ARGV[1]), tonumber(cur))) end
end
return 0
`;

// KEYS: bad, block. ARGV: now, windowMs, max, blockMs, ttlMs. Returns 0 counted, 1 this hit
// blocks the IP, 2 the IP was already blocked (not counted).
const INVALID_KEY_LUA = `
local now = tonumber(ARGV[1])
local blockedUntil = redis.call('GET', KEYS[2])
if blockedUntil and tonumber(blockedUntil) > now then return 2 end
local start = tonumber(redis.call('HGET', KEYS[1], 's') or '-1')
local n
if start < 0 or now - start >= tonumber(ARGV[2]) or now < start then
  redis.call('HSET', KEYS[1], 's', now, 'n', 1)
  n = 1
else
  n = redis.call('HINCRBY', KEYS[1], 'n', 1)
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if n > tonumber(ARGV[3]) then
  redis.call('SET', KEYS[2], now + tonumber(ARGV[4]), 'PX', ARGV[5])
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`;

// KEYS: calls. ARGV: recorded. Raises the quota counter to what the database recorded (calls
// counted while Redis was down, or 402s of a plan without API); never lowers it.
const RAISE_LUA = `
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local diff = tonumber(ARGV[1]) - tonumber(cur)
if diff > 0 then redis.call('INCRBY', KEYS[1], diff) end
return diff
`;

type AdmitReply = [number, number, number, number, number];
interface LimitsCommands {
  chasquiAdmit(req: string, msg: string, calls: string, block: string, ...args: (string | number)[]): Promise<AdmitReply>;
  chasquiReturn(req: string, calls: string, tokens: number): Promise<number>;
  chasquiInvalidKey(bad: string, block: string, ...args: (string | number)[]): Promise<number>;
  chasquiRaise(calls: string, recorded: number): Promise<number>;
}

const KEY_TTL_MS = 2 * WINDOW_MS;
const PERIOD_TTL_EXTRA_MS = 35 * 24 * 60 * 60 * 1000;
/** After a failed command, skip Redis this long before trying again. */
const BACKOFF_MS = 1_000;
const VERDICTS: Verdict[] = ['ok', 'requests', 'messages', 'quota', 'ok', 'blocked'];
const MAX_KNOWN_BLOCKS = 10_000;
/** How often (real time) each process reconciles an account's quota counter with the database. */
const RECONCILE_MS = 60_000;
/** A lease's lifetime (real time): unused tokens go back to Redis after it. */
export const LEASE_MS = 1_000;
const MAX_LEASE = 4_096;
/** A lease takes at most this fraction (1/n) of what is left under a cap. */
const LEASE_SHARE = 16;

/** Tokens this process holds for one account's window (requests and API calls alike). */
interface Lease {
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
  private readonly log: Logger;
  private readonly recordedApiCalls: RecordedApiCalls;
  /** Settles on the first connection or the first failure (the first requests wait for it). */
  private firstContact: Promise<void>;
  private outage = false;
  private skipUntil = 0;
  private closed = false;
  /** Blocks this process set or heard of (clock ms): blocked callers are answered without Redis. */
  private knownBlocks = new Map<string, number>();
  /** Last reconciliation with the database per quota counter key (real time). */
  private reconciled = new Map<string, number>();
  private leases = new Map<string, Lease>();
  /** Grants being asked for, per account. */
  private renewals = new Map<string, Promise<unknown>>();
  /** Tokens to ask for on an account's next grant (adapts to its traffic in this process). */
  private leaseSize = new Map<string, number>();
  private readonly sweep: NodeJS.Timeout;
  /** Waiting for the end of an outage (`whenShared`). */
  private backOnRedis: (() => void)[] = [];

  constructor(opts: RedisLimiterOptions) {
    this.prefix = opts.prefix;
    this.clock = opts.clock;
    this.log = opts.log;
    this.recordedApiCalls = opts.recordedApiCalls;
    this.fallback = new MemoryLimiter(opts.clock, opts.recordedApiCalls);
    this.redis = new Redis(opts.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs ?? 500,
      connectTimeout: 2_000,
      // Keep trying forever, at most every 2 s: the limiter recovers by itself.
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2_000),
    }) as Redis & LimitsCommands;
    this.redis.defineCommand('chasquiAdmit', { numberOfKeys: 4, lua: ADMIT_LUA });
    this.redis.defineCommand('chasquiReturn', { numberOfKeys: 2, lua: RETURN_LUA });
    this.redis.defineCommand('chasquiInvalidKey', { numberOfKeys: 2, lua: INVALID_KEY_LUA });
    this.redis.defineCommand('chasquiRaise', { numberOfKeys: 1, lua: RAISE_LUA });
    let settle: () => void = () => {};
    this.firstContact = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const timer = setTimeout(settle, 3_000);
    timer.unref();
    this.redis.on('ready', () => {
      settle();
      if (this.outage) {
        this.outage = false;
        this.skipUntil = 0;
        this.log.warn('Redis reachable again: minute caps, API quota and IP blocks are shared across processes again');
        for (const resolve of this.backOnRedis.splice(0)) resolve();
      }
    });
    this.redis.on('error', (err: Error) => {
      settle();
      this.failed(err);
    });
    // Blocks set by any process reach every process at once, so a blocked IP is refused even on
    // requests this process decides from a lease. Errors are the main connection's to report.
    this.subscriber = this.redis.duplicate();
    this.subscriber.on('error', () => {});
    this.subscriber.on('ready', () => void this.subscriber.subscribe(this.blockChannel()).catch(() => {}));
    this.subscriber.on('message', (_channel: string, message: string) => {
      const [ip, until] = message.split(' ');
      if (ip && Number(until) > 0) this.rememberBlock(ip, Number(until));
    });
    this.sweep = setInterval(() => this.endLeases(false), LEASE_MS);
    this.sweep.unref();
  }

  private failed(err: unknown): void {
    this.skipUntil = Date.now() + BACKOFF_MS;
    this.leases.clear();
    if (this.outage || this.closed) return;
    this.outage = true;
    this.log.error(
      { err: { message: (err as Error)?.message, code: (err as { code?: string })?.code } },
      'Redis unreachable: limits fall back to per-process memory counters (fail open) until it is back',
    );
  }

  /** Resolves when the limiter decides in Redis again after an outage (at once when there is none). */
  whenShared(): Promise<void> {
    if (!this.outage) return Promise.resolve();
    return new Promise((resolve) => this.backOnRedis.push(resolve));
  }

  /** Redis can be asked now; otherwise the memory fallback answers. */
  private async usable(): Promise<boolean> {
    if (this.redis.status !== 'ready') {
      await this.firstContact;
      if ((this.redis.status as string) !== 'ready') {
        if (!this.outage && !this.closed) this.failed(new Error(`Redis connection ${this.redis.status}`));
        return false;
      }
    }
    return Date.now() >= this.skipUntil;
  }

  private key(kind: string, id: string, suffix?: number): string {
    return suffix === undefined ? `${this.prefix}:${kind}:${id}` : `${this.prefix}:${kind}:${id}:${suffix}`;
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
    return this.outage ? this.fallback.ipBlocked(ip) : false;
  }

  async invalidKey(ip: string): Promise<boolean> {
    if (!(await this.usable())) return this.fallback.invalidKey(ip);
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
      if (r === 1) {
        this.rememberBlock(ip, now + IP_BLOCK_MS);
        this.redis.publish(this.blockChannel(), `${ip} ${now + IP_BLOCK_MS}`).catch(() => {});
      }
      return r !== 0;
    } catch (e) {
      this.failed(e);
      return this.fallback.invalidKey(ip);
    }
  }

  admit(ctx: AccountLimitsCtx, opts: AdmitOptions): CapOutcome | Promise<CapOutcome> {
    const now = this.clock.ms();
    const { requestsPerMinute: rpm, messagesPerMinute: mpm, apiCallsPerMonth: quota } = ctx.limits;
    // Nothing to count for an account without caps or quota (its usage is the database's).
    if (rpm === null && quota === null && (!opts.message || mpm === null)) return outcome(ctx, now, 'ok', 0, 0);
    if (opts.message) return this.admitRemote(ctx, opts, now);
    const lease = this.leases.get(ctx.accountId);
    if (lease && lease.left > 0 && lease.win === windowStart(now) && lease.period === quotaPeriodAt(now).start.getTime()) {
      if (Date.now() < lease.until && lease.rpm === rpm && lease.quota === quota) {
        lease.left -= 1;
        return outcome(ctx, now, 'ok', lease.counted - lease.left, lease.calls - lease.left);
      }
    }
    // One grant in flight per account: requests arriving meanwhile wait for it and take from it,
    // rather than each asking Redis and replacing the others' leases.
    const renewing = this.renewals.get(ctx.accountId);
    if (renewing) return renewing.then(() => this.admit(ctx, opts));
    const asked = this.admitRemote(ctx, opts, now);
    this.renewals.set(
      ctx.accountId,
      asked.then(
        () => this.renewals.delete(ctx.accountId),
        () => this.renewals.delete(ctx.accountId),
      ),
    );
    return asked;
  }

  private async admitRemote(ctx: AccountLimitsCtx, opts: AdmitOptions, now: number): Promise<CapOutcome> {
    if (!(await this.usable())) return this.fallback.admit(ctx, opts);
    const win = windowStart(now);
    const period = quotaPeriodAt(now);
    const keys = [
      this.key('req', ctx.accountId, win),
      this.key('msg', ctx.accountId, win),
      this.key('calls', ctx.accountId, period.start.getTime()),
      this.key('block', opts.ip),
    ] as const;
    const { requestsPerMinute: rpm, messagesPerMinute: mpm, apiCallsPerMonth: quota } = ctx.limits;
    const wanted = opts.message ? 1 : this.nextLeaseSize(ctx.accountId);
    // A request that is not a send got here because its lease is used up, over, or granted under
    // other caps: give back what is left first (the same connection keeps the order), so the
    // decision below counts only requests actually served.
    if (!opts.message) this.endLease(ctx.accountId);
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
    } catch (e) {
      this.failed(e);
      return this.fallback.admit(ctx, opts);
    }
    const [code, requests, , calls, granted] = r;
    const verdict = VERDICTS[code] ?? 'ok';
    if (verdict === 'blocked') this.rememberBlock(opts.ip, calls);
    if (granted > 0 && !opts.message) {
      this.leases.set(ctx.accountId, {
        win,
        period: period.start.getTime(),
        reqKey: keys[0],
        callsKey: keys[2],
        left: granted - 1,
        counted: requests,
        calls,
        until: Date.now() + LEASE_MS,
        rpm,
        quota,
      });
    }
    this.reconcileSoon(ctx.accountId, keys[2], period);
    const extra = Math.max(0, granted - 1);
    return outcome(ctx, now, verdict, requests - extra, calls - extra);
  }

  /**
   * Tokens to ask for: double the last grant when it was used up within its second (the
   * account is busy in this process), halve it when its time ran out with tokens left.
   */
  private nextLeaseSize(accountId: string): number {
    const last = this.leases.get(accountId);
    let size = this.leaseSize.get(accountId) ?? 1;
    if (last && last.left === 0 && Date.now() < last.until) size = Math.min(MAX_LEASE, size * 2);
    else if (last && last.left > 0) size = Math.max(1, Math.floor(size / 2));
    if (size === 1) this.leaseSize.delete(accountId);
    else {
      if (this.leaseSize.size >= 100_000) this.leaseSize.clear();
      this.leaseSize.set(accountId, size);
    }
    return size;
  }

  /** Ends an account's lease, giving its unused tokens back. */
  private endLease(accountId: string): void {
    const lease = this.leases.get(accountId);
    if (!lease) return;
    this.leases.delete(accountId);
    if (lease.left > 0 && this.redis.status === 'ready') this.redis.chasquiReturn(lease.reqKey, lease.callsKey, lease.left).catch(() => {});
  }

  /** Ends leases whose time is up (all of them at shutdown); idle accounts start small again. */
  private endLeases(all: boolean): void {
    const t = Date.now();
    for (const [accountId, lease] of this.leases) {
      if (!all && lease.until > t) continue;
      if (lease.left > 0) {
        const size = Math.floor((this.leaseSize.get(accountId) ?? 1) / 2);
        if (size > 1) this.leaseSize.set(accountId, size);
        else this.leaseSize.delete(accountId);
      }
      this.endLease(accountId);
    }
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

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweep);
    this.endLeases(true);
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
