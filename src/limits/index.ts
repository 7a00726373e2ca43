// Builds the limiter for this process (memory, or Redis when REDIS_URL is set: issue "Limits").
import type { Config } from '../config.js';
import type { Clock } from '../lib/clock.js';
import type { CapOutcome, Limiter } from './types.js';

/** Admits everything (placeholder until the caps land). */
class OpenLimiter implements Limiter {
  async ipBlocked(): Promise<boolean> {
    return false;
  }
  async invalidKey(): Promise<void> {}
  async admit(): Promise<CapOutcome> {
    return { headers: {} };
  }
  async close(): Promise<void> {}
}

export function createLimiter(_config: Config, _clock: Clock): Limiter {
  return new OpenLimiter();
}
