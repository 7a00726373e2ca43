// What memory and Redis limiters share: the fixed one-minute windows of the injected clock,
// the decision over the counters, and the headers and errors it produces (api.md §7–8,
// decisions.md "Limits").
import { ApiError } from '../http/errors.js';
import { suggestPlan } from './plans.js';
import type { AccountLimitsCtx, CapOutcome } from './types.js';

export const WINDOW_MS = 60_000;
/** More than this many 401s from one IP within a minute block it (api.md §5). */
export const INVALID_KEYS_PER_MINUTE = 20;
export const IP_BLOCK_MS = 60_000;

/** Start of the fixed one-minute window that holds `nowMs` (aligned to the clock's minute). */
export const windowStart = (nowMs: number): number => nowMs - (nowMs % WINDOW_MS);

/** Counters of one account as they stand before this request. */
export interface CounterState {
  requests: number;
  messages: number;
  /** API calls of the quota month (shared counter). */
  apiCalls: number;
}

export type Verdict = 'ok' | 'requests' | 'messages' | 'quota' | 'blocked';

/** The order of decisions.md: request cap, message cap, then the monthly API quota. */
export function decide(ctx: AccountLimitsCtx, message: boolean, c: CounterState): Verdict {
  const { requestsPerMinute: rpm, messagesPerMinute: mpm, apiCallsPerMonth: quota } = ctx.limits;
  if (rpm !== null && c.requests + 1 > rpm) return 'requests';
  if (message && mpm !== null && c.messages + 1 > mpm) return 'messages';
  if (quota !== null && c.apiCalls >= quota) return 'quota';
  return 'ok';
}

/** The 429 of the message minute cap (a send past it). */
export const messageCapError = (limit: number): ApiError => new ApiError('rate_limited_messages', { params: { limit } });

/** An unlimited request cap: no rate-limit headers (never written to). */
const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

/** "1"…"60": the reset header takes one of these on every request. */
const SECONDS = Array.from({ length: WINDOW_MS / 1000 + 1 }, (_, i) => String(i));

/** The constant header texts of a request cap (a handful of distinct caps in a process). */
const capTexts = new Map<number, { limit: string; policy: string }>();
function textsOf(rpm: number): { limit: string; policy: string } {
  let t = capTexts.get(rpm);
  if (!t) {
    if (capTexts.size > 1_000) capTexts.clear();
    t = { limit: String(rpm), policy: `"minute";q=${rpm};w=60` };
    capTexts.set(rpm, t);
  }
  return t;
}

/**
 * Headers and error of one admission. `requests` is the request-cap count after this
 * request (unchanged when rejected). Header names are lowercase, as Fastify stores them.
 */
export function outcome(ctx: AccountLimitsCtx, nowMs: number, verdict: Verdict, requests: number, apiCalls: number): CapOutcome {
  // The IP block answers with the error text only (api.md §7: "not shown as headers").
  if (verdict === 'blocked') return { headers: {}, error: new ApiError('ip_blocked') };
  const rpm = ctx.limits.requestsPerMinute;
  const reset = Math.max(1, Math.ceil((windowStart(nowMs) + WINDOW_MS - nowMs) / 1000));
  let headers: Record<string, string> = NO_HEADERS;
  if (rpm !== null) {
    const left = Math.max(0, rpm - requests);
    const texts = textsOf(rpm);
    // One literal (one hidden class) rather than five additions to an empty object: it runs on
    // every request.
    headers = {
      'x-ratelimit-limit': texts.limit,
      'x-ratelimit-remaining': String(left),
      'x-ratelimit-reset': SECONDS[reset] ?? String(reset),
      'ratelimit-policy': texts.policy,
      ratelimit: `"minute";r=${left};t=${reset}`,
    };
  }
  if (verdict === 'ok') return { headers };
  if (verdict === 'requests' || verdict === 'messages') {
    const limit = (verdict === 'requests' ? rpm : ctx.limits.messagesPerMinute) as number;
    return {
      headers: {
        ...headers,
        'retry-after': String(WINDOW_MS / 1000),
        'x-ratelimit-limit': String(limit),
        ...(verdict === 'messages' ? { 'x-ratelimit-remaining': '0' } : {}),
      },
      error: new ApiError(verdict === 'requests' ? 'rate_limited_requests' : 'rate_limited_messages', { params: { limit } }),
    };
  }
  const limit = ctx.limits.apiCallsPerMonth as number;
  return {
    headers,
    error: new ApiError('quota_api_calls', {
      params: { limit },
      cause: {
        type: 'upgrade',
        reason: 'limit',
        resource: 'apiCalls',
        plan: ctx.plan,
        limit,
        used: apiCalls,
        suggested: suggestPlan('apiCallsPerMonth', apiCalls, true, ctx.plan),
      },
    }),
  };
}
