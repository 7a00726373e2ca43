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
import type { Redis } from 'ioredis';
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
import { RedisLink } from './redis-link.js';

const KEY_TTL_MS = 120_000;

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
  private readonly link: RedisLink;

  constructor(opts: RedisPacerOptions) {
    this.prefix = opts.prefix;
    this.clock = opts.clock;
    this.fallback = new MemoryPacer(opts.clock);
    this.link = new RedisLink({
      url: opts.url,
      commandTimeoutMs: opts.commandTimeoutMs,
      log: opts.log,
      now: Date.now,
      lines: {
        down: 'Redis unreachable: each process paces its numbers alone (memory) until it is back',
        up: "Redis reachable again: numbers' send slots are shared across processes again",
      },
    });
    const connection = this.link.connection;
    connection.defineCommand('chasquiPace', { numberOfKeys: 1, lua: TAKE_LUA });
    connection.defineCommand('chasquiPaceSlowDown', { numberOfKeys: 1, lua: SLOW_DOWN_LUA });
    this.redis = connection as Redis & PacerCommands;
  }

  private key(numberId: string): string {
    return `${this.prefix}:pace:${numberId}`;
  }

  async reserve(numberId: string, perSecond: number, maxWaitMs: number): Promise<Reservation> {
    if (!(await this.link.usable())) return this.fallback.reserve(numberId, perSecond, maxWaitMs);
    let down = false;
    const r = await reserveOnTime(async (wait) => {
      if (down) return this.fallback.reserveNow(numberId, perSecond, wait);
      try {
        const [ok, waitMs] = await this.redis.chasquiPace(this.key(numberId), this.clock.ms(), perSecond * PACE_SHARE, wait);
        this.link.recovered();
        return { ok: ok === 1, waitMs };
      } catch (e) {
        this.link.failed(e);
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
    void this.link.usable().then((ok) => {
      if (!ok) return;
      this.redis.chasquiPaceSlowDown(this.key(numberId), this.clock.ms()).then(
        () => this.link.recovered(),
        (e: unknown) => this.link.failed(e),
      );
    });
  }

  async close(): Promise<void> {
    this.link.closing();
    try {
      if (this.redis.status === 'ready') await this.redis.quit();
    } catch {
      /* closing anyway */
    }
    this.redis.disconnect();
    await this.fallback.close();
  }
}
