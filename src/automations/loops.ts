// An automation cannot restart itself without end (docs/automations.md "Loops", issue 25 item 2).
// Two bounds:
// - The hop count: every request of an http step carries `Chasqui-Hop: N+1`, N being the hop of its
//   execution (0 unless our incoming webhook started it from a request carrying a hop). The
//   incoming webhook (and the API's start) refuse a request past MAX_HOPS with 508 Loop Detected,
//   and the http step that got that answer says so in its step log.
// - The start rate: each automation takes at most `startsPerMinute` starts a minute (the
//   operator's, default 600), counted by the limiter (Redis when configured, so shared by every
//   process). Past it the webhook and the API answer 429; an inbound message starts nothing.
import type { IncomingHttpHeaders } from 'node:http';
import type { AutomationRow } from '../db/types.js';
import { ApiError, invalid } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import { WINDOW_MS, windowStart } from '../limits/caps.js';
import type { Services } from '../services.js';

/** The header of the hop count (lower case, as Node reads it). */
export const HOP_HEADER = 'chasqui-hop';
/** Automations chained by our own http steps after the first: the 4th chained start is refused. */
export const MAX_HOPS = 3;
export const DEFAULT_STARTS_PER_MINUTE = 600;

/**
 * The hop count of a request that starts an execution: 0 without the header, 400 when it is not a
 * whole number, 508 (with the refused count in its own Chasqui-Hop header) past MAX_HOPS.
 */
export function hopOf(headers: IncomingHttpHeaders): number {
  const raw = headers[HOP_HEADER];
  if (raw === undefined) return 0;
  const text = (Array.isArray(raw) ? raw.join(',') : raw).trim();
  if (!/^\d{1,9}$/.test(text)) throw invalid(['headers', 'Chasqui-Hop'], textFor('automation_hop_header'));
  const hop = Number(text);
  if (hop > MAX_HOPS) throw new ApiError('automation_loop', { params: { hop, max: MAX_HOPS }, headers: { [HOP_HEADER]: String(hop) } });
  return hop;
}

/** The hop our incoming webhook refused, when this answer is that refusal (508 with Chasqui-Hop); else null. */
export function refusedHop(status: number, headers: Record<string, string | string[] | undefined>): string | null {
  const hop = headers[HOP_HEADER];
  if (status !== 508 || hop === undefined) return null;
  return Array.isArray(hop) ? (hop[0] ?? '') : hop;
}

export const startsPerMinute = (a: Pick<AutomationRow, 'starts_per_minute'>): number => a.starts_per_minute ?? DEFAULT_STARTS_PER_MINUTE;

/** Counts one start against the automation's rate; false (and the refusal counted) when over it. */
export async function startAllowed(s: Services, a: Pick<AutomationRow, 'id' | 'starts_per_minute'>): Promise<boolean> {
  const ok = await s.limiter.admitAutomationStart(a.id, startsPerMinute(a));
  if (!ok) s.metrics.limitRefusal('automation_starts');
  return ok;
}

/** A start through the webhook or the API: the 429 with Retry-After (the window's end) when over the rate. */
export async function admitStart(s: Services, a: Pick<AutomationRow, 'id' | 'starts_per_minute'>): Promise<void> {
  if (await startAllowed(s, a)) return;
  const now = s.clock.ms();
  const retry = Math.max(1, Math.ceil((windowStart(now) + WINDOW_MS - now) / 1000));
  throw new ApiError('automation_start_rate', { params: { limit: startsPerMinute(a) }, headers: { 'retry-after': String(retry) } });
}
