// The limiter's counters for AI apps (docs/mcp.md "Caps"): an app's MCP tool calls per minute,
// and the account's message cap for sends that are not REST calls — in memory, and in Redis when
// REDIS_URL is set (two limiters on one Redis share the counters, as two processes do).
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../lib/clock.js';
import { MemoryLimiter } from './memory.js';
import { effectiveLimits } from './plans.js';
import { RedisLimiter } from './redis.js';
import type { AccountLimitsCtx, Limiter } from './types.js';

const ctx = (over: Partial<AccountLimitsCtx['limits']> = {}): AccountLimitsCtx => ({
  accountId: `acc-${randomBytes(4).toString('hex')}`,
  plan: 'inicial',
  limits: { ...effectiveLimits('inicial', {}), mcpCallsPerMinute: 3, messagesPerMinute: 2, ...over },
});

const opened: Limiter[] = [];
afterEach(async () => {
  for (const l of opened.splice(0)) await l.close();
});

function limiters(clock: ManualClock): Limiter[] {
  const recorded = async () => 0;
  const url = process.env.REDIS_URL;
  if (!url) {
    const one = new MemoryLimiter(clock, recorded);
    opened.push(one);
    return [one, one];
  }
  const prefix = `chasqui-test-${randomBytes(4).toString('hex')}`;
  const make = () => new RedisLimiter({ url, prefix, clock, log: pino({ level: 'silent' }), recordedApiCalls: recorded });
  const two = [make(), make()];
  opened.push(...two);
  return two;
}

describe('"MCP tool calls per minute per app": the N+1st call inside one minute window is refused', () => {
  it('3 per minute: the 4th is refused (nothing counted), another app has its own count, the next window starts again; shared across limiters on one Redis', async () => {
    const clock = new ManualClock();
    clock.set(new Date('2026-11-26T12:00:05.000Z'));
    const [a, b] = limiters(clock);
    const c = ctx();
    expect((await a!.admitMcpCalls(c, 'app-1', 1)).ok).toBe(true);
    expect((await b!.admitMcpCalls(c, 'app-1', 1)).ok).toBe(true);
    expect((await a!.admitMcpCalls(c, 'app-1', 1)).ok).toBe(true);
    expect((await b!.admitMcpCalls(c, 'app-1', 1)).ok).toBe(false);
    expect((await a!.admitMcpCalls(c, 'app-1', 1)).ok).toBe(false);
    expect((await a!.admitMcpCalls(c, 'app-2', 1)).ok).toBe(true);
    clock.advance(60_000);
    expect((await b!.admitMcpCalls(c, 'app-1', 1)).ok).toBe(true);
  });

  it('a batch of calls counts together or not at all: 2 of 3 used, a batch of 2 is refused with room 1 and counts nothing', async () => {
    const clock = new ManualClock();
    const [a, b] = limiters(clock);
    const c = ctx();
    expect(await a!.admitMcpCalls(c, 'app-b', 2)).toEqual({ ok: true, room: 2 });
    expect(await b!.admitMcpCalls(c, 'app-b', 2)).toEqual({ ok: false, room: 1 });
    expect(await a!.admitMcpCalls(c, 'app-b', 1)).toEqual({ ok: true, room: 1 });
    expect(await b!.admitMcpCalls(c, 'app-b', 1)).toEqual({ ok: false, room: 0 });
  });

  it('no cap (null) admits every call', async () => {
    const clock = new ManualClock();
    const [a] = limiters(clock);
    const c = ctx({ mcpCallsPerMinute: null });
    for (let i = 0; i < 10; i++) expect((await a!.admitMcpCalls(c, 'app-x', 1)).ok).toBe(true);
  });
});

describe('"send_message and start_automation count against the account\'s message minute cap"', () => {
  it('2 per minute: the 3rd answers the 429 text of the message cap', async () => {
    const clock = new ManualClock();
    const [a, b] = limiters(clock);
    const c = ctx();
    expect(await a!.admitMessage(c)).toBeNull();
    expect(await b!.admitMessage(c)).toBeNull();
    const over = await a!.admitMessage(c);
    expect(over?.statusCode).toBe(429);
    expect(over?.message).toMatch(/2/);
  });
});
