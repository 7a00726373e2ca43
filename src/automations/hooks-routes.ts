// The incoming webhook of an automation: POST /hooks/automations/{token} (docs/api.md). No key:
// the token (43 random characters) is the secret. It is an API call of the account: the same
// order of checks as /api/v1 (decisions.md "Errors") with the token in the key's place — plan
// (402), minute cap and monthly quota (429), then the body; the whole body lands in
// `variables.webhook`.
import { z } from 'zod';
import { getAccount } from '../accounts/service.js';
import { ApiError, invalid } from '../http/errors.js';
import { clientIp } from '../http/guards.js';
import { textFor } from '../http/messages.es-AR.js';
import { errors, type RoutesFn, Uuid } from '../http/schemas.js';
import { effectiveLimits, planHasApi } from '../limits/plans.js';
import { startExecution } from './executions.js';
import { hopOf } from './loops.js';
import { automationByToken } from './service.js';

const HookParams = z.object({ token: z.string().max(200).describe('The secret part of the webhook URL') });

export const automationHookRoutes: RoutesFn = (app, s) => {
  app.post(
    '/hooks/automations/:token',
    {
      schema: {
        summary: "Start an automation through its incoming webhook (an API call of the automation's account)",
        tags: ['Automations'],
        security: [],
        params: HookParams,
        body: z.unknown().describe('Any JSON object with `phone`; the whole object lands in variables.webhook'),
        response: { 202: z.object({ executionId: Uuid }), ...errors(400, 402, 404, 409, 429, 508) },
      },
    },
    async (req, reply) => {
      const ip = clientIp(req.raw, s.config.trustProxy);
      if (s.limiter.ipBlocked(ip)) throw new ApiError('ip_blocked');
      const automation = await automationByToken(s.db, req.params.token);
      if (!automation) throw new ApiError('automation_hook_not_found');
      const account = await getAccount(s.db, automation.account_id);
      if (!planHasApi(account.plan)) {
        s.usage.countApiCall(account.id);
        throw new ApiError('plan_without_api', {
          params: { plan: account.plan },
          cause: { type: 'upgrade', reason: 'plan', resource: 'api', plan: account.plan, limit: null, used: null, suggested: 'escala' },
        });
      }
      const caps = { accountId: account.id, plan: account.plan, limits: effectiveLimits(account.plan, account.limits) };
      const outcome = await s.limiter.admit(caps, { ip, message: false });
      for (const k in outcome.headers) reply.header(k, outcome.headers[k]);
      if (outcome.error) throw outcome.error;
      s.usage.countApiCall(account.id);

      const body = req.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid([], textFor('automation_hook_object'));
      const phone = (body as Record<string, unknown>).phone;
      if (typeof phone !== 'string' || phone.trim() === '') throw invalid(['phone'], textFor('automation_hook_phone'));
      const execution = await startExecution(s, {
        account,
        automation,
        to: phone,
        variables: { webhook: body },
        trigger: 'webhook',
        hop: hopOf(req.headers),
      });
      s.automations.wake();
      return reply.code(202).send({ executionId: execution.id });
    },
  );
};
