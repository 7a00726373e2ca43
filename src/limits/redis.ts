// Counters in Redis (REDIS_URL), shared by every process behind the load balancer.
//
// Keys (prefix REDIS_KEY_PREFIX):
//   <p>:req:<account>:<windowStartMs>    requests in a one-minute window        (PX 120 s)
//   <p>:msg:<account>:<windowStartMs>    POST /messages in the window           (PX 120 s)
//   <p>:calls:<account>:<periodStartMs>  API calls of the quota month           (to period end + 35 d)
//   <p>:bad:<ip>                         invalid keys: hash {s: first hit, n}    (PX 120 s)
//   <p>:block:<ip>                       IP blocked until (ms of the clock)      (PX 120 s)
// Windows and block times come from the injected clock (passed to the scripts), not from
// Redis's TTLs, so tests can move time; TTLs only clean up. A script touches an account's
// keys and one IP's block key together: standalone Redis (or one shard), not Redis Cluster.
//
// One Lua script (one round trip) decides each request atomically: the IP block, both caps
// and the quota, then counts all three or none. rate-limiter-flexible is not used: its Redis windows start at a key's
// first hit and read the process time, and a send must consume two caps atomically.
//
// Failure mode: Redis unreachable → fail open to the per-process memory limiter (each process
// still enforces its own share), one error log per outage, back to Redis when it reconnects.
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../lib/clock.js';
import { INVALID_KEYS_PER_MINUTE, IP_BLOCK_MS, outcome, periodOf, type Verdict, WINDOW_MS, windowStart } from './caps.js';
import { MemoryLimiter } from './memory.js';
import type { Period } from './period.js';
import type { AccountLimitsCtx, AdmitOptions, CapOutcome, Limiter } from './types.js';

