// The Automation and Execution resources (docs/automations.md), as the public and operator APIs show them.
import { z } from 'zod';
import type { AutomationRow, ExecutionRow, StepLogRow } from '../db/types.js';
import { iso, Timestamp, Uuid } from '../http/schemas.js';
import { type Keyring, openOrNull } from '../secrets/keyring.js';
import { viewStepHeaders } from '../secrets/steps.js';
import { startsPerMinute } from './loops.js';

export const AUTOMATION_STATUSES = ['draft', 'active', 'paused'] as const;
export const EXECUTION_STATUSES = ['running', 'completed', 'handed_off', 'failed', 'cancelled'] as const;

const Json = z.record(z.string(), z.unknown());

export const AutomationView = z
  .object({
    id: Uuid,
    name: z.string(),
    status: z.enum(AUTOMATION_STATUSES).describe('Only `active` automations start'),
    trigger: Json.describe('keyword {keywords, match} | first_message | api | webhook | comment {keywords?}'),
    steps: z.array(Json).describe('The flow (docs/automations.md, "Steps")'),
    phoneNumberId: Uuid.nullable().describe('The number it listens on and sends from; null: the account default'),
    webhookUrl: z.string().nullable().describe('The incoming webhook (trigger `webhook`); a secret: shown to the operator only'),
    startsPerMinute: z
      .number()
      .int()
      .describe('Starts a minute it may take (default 600; operator only): past it the webhook and the API answer 429'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .describe('Automation');
export type AutomationView = z.infer<typeof AutomationView>;

/** GET /api/v1/automations shows neither the steps nor the webhook URL (nor the operator's start rate). */
export const PublicAutomationView = AutomationView.omit({ steps: true, webhookUrl: true, startsPerMinute: true }).describe('Automation');

export const ExecutionView = z
  .object({
    id: Uuid,
    automationId: Uuid,
    conversationId: Uuid,
    contactId: Uuid,
    status: z.enum(EXECUTION_STATUSES),
    error: z.string().nullable().describe('The Spanish reason when `failed`'),
    variables: Json.describe('webhook, saved answers, respuesta, http results, comentario'),
    currentStepId: z.string().nullable(),
    test: z.boolean(),
    startedAt: Timestamp,
    endedAt: Timestamp.nullable(),
  })
  .describe('Execution');
export type ExecutionView = z.infer<typeof ExecutionView>;

export const StepLogView = z.object({
  stepId: z.string(),
  type: z.string(),
  startedAt: Timestamp,
  endedAt: Timestamp.nullable(),
  outcome: z.string().nullable().describe('ok, then, else, answered, retry, timeout, error, failed, interrupted, …'),
  detail: Json.nullable(),
});

export type StepLogView = z.infer<typeof StepLogView>;

export const ExecutionWithSteps = ExecutionView.extend({ steps: z.array(StepLogView).describe('The step log, oldest first') });

/** The incoming webhook's URL: PUBLIC_URL (or http://HOST:PORT) + /hooks/automations/{token}. */
export const webhookUrlOf = (base: string, token: string | null): string | null =>
  token ? `${base.replace(/\/+$/, '')}/hooks/automations/${token}` : null;

/**
 * The operator's view: the flow as its author wrote it (header values opened: it is the flow's
 * editor, and a masked value would be saved back over the real one; docs/automations.md) and the
 * incoming webhook's URL. /api/v1 shows neither.
 */
export function automationView(a: AutomationRow, baseUrl: string, ring: Keyring): AutomationView {
  return {
    id: a.id,
    name: a.name,
    status: a.status,
    trigger: a.trigger,
    steps: viewStepHeaders(a.steps, ring),
    phoneNumberId: a.phone_number_id,
    webhookUrl: webhookUrlOf(baseUrl, openOrNull(ring, a.webhook_token, 'automations.webhook_token')),
    startsPerMinute: startsPerMinute(a),
    createdAt: a.created_at.toISOString(),
    updatedAt: a.updated_at.toISOString(),
  };
}

export const publicAutomationView = (a: AutomationRow) => ({
  id: a.id,
  name: a.name,
  status: a.status,
  trigger: a.trigger,
  phoneNumberId: a.phone_number_id,
  createdAt: a.created_at.toISOString(),
  updatedAt: a.updated_at.toISOString(),
});

export function executionView(e: ExecutionRow): ExecutionView {
  return {
    id: e.id,
    automationId: e.automation_id,
    conversationId: e.conversation_id,
    contactId: e.contact_id,
    status: e.status,
    error: e.error,
    variables: e.variables,
    currentStepId: e.current_step_id,
    test: e.test,
    startedAt: e.started_at.toISOString(),
    endedAt: iso(e.ended_at),
  };
}

export const stepLogView = (r: StepLogRow): StepLogView => ({
  stepId: r.step_id,
  type: r.type,
  startedAt: r.started_at.toISOString(),
  endedAt: iso(r.ended_at),
  outcome: r.outcome,
  detail: r.detail,
});
