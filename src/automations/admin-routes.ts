// Operator API: automations, their executions and test runs (docs/operator.md "Automations").
import { z } from 'zod';
import { CursorQuery, IdParams, NoBody, type RoutesFn, Uuid } from '../http/schemas.js';
import { cancelExecution, getExecutionWithSteps, listExecutions, startAndSettle } from './executions.js';
import { StartVariables } from './routes.js';
import {
  createAutomation,
  deleteAutomation,
  getAutomation,
  getAutomationRow,
  listAutomations,
  rotateWebhook,
  updateAutomation,
} from './service.js';
import { AUTOMATION_STATUSES, AutomationView, EXECUTION_STATUSES, ExecutionView, ExecutionWithSteps } from './view.js';

const Name = z.string().trim().min(1).max(120);
const Trigger = z
  .record(z.string(), z.unknown())
  .describe('{type: keyword, keywords, match} | {type: first_message} | {type: api} | {type: webhook} | {type: comment, keywords?}');
const Steps = z.array(z.record(z.string(), z.unknown())).describe('1 to 200 steps (docs/automations.md "Steps"); validated as a whole');

const StartsPerMinute = z
  .number()
  .int()
  .min(1)
  .max(100_000)
  .nullable()
  .describe('Starts a minute it may take (1–100,000); null: the default, 600 (docs/automations.md "Loops")');

const AutomationCreate = z.strictObject({
  name: Name,
  status: z.enum(AUTOMATION_STATUSES).optional().describe('Default draft; only active automations start'),
  trigger: Trigger,
  steps: Steps,
  phoneNumberId: Uuid.nullable().optional().describe('The number it listens on and sends from; null: the account default'),
  startsPerMinute: StartsPerMinute.optional(),
});

const AutomationPatch = z.strictObject({
  name: Name.optional(),
  status: z.enum(AUTOMATION_STATUSES).optional().describe('Leaving active cancels the running executions'),
  trigger: Trigger.optional(),
  steps: Steps.optional(),
  phoneNumberId: Uuid.nullable().optional(),
  startsPerMinute: StartsPerMinute.optional(),
});

const Count = z.number().int();
const AutomationListItem = AutomationView.extend({
  executions: z
    .object({ running: Count, completed: Count, handed_off: Count, failed: Count, cancelled: Count })
    .describe('Executions by status: the running ones whenever they started, the others of the last 30 days (by startedAt)'),
});

const AutomationParams = z.object({ id: Uuid, automationId: Uuid });
const ExecutionParams = z.object({ id: Uuid, automationId: Uuid, executionId: Uuid });
const ExecutionQuery = CursorQuery.extend({ status: z.enum(EXECUTION_STATUSES).optional() });
const TestBody = z.strictObject({
  to: z.string().min(1).max(40).describe('The phone to run it with (the sandbox test numbers work)'),
  variables: StartVariables.optional(),
});

export const automationAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/automations',
    {
      schema: {
        summary: 'Create an automation (validated as a whole: 400 lists every problem)',
        tags: ['Operator'],
        params: IdParams,
        body: AutomationCreate,
        response: { 201: AutomationView },
      },
    },
    async (req, reply) => {
      return reply.code(201).send(await createAutomation(s, req.params.id, req.body));
    },
  );

  app.get(
    '/accounts/:id/automations',
    {
      schema: {
        summary: "The account's automations, newest first, each with its execution counts",
        tags: ['Operator'],
        params: IdParams,
        response: { 200: z.object({ data: z.array(AutomationListItem) }) },
      },
    },
    async (req) => {
      return { data: await listAutomations(s, req.params.id) };
    },
  );

  app.get(
    '/accounts/:id/automations/:automationId',
    { schema: { summary: 'One automation with its steps and webhook URL', tags: ['Operator'], params: AutomationParams } },
    async (req) => getAutomation(s, req.params.id, req.params.automationId),
  );

  app.patch(
    '/accounts/:id/automations/:automationId',
    {
      schema: {
        summary: 'Change name, status, trigger, steps, number or start rate (pausing cancels running executions)',
        tags: ['Operator'],
        params: AutomationParams,
        body: AutomationPatch,
      },
    },
    async (req) => updateAutomation(s, req.params.id, req.params.automationId, req.body),
  );

  app.delete(
    '/accounts/:id/automations/:automationId',
    { schema: { summary: 'Delete an automation (its running executions are cancelled)', tags: ['Operator'], params: AutomationParams } },
    async (req, reply) => {
      await deleteAutomation(s, req.params.id, req.params.automationId);
      return reply.code(204).send();
    },
  );

  app.post(
    '/accounts/:id/automations/:automationId/rotate-webhook',
    {
      schema: {
        summary: 'A new incoming-webhook URL (the old one stops working at once)',
        tags: ['Operator'],
        params: AutomationParams,
        body: NoBody,
      },
    },
    async (req) => rotateWebhook(s, req.params.id, req.params.automationId),
  );

  app.get(
    '/accounts/:id/automations/:automationId/executions',
    {
      schema: {
        summary: "The automation's executions, newest first",
        tags: ['Operator'],
        params: AutomationParams,
        querystring: ExecutionQuery,
        response: { 200: z.object({ data: z.array(ExecutionView), hasMore: z.boolean() }) },
      },
    },
    async (req) => {
      const a = await getAutomationRow(s.db, req.params.id, req.params.automationId);
      return listExecutions(s.db, req.params.id, a.id, req.query);
    },
  );

  app.get(
    '/accounts/:id/automations/:automationId/executions/:executionId',
    {
      schema: {
        summary: 'One execution with its step log',
        tags: ['Operator'],
        params: ExecutionParams,
        response: { 200: ExecutionWithSteps },
      },
    },
    async (req) => getExecutionWithSteps(s.db, req.params.id, req.params.automationId, req.params.executionId),
  );

  app.post(
    '/accounts/:id/automations/:automationId/executions/:executionId/cancel',
    {
      schema: {
        summary: 'Stop a running execution (no event)',
        tags: ['Operator'],
        params: ExecutionParams,
        body: NoBody,
        response: { 200: ExecutionView },
      },
    },
    async (req) => cancelExecution(s, req.params.id, req.params.automationId, req.params.executionId),
  );

  app.post(
    '/accounts/:id/automations/:automationId/test',
    {
      schema: {
        summary: 'Run the flow for real as a test: counts no quota, emits no automation.* event (any status)',
        tags: ['Operator'],
        params: AutomationParams,
        body: TestBody,
        response: { 201: ExecutionView },
      },
    },
    async (req, reply) => {
      const { account } = req;
      const automation = await getAutomationRow(s.db, account.id, req.params.automationId);
      const execution = await startAndSettle(s, { account, automation, to: req.body.to, variables: req.body.variables, trigger: 'test' });
      return reply.code(201).send(execution);
    },
  );
};
