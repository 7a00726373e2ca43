// The incoming webhook of an automation: POST /hooks/automations/{token} (docs/api.md). No key:
// the token (43 random characters) is the secret. It is an API call of the account: the guard
// pipeline of every door (http/guards.ts) with the token as the credential (hook-door.ts) — IP
// block (429), token (404), plan (402), minute cap and monthly quota (429) — then the body; the
// whole body lands in `variables.webhook`.
import { z } from 'zod';
import { invalid } from '../http/errors.js';
import { installGuards } from '../http/guards.js';
import { textFor } from '../http/messages.es-AR.js';
import { errors, type RoutesFn, Uuid } from '../http/schemas.js';
import { startExecution } from './executions.js';
import { hookDoor } from './hook-door.js';
import { hopOf } from './loops.js';

const HookParams = z.object({ token: z.string().max(200).describe('The secret part of the webhook URL') });

export const automationHookRoutes: RoutesFn = (app, s) => {
  app.decorateRequest('hookTarget', null as never);
  installGuards(app, s, hookDoor(s));
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
      const { automation, account } = req.hookTarget;
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
