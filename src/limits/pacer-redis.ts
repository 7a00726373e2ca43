// The pacer in Redis (REDIS_URL): every process reserves a number's slots in one place, so the
// sends of all of them together keep the number's spacing (limits/pacer.ts has the algorithm).
//
// Key (prefix REDIS_KEY_PREFIX):
//   <p>:pace:<phoneNumberId>   hash {t: next free slot (Redis TIME, ms), f: back-off factor,
//                              s: since when the factor counts (clock ms), h: last halving (clock ms)}
//                              (PX 120 s, renewed by every take and slow-down)
// Slots are Redis's own time (TIME inside the script), so the hosts' clocks need not agree; the
// back-off's steps are the injected clock's (ARGV), like the limiter's windows.
//
// Failure mode: Redis unreachable → each process paces alone with its memory pacer (as the limiter
// fails open: a number sending from several processes may then go over its tier and meet 130429s,
// which slow it down), one error log per outage, back to Redis when it answers again.
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../lib/clock.js';
import {
  Departures,
  MemoryPacer,
  MIN_RATE,
  PACE_SHARE,
  type Pacer,
  RECOVER_STEP_MS,
  type Reservation,
  reserveOnTime,
  SAME_EPISODE_MS,
} from './pacer.js';

const KEY_TTL_MS = 120_000;
/** After a failed command, skip Redis this long before trying again. */
const BACKOFF_MS = 1_000;

// Lua shared by both scripts: reads the hash and applies the recovery steps up to the clock's now
// (ARGV[1]); leaves f, s and hh (last halving) set.
const READ_BACK_OFF = `
local h = redis.call('HMGET', KEYS[1], 't', 'f', 's', 'h')
local clock = tonumber(ARGV[1])
local tat = tonumber(h[1]) or 0
local f = tonumber(h[2]) or 1
local s = tonumber(h[3]) or 0
local hh = tonumber(h[4]) or -1e300
if f < 1 then
  local steps = math.floor((clock - s) / ${RECOVER_STEP_MS})
  if steps > 0 then
    f = math.min(1, f * 2 ^ math.min(steps, 20))
    s = s + steps * ${RECOVER_STEP_MS}
  end
end
local function num(x) return string.format('%.3f', x) end
`;

// KEYS: pace. ARGV: clock now, paced tier (PACE_SHARE of messages a second), max wait (ms).
// Returns {1, wait ms} with the slot reserved, or {0, wait ms it would have needed} (nothing reserved).
const TAKE_LUA = `${READ_BACK_OFF}
local paced = tonumber(ARGV[2])
local rate = math.max(math.min(${MIN_RATE}, paced), paced * f)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local slot = math.max(tat, now)
local wait = slot - now
if wait > tonumber(ARGV[3]) then return {0, math.ceil(wait)} end
redis.call('HSET', KEYS[1], 't', num(slot + 1000 / rate), 'f', num(f), 's', num(s))
redis.call('PEXPIRE', KEYS[1], ${KEY_TTL_MS})
return {1, math.ceil(wait)}
`;

// KEYS: pace. ARGV: clock now. Halves the factor unless it halved within SAME_EPISODE_MS
// (130429s of sends that were in flight then). Returns 1 when it halved.
const SLOW_DOWN_LUA = `${READ_BACK_OFF}
if f < 1 and clock - hh < ${SAME_EPISODE_MS} then return 0 end
redis.call('HSET', KEYS[1], 'f', num(math.max(1 / 1024, f / 2)), 's', num(clock), 'h', num(clock))
redis.call('PEXPIRE', KEYS[1], ${KEY_TTL_MS})
return 1
`;

interface PacerCommands {
  chasquiPace(key: string, clockMs: number, paced: number, maxWaitMs: number): Promise<[number, number]>;
  chasquiPaceSlowDown(key: string, clockMs: number): Promise<number>;
}

