// Steps of automations (automations.md "Steps"): the zod schema of each step type and the limits
// of a flow. validateFlow (flow.ts) reports their problems in Spanish.
import { z } from 'zod';
import { ATTRIBUTE_KEY } from '../contacts/schemas.js';
import { textFor } from '../http/messages.es-AR.js';
import { Uuid } from '../http/schemas.js';
import { CONDITION_OPS, compilePattern } from './text.js';

/** Steps one flow may hold. */
export const MAX_STEPS = 200;
/** Characters of a `matches` regex. */
export const MAX_REGEX = 100;
/** Headers of one `http` step. */
export const MAX_HTTP_HEADERS = 30;
/** Names of execution variables (`ask.save`, `http.save`). */
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** An HTTP header name: an RFC 9110 token. */
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;

// A min(1) failure already speaks for the empty string: this refinement only adds blank text.
const notBlank = (s: string) => s === '' || s.trim() !== '';

const StepId = z
  .string()
  .min(1)
  .max(64)
  .refine(notBlank, { message: textFor('flow_step_id_blank') });
const MessageText = z
  .string()
  .min(1)
  .max(4096)
  .refine(notBlank, { message: textFor('text_blank') });
const VariableName = z.string().regex(VARIABLE_NAME, { message: textFor('flow_variable_name') });

/** Fields every step has: `id`, and `next` (a step id; without it, the following step runs). */
const common = { id: StepId, next: StepId.optional() };

const SendStep = z
  .strictObject({
    ...common,
    type: z.literal('send'),
    text: MessageText.optional(),
    template: z.strictObject({ id: Uuid, variables: z.record(z.string(), z.string()).optional() }).optional(),
  })
  // Checked even when a field has problems of its own (`when`): all problems are reported at once.
  .refine((s) => s.text !== undefined || s.template !== undefined, {
    message: textFor('flow_send_text_or_template'),
    path: ['text'],
    when: () => true,
  })
  .refine((s) => s.text === undefined || s.template === undefined, {
    message: textFor('flow_send_text_or_template'),
    path: ['template'],
    when: () => true,
  });

const AskStep = z.strictObject({
  ...common,
  type: z.literal('ask'),
  text: MessageText,
  save: VariableName,
  options: z.array(z.string().min(1).max(100)).min(1).max(10).optional(),
  timeoutMinutes: z.number().int().min(1).max(10_080).default(1440),
  timeoutNext: StepId.optional(),
});

/**
 * The problem of a `matches` regex, or null: at most MAX_REGEX characters and RE2 compiles it
 * (text.ts compilePattern: matched in linear time, so no pattern can block the server).
 */
export function regexProblem(source: string): string | null {
  if (source.length > MAX_REGEX) return textFor('flow_regex_too_long', { max: MAX_REGEX });
  const compiled = compilePattern(source);
  if (compiled.ok) return null;
  return textFor(compiled.problem === 'unsupported' ? 'flow_regex_unsupported' : 'flow_regex_invalid');
}

const ConditionIf = z
  .strictObject({
    var: z.string().min(1).max(200),
    op: z.enum(CONDITION_OPS),
    value: z.string().max(1000).optional(),
  })
  .superRefine((c, ctx) => {
    if (c.op !== 'exists' && c.value === undefined)
      ctx.addIssue({ code: 'custom', message: textFor('flow_condition_value'), path: ['value'] });
    const problem = c.op === 'matches' && c.value !== undefined ? regexProblem(c.value) : null;
    if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['value'] });
  });

const ConditionStep = z.strictObject({
  ...common,
  type: z.literal('condition'),
  if: ConditionIf,
  // biome-ignore lint/suspicious/noThenProperty: automations.md names the field `then` (a step id, never a function)
  then: StepId.optional(),
  else: StepId.optional(),
});

const HttpStep = z.strictObject({
  ...common,
  type: z.literal('http'),
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
  url: z
    .string()
    .min(1)
    .max(2000)
    .refine((u) => u === '' || /^(https?:\/\/|\{\{\{[^{}]*\}\}\})/i.test(u), { message: textFor('flow_http_url') })
    .refine((u) => !/^https?:\/\/[^/?#]*\{\{\{/i.test(u), { message: textFor('flow_http_url_raw_host') }),
  headers: z
    .record(z.string().regex(HEADER_NAME), z.string(), {
      error: (iss) => (iss.code === 'invalid_key' ? textFor('flow_http_header_name') : undefined),
    })
    .refine((h) => Object.keys(h).length <= MAX_HTTP_HEADERS, {
      message: textFor('flow_http_headers_many', { max: MAX_HTTP_HEADERS }),
    })
    .optional(),
  body: z.unknown().optional(),
  save: VariableName.optional(),
  timeoutMs: z.number().int().min(100).max(15_000).default(10_000),
  onError: StepId.optional(),
});

const SetAttributeStep = z.strictObject({
  ...common,
  type: z.literal('set_attribute'),
  attribute: z.string().regex(ATTRIBUTE_KEY, { message: textFor('attribute_key_invalid') }),
  value: z.string().max(1000),
});

const WaitStep = z.strictObject({ ...common, type: z.literal('wait'), minutes: z.number().int().min(1).max(43_200) });
const StageStep = z.strictObject({ ...common, type: z.literal('stage'), stageId: Uuid });
const AgentStep = z.strictObject({ ...common, type: z.literal('agent'), agentId: Uuid });
const HandoffStep = z.strictObject({ ...common, type: z.literal('handoff'), note: z.string().max(2000).optional() });
const EndStep = z.strictObject({ ...common, type: z.literal('end') });

export const STEP_TYPES = ['send', 'ask', 'condition', 'http', 'set_attribute', 'wait', 'stage', 'agent', 'handoff', 'end'] as const;
export type StepType = (typeof STEP_TYPES)[number];

export const stepSchemas = {
  send: SendStep,
  ask: AskStep,
  condition: ConditionStep,
  http: HttpStep,
  set_attribute: SetAttributeStep,
  wait: WaitStep,
  stage: StageStep,
  agent: AgentStep,
  handoff: HandoffStep,
  end: EndStep,
} satisfies Record<StepType, z.ZodType>;

/** One step (for route schemas and the OpenAPI; validateFlow reports its problems in Spanish). */
export const StepSchema = z.discriminatedUnion('type', [
  SendStep,
  AskStep,
  ConditionStep,
  HttpStep,
  SetAttributeStep,
  WaitStep,
  StageStep,
  AgentStep,
  HandoffStep,
  EndStep,
]);
export type Step = z.output<typeof StepSchema>;
export type StepOf<T extends StepType> = Extract<Step, { type: T }>;