// KEYS: req, msg, calls, block. ARGV: requestCap, messageCap, isMessage, quota, windowTtlMs,
// skipQuota, now (-1 = no cap). Returns {verdict, requests, messages, apiCalls}; verdict 0 ok,
// 1 request cap, 2 message cap, 3 quota, 4 the quota counter needs seeding from the database,
// 5 the IP is blocked.
const ADMIT_LUA = `
local reqCap = tonumber(ARGV[1])
local msgCap = tonumber(ARGV[2])
local isMsg = ARGV[3] == '1'
local quota = tonumber(ARGV[4])
local ttl = tonumber(ARGV[5])
local skipQuota = ARGV[6] == '1'
local blockedUntil = redis.call('GET', KEYS[4])
if blockedUntil and tonumber(blockedUntil) > tonumber(ARGV[7]) then return {5, 0, 0, 0} end
local req = tonumber(redis.call('GET', KEYS[1]) or '0')
if reqCap >= 0 and req + 1 > reqCap then return {1, req, 0, 0} end
local msg = 0
if isMsg then
  msg = tonumber(redis.call('GET', KEYS[2]) or '0')
  if msgCap >= 0 and msg + 1 > msgCap then return {2, req, msg, 0} end
end
local calls = redis.call('GET', KEYS[3])
if calls then
  calls = tonumber(calls)
  if quota >= 0 and calls >= quota then return {3, req, msg, calls} end
elseif not skipQuota then
  return {4, req, msg, 0}
end
req = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ttl)
if isMsg then
  msg = redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], ttl)
end
if calls then calls = redis.call('INCR', KEYS[3]) else calls = 0 end
return {0, req, msg, calls}
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

type AdmitReply = [number, number, number, number];
interface LimitsCommands {
  chasquiAdmit(req: string, msg: string, calls: string, block: string, ...args: (string | number)[]): Promise<AdmitReply>;
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

export interface RedisLimiterOptions {
  url: string;
  prefix: string;
  clock: Clock;
  log: Logger;
  /** Per-command timeout (ms): a hung Redis must not hold requests. */
  commandTimeoutMs?: number;
}

export class RedisLimiter implements Limiter {
  private readonly redis: Redis & LimitsCommands;
  private readonly fallback: MemoryLimiter;
  private readonly prefix: string;
  private readonly clock: Clock;
  private readonly log: Logger;
  /** Settles on the first connection or the first failure (the first requests wait for it). */
  private firstContact: Promise<void>;
  private outage = false;
  private skipUntil = 0;
  private closed = false;
  /** Blocks this process has seen (clock ms): blocked callers are answered without Redis. */
  private knownBlocks = new Map<string, number>();
  /** Last reconciliation with the database per quota counter key (real time). */
  private reconciled = new Map<string, number>();

  constructor(opts: RedisLimiterOptions) {
    this.prefix = opts.prefix;
    this.clock = opts.clock;
    this.log = opts.log;
    this.fallback = new MemoryLimiter(opts.clock);
    this.redis = new Redis(opts.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs ?? 500,
      connectTimeout: 2_000,
      // Keep trying forever, at most every 2 s: the limiter recovers by itself.
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2_000),
    }) as Redis & LimitsCommands;
    this.redis.defineCommand('chasquiAdmit', { numberOfKeys: 4, lua: ADMIT_LUA });
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
      }
    });
    this.redis.on('error', (err: Error) => {
      settle();
      this.failed(err);
    });
  }

  private failed(err: unknown): void {
    this.skipUntil = Date.now() + BACKOFF_MS;
    if (this.outage || this.closed) return;
    this.outage = true;
    this.log.error(
      { err: { message: (err as Error)?.message, code: (err as { code?: string })?.code } },
      'Redis unreachable: limits fall back to per-process memory counters (fail open) until it is back',
    );
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

  private rememberBlock(ip: string, now: number): void {
    if (this.knownBlocks.size >= MAX_KNOWN_BLOCKS) this.knownBlocks.clear();
    this.knownBlocks.set(ip, now + IP_BLOCK_MS);
  }

  async ipBlocked(ip: string): Promise<boolean> {
    const until = this.knownBlocks.get(ip);
    if (until !== undefined) {
      if (until > this.clock.now().getTime()) return true;
      this.knownBlocks.delete(ip);
    }
    // Blocks set by other processes are seen by invalidKey() and admit(), in the same round trip.
    return this.outage ? this.fallback.ipBlocked(ip) : false;
  }

  async invalidKey(ip: string): Promise<boolean> {
    if (!(await this.usable())) return this.fallback.invalidKey(ip);
    try {
      const now = this.clock.now().getTime();
      const r = await this.redis.chasquiInvalidKey(
        this.key('bad', ip),
        this.key('block', ip),
        now,
        WINDOW_MS,
        INVALID_KEYS_PER_MINUTE,
        IP_BLOCK_MS,
        KEY_TTL_MS,
      );
      if (r === 1) this.rememberBlock(ip, now);
      return r !== 0;
    } catch (e) {
      this.failed(e);
      return this.fallback.invalidKey(ip);
    }
  }

  async admit(ctx: AccountLimitsCtx, opts: AdmitOptions): Promise<CapOutcome> {
    if (!(await this.usable())) return this.fallback.admit(ctx, opts);
    const now = this.clock.now().getTime();
    const win = windowStart(now);
    const period = periodOf(now);
    const keys = [
      this.key('req', ctx.accountId, win),
      this.key('msg', ctx.accountId, win),
      this.key('calls', ctx.accountId, period.start.getTime()),
      this.key('block', opts.ip),
    ] as const;
    const { requestsPerMinute: rpm, messagesPerMinute: mpm, apiCallsPerMonth: quota } = ctx.limits;
    const args = (skipQuota: boolean) =>
      [rpm ?? -1, mpm ?? -1, opts.message ? 1 : 0, quota ?? -1, KEY_TTL_MS, skipQuota ? 1 : 0, now] as (string | number)[];
    let r: AdmitReply;
    try {
      r = await this.redis.chasquiAdmit(...keys, ...args(false));
      if (r[0] === 4) {
        // First call of this account in the period (or Redis lost its data): start the
        // shared counter from what the database recorded, then decide.
        // The database unreachable: skip the quota for this request (fail open) and seed later.
        const recorded = await opts.recordedApiCalls(period).catch(() => null);
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
    const verdict = VERDICTS[r[0]] ?? 'ok';
    this.reconcileSoon(keys[2], period, opts);
    return outcome(ctx, now, verdict, r[1], r[3]);
  }

  /** At most once a minute per counter, off the request path: raise it to the database's count. */
  private reconcileSoon(callsKey: string, period: Period, opts: AdmitOptions): void {
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
    void opts
      .recordedApiCalls(period)
      .then((n) => this.redis.chasquiRaise(callsKey, n))
      .catch(() => {});
  }

  async close(): Promise<void> {
    this.closed = true;
    try {
      if (this.redis.status === 'ready') await this.redis.quit();
    } catch {
      /* closing anyway */
    }
    this.redis.disconnect();
    await this.fallback.close();
  }
}
