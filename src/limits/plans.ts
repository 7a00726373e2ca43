// The plans table of decisions.md ("Plans"): one place in code; accounts may override any limit.
export const PLAN_IDS = ['free_trial', 'crecimiento', 'escala', 'enterprise'] as const;
export type PlanId = (typeof PLAN_IDS)[number];

/** null means unlimited. Keys are those of GET /me `limits`. */
export interface Limits {
  requestsPerMinute: number | null;
  messagesPerMinute: number | null;
  apiCallsPerMonth: number | null;
  webhookDeliveriesPerMonth: number | null;
  apiKeys: number | null;
  webhookUrls: number | null;
  contacts: number | null;
  automationStepsPerMonth: number | null;
  automationHttpRequestsPerMonth: number | null;
  aiApps: number | null;
  mcpCallsPerMinute: number | null;
}
export const LIMIT_KEYS = [
  'requestsPerMinute',
  'messagesPerMinute',
  'apiCallsPerMonth',
  'webhookDeliveriesPerMonth',
  'apiKeys',
  'webhookUrls',
  'contacts',
  'automationStepsPerMonth',
  'automationHttpRequestsPerMonth',
  'aiApps',
  'mcpCallsPerMinute',
] as const satisfies readonly (keyof Limits)[];

interface Plan {
  id: PlanId;
  /** REST API and webhooks included (api.md §1: only escala and enterprise). */
  api: boolean;
  limits: Limits;
}

// Plans without the API: every call answers 402 first, so its caps and maxima never apply
// ("–" in decisions.md). Keys may still be created, e.g. before an upgrade.
const none = {
  requestsPerMinute: null,
  messagesPerMinute: null,
  apiCallsPerMonth: null,
  webhookDeliveriesPerMonth: null,
  apiKeys: null,
  webhookUrls: null,
};

export const PLANS: Record<PlanId, Plan> = {
  free_trial: {
    id: 'free_trial',
    api: false,
    limits: {
      ...none,
      contacts: 1_000,
      automationStepsPerMonth: 2_000,
      automationHttpRequestsPerMonth: 200,
      aiApps: 3,
      mcpCallsPerMinute: 20,
    },
  },
  crecimiento: {
    id: 'crecimiento',
    api: false,
    limits: {
      ...none,
      contacts: 10_000,
      automationStepsPerMonth: 25_000,
      automationHttpRequestsPerMonth: 5_000,
      aiApps: 10,
      mcpCallsPerMinute: 30,
    },
  },
  escala: {
    id: 'escala',
    api: true,
    limits: {
      requestsPerMinute: 300,
      messagesPerMinute: 60,
      apiCallsPerMonth: 300_000,
      webhookDeliveriesPerMonth: 500_000,
      apiKeys: 10,
      webhookUrls: 5,
      contacts: 100_000,
      automationStepsPerMonth: 200_000,
      automationHttpRequestsPerMonth: 50_000,
      aiApps: 25,
      mcpCallsPerMinute: 60,
    },
  },
  enterprise: {
    id: 'enterprise',
    api: true,
    limits: {
      requestsPerMinute: 1_200,
      messagesPerMinute: 300,
      apiCallsPerMonth: null,
      webhookDeliveriesPerMonth: null,
      apiKeys: 50,
      webhookUrls: 25,
      contacts: null,
      automationStepsPerMonth: null,
      automationHttpRequestsPerMonth: null,
      aiApps: null,
      mcpCallsPerMinute: 120,
    },
  },
};

export const isPlanId = (p: string): p is PlanId => (PLAN_IDS as readonly string[]).includes(p);

/** The plan's limits with the account's overrides on top. */
export function effectiveLimits(plan: string, overrides: Partial<Record<string, number | null>>): Limits {
  const base = isPlanId(plan) ? PLANS[plan].limits : PLANS.free_trial.limits;
  const out = { ...base };
  for (const k of LIMIT_KEYS) if (k in overrides && overrides[k] !== undefined) out[k] = overrides[k] as number | null;
  return out;
}

export const planHasApi = (plan: string): boolean => isPlanId(plan) && PLANS[plan].api;

/**
 * The cheapest plan whose default for `limit` is above `needed` (decisions.md: `suggested`).
 * With `current`, only plans above it count (an account on escala with a lowered override is
 * pointed to enterprise, not to the plan it already has). null when no plan solves it.
 */
export function suggestPlan(key: keyof Limits, needed: number, requireApi = true, current?: string): PlanId | null {
  const from = current && isPlanId(current) ? PLAN_IDS.indexOf(current) + 1 : 0;
  for (const id of PLAN_IDS.slice(from)) {
    const p = PLANS[id];
    if (requireApi && !p.api) continue;
    const v = p.limits[key];
    if (v === null || v > needed) return id;
  }
  return null;
}
