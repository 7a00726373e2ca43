// What the HTTP guard pipeline and the services need from the limits layer (api.md §8).
// Implementations: in-process memory (memory.ts), or Redis when REDIS_URL is set (redis.ts).
import type { ApiError } from '../http/errors.js';
import type { Period } from './period.js';
import type { Limits } from './plans.js';

export interface CapOutcome {
  /** Headers for every authenticated response (X-RateLimit-*, RateLimit-Policy, RateLimit). */
  headers: Record<string, string>;
  /** Set when a minute cap or the monthly quota rejects the request (nothing was counted). */
  error?: ApiError;
}

export interface AccountLimitsCtx {
  accountId: string;
  plan: string;
  limits: Limits;
}

export interface AdmitOptions {
  /** The caller's IP: a block set meanwhile (e.g. by another process) still answers 429. */
  ip: string;
  /** POST /messages: counts against the message cap too. */
  message: boolean;
}

/**
 * API calls of the quota month already recorded (database plus this process's unwritten
 * batch): the usage meter. Seeds the quota counter the first time an account is seen in a period.
 */
export type RecordedApiCalls = (accountId: string, period: Period) => Promise<number>;

export interface Limiter {
  /**
   * IP block for invalid keys: true while the IP is known to be blocked. A synchronous pre-check
   * (Redis: blocks this process set or heard of); `invalidKey` and `admit` check the shared state.
   */
  ipBlocked(ip: string): boolean;
  /** Counts one 401 for the IP; true when the IP is blocked (already, or by this 21st hit). */
  invalidKey(ip: string): Promise<boolean>;
  /**
   * IP block, minute caps, then the monthly API quota (decisions.md, order of checks). Consumes the
   * request cap, the message cap (for a send) and one API call only when all of them admit it.
   * Synchronous when the answer is known locally (the hot path), a promise otherwise.
   */
  admit(ctx: AccountLimitsCtx, opts: AdmitOptions): CapOutcome | Promise<CapOutcome>;
  /**
   * `n` MCP tool calls of an AI app in one request (docs/mcp.md "Caps"): all counted in the app's
   * one-minute window when they fit under the cap (`mcpCallsPerMinute`, null: none), else none;
   * `room` is how many still fit (the first call over the cap is the one at that index).
   */
  admitMcpCalls(ctx: AccountLimitsCtx, appId: string, n: number): Promise<{ ok: boolean; room: number }>;
  /**
   * A send that is not a REST call (an AI app's send_message / start_automation): the account's
   * message minute cap only, the same counter POST /messages uses. The 429 error when over it.
   */
  admitMessage(ctx: AccountLimitsCtx): Promise<ApiError | null>;
  /**
   * One start of an automation (docs/automations.md "Loops"): counted in the automation's
   * one-minute window when it fits under `perMinute`, else refused (false) and not counted.
   */
  admitAutomationStart(automationId: string, perMinute: number): Promise<boolean>;
  /**
   * Fixed-window counters shared across processes: what each scope has counted in the current
   * window of `windowMs`, after counting `add` (0: only read). Console login failures
   * (`email:…`, `ip:…`; docs/console.md "Throttling") and OAuth client registrations per IP
   * (`oauth-reg:…`; docs/mcp.md).
   */
  windowCounts(scopes: string[], windowMs: number, add: number): Promise<number[]>;
  /**
   * Tells every process that an account's credentials changed (a key revoked, an app
   * disconnected, a plan changed), so their token caches forget it now rather than within their
   * TTL: through Redis when configured; a single process needs nothing.
   */
  announceForget(accountId: string): void;
  /** Called when another process announced a change of an account's credentials. */
  onForget(listener: (accountId: string) => void): void;
  /** Readiness (GET /readyz): Redis answers a PING, is down, or is not used by this limiter. */
  redisHealth(): Promise<'ok' | 'down' | 'not_configured'>;
  close(): Promise<void>;
}

export interface UsageSnapshot {
  period: Period;
  apiCalls: number;
  webhookDeliveries: number;
  contacts: number;
  automationSteps: number;
  automationHttpRequests: number;
  /** AI apps connected now (not a monthly count). */
  aiApps: number;
}

export interface UsageMeter {
  /** Counts one API call (batched; may lag up to 30 s). */
  countApiCall(accountId: string): void;
  /** Counts automation usage of an account without a quota for it (batched like API calls). */
  countLater(accountId: string, resource: 'automationSteps' | 'automationHttpRequests', n?: number): void;
  /** Counts of the period this process has not written yet. */
  pendingOf(accountId: string, period: Period, resource: 'apiCalls' | 'automationSteps' | 'automationHttpRequests'): number;
  /** API calls of the period written to the database plus this process's unwritten batch. */
  recordedApiCalls(accountId: string, period: Period): Promise<number>;
  /** Current usage of the quota month: what the database recorded plus this process's batch. */
  snapshot(accountId: string): Promise<UsageSnapshot>;
  /** Usage of `period` as the database recorded it (without this process's unwritten batch). */
  recorded(accountId: string, period: Period): Promise<UsageSnapshot>;
  /** Batches written so far (reads of the database from before the last one are stale). */
  readonly writes: number;
  /** Batches begun so far (written, or failed and put back). */
  readonly started: number;
  /** A batch is being written now: a read of the database meanwhile may or may not see it. */
  readonly busy: boolean;
  /** What this process's batches wrote in `period`, in all: a read older than a batch adds the difference. */
  writtenOf(accountId: string, period: Period, resource: 'apiCalls' | 'automationSteps' | 'automationHttpRequests'): number;
  /** Writes pending counts now (shutdown, tests). */
  flush(): Promise<void>;
  close(): Promise<void>;
}