export interface RedisPacerOptions {
  url: string;
  prefix: string;
  clock: Clock;
  log: Logger;
  /** Per-command timeout (ms): a hung Redis must not hold sends. */
  commandTimeoutMs?: number;
}

export class RedisPacer implements Pacer {
  private readonly redis: Redis & PacerCommands;
  private readonly fallback: MemoryPacer;
  private readonly departures = new Departures();
  private readonly prefix: string;
  private readonly clock: Clock;
  private readonly log: Logger;
  private firstContact: Promise<void>;
  private outage = false;
  private skipUntil = 0;
  private closed = false;

  constructor(opts: RedisPacerOptions) {
    this.prefix = opts.prefix;
    this.clock = opts.clock;
    this.log = opts.log;
    this.fallback = new MemoryPacer(opts.clock);
    const connection = new Redis(opts.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs ?? 500,
      connectTimeout: 2_000,
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2_000),
    });
    connection.defineCommand('chasquiPace', { numberOfKeys: 1, lua: TAKE_LUA });
    connection.defineCommand('chasquiPaceSlowDown', { numberOfKeys: 1, lua: SLOW_DOWN_LUA });
    this.redis = connection as Redis & PacerCommands;
    let settle: () => void = () => {};
    this.firstContact = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const timer = setTimeout(settle, 3_000);
    timer.unref();
    this.redis.on('ready', () => {
      settle();
      this.recovered();
    });
    this.redis.on('error', (err: Error) => {
      settle();
      this.failed(err);
    });
  }

  private key(numberId: string): string {
    return `${this.prefix}:pace:${numberId}`;
  }

  private failed(err: unknown): void {
    this.skipUntil = Date.now() + BACKOFF_MS;
    if (this.outage || this.closed) return;
    this.outage = true;
    this.log.error(
      { err: { message: (err as Error)?.message, code: (err as { code?: string })?.code } },
      'Redis unreachable: each process paces its numbers alone (memory) until it is back',
    );
  }

  private recovered(): void {
    if (!this.outage) return;
    this.outage = false;
    this.skipUntil = 0;
    this.log.warn("Redis reachable again: numbers' send slots are shared across processes again");
  }

  private async usable(): Promise<boolean> {
    if (this.closed) return false;
    if (this.redis.status !== 'ready') {
      await this.firstContact;
      if ((this.redis.status as string) !== 'ready') {
        if (!this.outage) this.failed(new Error(`Redis connection ${this.redis.status}`));
        return false;
      }
    }
    return Date.now() >= this.skipUntil;
  }

  async reserve(numberId: string, perSecond: number, maxWaitMs: number): Promise<Reservation> {
    if (!(await this.usable())) return this.fallback.reserve(numberId, perSecond, maxWaitMs);
    let down = false;
    const r = await reserveOnTime(async (wait) => {
      if (down) return this.fallback.reserveNow(numberId, perSecond, wait);
      try {
        const [ok, waitMs] = await this.redis.chasquiPace(this.key(numberId), this.clock.ms(), perSecond * PACE_SHARE, wait);
        this.recovered();
        return { ok: ok === 1, waitMs };
      } catch (e) {
        this.failed(e);
        down = true;
        return this.fallback.reserveNow(numberId, perSecond, wait);
      }
    }, maxWaitMs);
    if (r.ok) await this.departures.leave(numberId, perSecond * PACE_SHARE);
    return r;
  }

  async take(numberId: string, perSecond: number, maxWaitMs: number): Promise<boolean> {
    return (await this.reserve(numberId, perSecond, maxWaitMs)).ok;
  }

  slowDown(numberId: string): void {
    // The memory pacer learns it too: it paces this process if Redis goes away.
    this.fallback.slowDown(numberId);
    void this.usable().then((ok) => {
      if (!ok) return;
      this.redis.chasquiPaceSlowDown(this.key(numberId), this.clock.ms()).then(
        () => this.recovered(),
        (e: unknown) => this.failed(e),
      );
    });
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
