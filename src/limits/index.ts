// Builds the limiter and the pacer for this process: Redis when REDIS_URL is set (shared by every process),
// in-process memory otherwise (docs/limits.md).
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Clock } from '../lib/clock.js';
import { MemoryLimiter } from './memory.js';
import { MemoryPacer, type Pacer } from './pacer.js';
import { RedisPacer } from './pacer-redis.js';
import { RedisLimiter } from './redis.js';
import type { CapOutcome, Limiter, RecordedApiCalls } from './types.js';

const ADMITTED: CapOutcome = Object.freeze({ headers: Object.freeze({}) }) as CapOutcome;

/** LIMITS=off: admits everything and sends no rate-limit headers (the bench's "limits off" floor). */
class NoLimiter implements Limiter {
  ipBlocked() {
    return false;
  }
  async invalidKey() {
    return false;
  }
  admit() {
    return ADMITTED;
  }
  async admitMcpCalls(_ctx: unknown, _appId: string, n: number) {
    return { ok: true, room: n };
  }
  async admitMessage() {
    return null;
  }
  async admitAutomationStart() {
    return true;
  }
  async windowCounts(scopes: string[]) {
    return scopes.map(() => 0);
  }
  announceForget() {}
  onForget() {}
  async redisHealth() {
    return 'not_configured' as const;
  }
  async close() {}
}

export function createLimiter(config: Config, clock: Clock, recordedApiCalls: RecordedApiCalls, log: Logger): Limiter {
  if (!config.LIMITS) return new NoLimiter();
  if (!config.REDIS_URL) return new MemoryLimiter(clock, recordedApiCalls);
  return new RedisLimiter({
    recordedApiCalls,
    url: config.REDIS_URL,
    prefix: config.REDIS_KEY_PREFIX,
    clock,
    log,
  });
}

/** The per-number pacer (limits/pacer.ts): shared in Redis when REDIS_URL is set, in memory otherwise. */
export function createPacer(config: Config, clock: Clock, log: Logger): Pacer {
  if (!config.REDIS_URL) return new MemoryPacer(clock);
  return new RedisPacer({ url: config.REDIS_URL, prefix: config.REDIS_KEY_PREFIX, clock, log });
}
