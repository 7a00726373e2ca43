// What the HTTP guard pipeline and the services need from the limits layer (api.md §8).
// Implementations: in-process memory, or Redis when REDIS_URL is set (issue "Limits").
import type { ApiError } from '../http/errors.js';
import type { Period } from './period.js';
import type { Limits } from './plans.js';

export interface CapOutcome {
  /** Headers for every authenticated response (X-RateLimit-*, RateLimit-Policy, RateLimit). */
  headers: Record<string, string>;
  /** Set when a minute cap or the monthly quota rejects the request. */
  error?: ApiError;
}

export interface AccountLimitsCtx {
  accountId: string;
  plan: string;
  limits: Limits;
}

export interface Limiter {
  /** IP block for invalid keys: true while the IP is blocked. */
  ipBlocked(ip: string): Promise<boolean>;
  /** Counts one 401 for the IP. */
  invalidKey(ip: string): Promise<void>;
  /** Minute caps and monthly quota, in the order of decisions.md; consumes only when accepted. */
  admit(ctx: AccountLimitsCtx, opts: { message: boolean }): Promise<CapOutcome>;
  close(): Promise<void>;
}

export interface UsageSnapshot {
  period: Period;
  apiCalls: number;
  webhookDeliveries: number;
  contacts: number;
  automationSteps: number;
  automationHttpRequests: number;
}

export interface UsageMeter {
  /** Counts one API call (batched; may lag up to 30 s). */
  countApiCall(accountId: string): void;
  /** Current usage of the quota month. */
  snapshot(accountId: string): Promise<UsageSnapshot>;
  /** Writes pending counts now (shutdown, tests). */
  flush(): Promise<void>;
  close(): Promise<void>;
}
