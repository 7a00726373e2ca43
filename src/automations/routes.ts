// GET /automations, POST /automations/{id}/executions, GET /automations/{id}/executions/{executionId}
// (docs/api.md "Automations"). Counted as API calls like every /api/v1 route.
import { z } from 'zod';
import { errors, IdParams, type RoutesFn, Uuid } from '../http/schemas.js';
import { getExecutionRow, startAndSettle } from './executions.js';
import { hopOf } from './loops.js';
import { getAutomationRow, listAutomationRows } from './service.js';
import { ExecutionView, executionView, PublicAutomationView, publicAutomationView } from './view.js';

/** Values the caller hands the flow: text by name (`{{name}}` in its steps). */
export const StartVariables = z
  .record(z.string().min(1).max(64), z.string().max(4096))
  .refine((v) => Object.keys(v).length <= 100, { message: 'Como máximo 100 variables.' })
  .describe('Text values the flow reads as {{name}} (at most 100)');

const StartBody = z.strictObject({
  to: z.string().min(1).max(40).describe('The customer phone, international format'),
  phoneNumberId: Uuid.optional().describe('The number to write from (default: the automation’s, else the account default)'),
  variables: StartVariables.optional(),
});

const ExecutionParams = z.object({ id: Uuid, executionId: Uuid });

export const automationRoutes: RoutesFn = (app, s) => {
  app.get(
    '/automations',
    {
      schema: {
        summary: "The account's automations, newest first (without their steps)",
        tags: ['Automations'],
        response: { 200: z.object({ data: z.array(PublicAutomationView) }), ...errors(401, 402, 429) },
      },
    },
    async (req) => ({ data: (await listAutomationRows(s.db, req.auth.account.id)).map(publicAutomationView) }),
  );

  app.post(
    '/automations/:id/executions',
    {
      schema: {
        summary: 'Start an automation for a phone (201: running, or already ended for short flows)',
        tags: ['Automations'],
        params: IdParams,
        body: StartBody,
        response: { 201: ExecutionView, ...errors(400, 401, 402, 404, 409, 429, 508) },
      },
    },
    async (req, reply) => {
      const account = req.auth.account;
      const automation = await getAutomationRow(s.db, account.id, req.params.id);
      const execution = await startAndSettle(s, {
        account,
        automation,
        to: req.body.to,
        phoneNumberId: req.body.phoneNumberId,
        variables: req.body.variables,
        trigger: 'api',
        hop: hopOf(req.headers),
      });
      return reply.code(201).send(execution);
    },
  );

  app.get(
    '/automations/:id/executions/:executionId',
    {
      schema: {
        summary: 'One execution of the automation: status, variables, current step',
        tags: ['Automations'],
        params: ExecutionParams,
        response: { 200: ExecutionView, ...errors(400, 401, 402, 404, 429) },
      },
    },
    async (req) => executionView(await getExecutionRow(s.db, req.auth.account.id, req.params.id, req.params.executionId)),
  );
};
