// The door of POST /hooks/automations/{token} in the guard pipeline (http/guards.ts): the hook
// token in the path is the credential. IP block (429) → token (404, counted toward the IP block
// like an invalid key) → plan (402) → the account's request minute cap (429) → monthly API quota
// (429), then the route reads the body. Not cached: each call reads the automation and its account.
import type { FastifyRequest } from 'fastify';
import { getAccount } from '../accounts/service.js';
import type { AccountRow, AutomationRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { admitApiCall, type Door } from '../http/guards.js';
import { effectiveLimits } from '../limits/plans.js';
import type { Services } from '../services.js';
import { automationByToken } from './service.js';

/** Whom an incoming webhook starts: the automation its token names, and its account. */
export interface HookTarget {
  automation: AutomationRow;
  account: AccountRow;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the hook door's guards on POST /hooks/automations/{token}. */
    hookTarget: HookTarget;
  }
}

const tokenOf = (req: FastifyRequest): string => (req.params as { token?: string }).token ?? '';

export const hookDoor = (s: Services): Door<HookTarget> => ({
  credential: 'hook_token',
  cached: () => undefined,
  async lookup(req) {
    const automation = await automationByToken(s, tokenOf(req));
    return automation ? { automation, account: await getAccount(s.db, automation.account_id) } : null;
  },
  unknown: () => new ApiError('automation_hook_not_found'),
  blocked: () => new ApiError('ip_blocked'),
  admit(req, reply, target, ip) {
    req.hookTarget = target;
    const { account } = target;
    const caps = { accountId: account.id, plan: account.plan, limits: effectiveLimits(account.plan, account.limits) };
    return admitApiCall(reply, s, account, caps, ip, false);
  },
});
