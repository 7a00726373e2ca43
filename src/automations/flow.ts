// Flow definitions of automations (automations.md "Triggers" and "Steps"): the zod schemas of a
// trigger and of each step type, `validateFlow` (every problem of a flow at once, as a 400 lists
// them) and the helpers the runner uses to walk a flow. Pure: the database is reached only
// through the lookups the caller passes.
import { z } from 'zod';
import { ATTRIBUTE_KEY } from '../contacts/schemas.js';
import type { ValidationProblem } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import { Uuid } from '../http/schemas.js';
import { CONDITION_OPS, compilePattern, normalizeText } from './text.js';

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

// A min(1) failure already speaks for the empty string: these refinements only add blank text.
const notBlank = (s: string) => s === '' || s.trim() !== '';
const hasWords = (s: string) => s === '' || normalizeText(s) !== '';

// ---- Triggers ----

const Keyword = z
  .string()
  .min(1)
  .max(100)
  .refine(hasWords, { message: textFor('flow_keyword_blank') });

const KeywordTrigger = z.strictObject({
  type: z.literal('keyword'),
  keywords: z.array(Keyword).min(1).max(50),
  match: z.enum(['exact', 'contains']).default('exact'),
});
const FirstMessageTrigger = z.strictObject({ type: z.literal('first_message') });
const ApiTrigger = z.strictObject({ type: z.literal('api') });
const WebhookTrigger = z.strictObject({ type: z.literal('webhook') });
const CommentTrigger = z.strictObject({ type: z.literal('comment'), keywords: z.array(Keyword).max(50).optional() });

export const TRIGGER_TYPES = ['keyword', 'first_message', 'api', 'webhook', 'comment'] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];

const triggerSchemas = {
  keyword: KeywordTrigger,
  first_message: FirstMessageTrigger,
  api: ApiTrigger,
  webhook: WebhookTrigger,
  comment: CommentTrigger,
} satisfies Record<TriggerType, z.ZodType>;

/** What starts an automation (for route schemas and the OpenAPI; validateFlow reports its problems in Spanish). */
export const TriggerSchema = z.discriminatedUnion('type', [
  KeywordTrigger,
  FirstMessageTrigger,
  ApiTrigger,
  WebhookTrigger,
  CommentTrigger,
]);
export type Trigger = z.output<typeof TriggerSchema>;

// ---- Steps ----

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

const stepSchemas = {
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

/** Steps after which the execution ends: nothing follows them. */
const TERMINAL: ReadonlySet<string> = new Set<StepType>(['end', 'handoff', 'agent']);

// ---- Walking a flow ----

/**
 * The id of the step that runs after step `i` when it finishes normally: its `next`, else the
 * following step, else null (the flow ends `completed`).
 */
export function followingOf(steps: readonly { id: string | null; next?: string }[], i: number): string | null {
  return steps[i]?.next ?? steps[i + 1]?.id ?? null;
}

/** followingOf for a step of `steps` found by its id (a step not in the list: its `next`, or null). */
export function nextOf(step: Step, steps: readonly Step[]): string | null {
  const i = steps.findIndex((s) => s.id === step.id);
  return i === -1 ? (step.next ?? null) : followingOf(steps, i);
}

/** What the graph needs of a step: its id, type and the step ids it names. */
interface Shape {
  id: string | null;
  type: StepType | null;
  next?: string;
  then?: string;
  else?: string;
  onError?: string;
  timeoutNext?: string;
}

/** Fields that name another step, by step type (`next` on every one). */
const REFERENCES: Record<StepType, readonly (keyof Shape)[]> = {
  send: ['next'],
  ask: ['next', 'timeoutNext'],
  condition: ['next', 'then', 'else'],
  http: ['next', 'onError'],
  set_attribute: ['next'],
  wait: ['next'],
  stage: ['next'],
  agent: ['next'],
  handoff: ['next'],
  end: ['next'],
};

/**
 * The step ids step `i` can go to: none after end/handoff/agent; a condition's `then` and `else`
 * (each defaulting to the normal following step); an http step's `onError` and an ask's
 * `timeoutNext` besides the following step.
 */
function successors(shapes: readonly Shape[], i: number): string[] {
  const s = shapes[i];
  if (s.type === null || TERMINAL.has(s.type)) return [];
  const after = followingOf(shapes, i);
  const targets =
    s.type === 'condition'
      ? [s.then ?? after, s.else ?? after]
      : s.type === 'http'
        ? [after, s.onError]
        : s.type === 'ask'
          ? [after, s.timeoutNext]
          : [after];
  return targets.filter((t): t is string => typeof t === 'string');
}

/** Strongly connected components of a graph of `n` nodes (Tarjan; at most MAX_STEPS nodes, so recursion is fine). */
function stronglyConnected(n: number, edges: readonly number[][]): number[][] {
  const index = new Array<number>(n).fill(-1);
  const low = new Array<number>(n).fill(0);
  const onStack = new Array<boolean>(n).fill(false);
  const stack: number[] = [];
  const components: number[][] = [];
  let counter = 0;
  const visit = (v: number): void => {
    index[v] = low[v] = counter++;
    stack.push(v);
    onStack[v] = true;
    for (const w of edges[v]) {
      if (index[w] === -1) {
        visit(w);
        low[v] = Math.min(low[v], low[w]);
      } else if (onStack[w]) low[v] = Math.min(low[v], index[w]);
    }
    if (low[v] === index[v]) {
      const component: number[] = [];
      let w: number;
      do {
        w = stack.pop()!;
        onStack[w] = false;
        component.push(w);
      } while (w !== v);
      components.push(component);
    }
  };
  for (let v = 0; v < n; v++) if (index[v] === -1) visit(v);
  return components;
}

/**
 * Cycles no answer or timer stops (automations.md: "a cycle without an ask or wait in it"): the
 * components with a cycle of the graph without its ask and wait steps, each as the step indexes
 * in flow order. Leaving those steps out catches a loop that bypasses the ask of a bigger loop.
 */
function cyclesWithoutPause(shapes: readonly Shape[]): number[][] {
  const idIndex = new Map<string, number>();
  shapes.forEach((s, i) => {
    if (s.id !== null && !idIndex.has(s.id)) idIndex.set(s.id, i);
  });
  const pauses = (i: number) => shapes[i].type === 'ask' || shapes[i].type === 'wait';
  const edges = shapes.map((_, i) =>
    pauses(i)
      ? []
      : successors(shapes, i)
          .map((id) => idIndex.get(id))
          .filter((j): j is number => j !== undefined && !pauses(j)),
  );
  return stronglyConnected(shapes.length, edges)
    .filter((c) => c.length > 1 || edges[c[0]].includes(c[0]))
    .map((c) => c.sort((a, b) => a - b))
    .sort((a, b) => a[0] - b[0]);
}

// ---- Validation ----

/** Answers about the account's own records, asked while validating (the caller reaches the database). */
export interface FlowLookups {
  templateOfAccount(id: string): Promise<boolean>;
  stageOfAccount(id: string): Promise<boolean>;
  /** An agent of the account, not deleted (its status is checked when the step runs). */
  agentOfAccount(id: string): Promise<boolean>;
}

export type FlowValidation = { ok: true; trigger: Trigger; steps: Step[] } | { ok: false; problems: ValidationProblem[] };

/** One problem per zod issue under `prefix`; an unknown key is a problem of its own, at its path (as src/app.ts does for bodies). */
function problemsOf(prefix: (string | number)[], issues: readonly z.core.$ZodIssue[]): ValidationProblem[] {
  return issues.flatMap((i) => {
    const path = [...prefix, ...i.path.map((p) => (typeof p === 'number' ? p : String(p)))];
    if (i.code === 'unrecognized_keys') return i.keys.map((k) => ({ path: [...path, k], message: textFor('unknown_field') }));
    return [{ path, message: i.message }];
  });
}

const AnObject = z.looseObject({});

/**
 * Parses an object whose `type` picks its schema (a trigger or a step): not an object, no type or an
 * unknown type is one problem; else the problems of that type's schema. Returns the parsed value
 * (null when it has problems) and the raw object (null when it is not one).
 */
function parseTyped<T extends string>(
  value: unknown,
  path: (string | number)[],
  schemas: Record<T, z.ZodType>,
  unknownType: 'flow_trigger_type' | 'flow_step_type',
  problems: ValidationProblem[],
): { parsed: unknown; raw: Record<string, unknown> | null; type: T | null } {
  const obj = AnObject.safeParse(value);
  if (!obj.success) {
    problems.push(...problemsOf(path, obj.error.issues));
    return { parsed: null, raw: null, type: null };
  }
  const raw = obj.data as Record<string, unknown>;
  const types = Object.keys(schemas).join(', ');
  if (raw.type === undefined) {
    problems.push({ path: [...path, 'type'], message: textFor('flow_type_missing', { types }) });
    return { parsed: null, raw, type: null };
  }
  if (typeof raw.type !== 'string' || !Object.hasOwn(schemas, raw.type)) {
    problems.push({ path: [...path, 'type'], message: textFor(unknownType, { types }) });
    return { parsed: null, raw, type: null };
  }
  const type = raw.type as T;
  const r = schemas[type].safeParse(raw);
  if (!r.success) {
    problems.push(...problemsOf(path, r.error.issues));
    return { parsed: null, raw, type };
  }
  return { parsed: r.data, raw, type };
}

/** A raw field that may name a step: a non-blank string, else nothing (its own problem is zod's). */
const refOf = (raw: Record<string, unknown> | null, field: string): string | undefined => {
  const value = raw?.[field];
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
};

/** Asks a lookup once per id. */
function cached(ask: (id: string) => Promise<boolean>): (id: string) => Promise<boolean> {
  const answers = new Map<string, Promise<boolean>>();
  return (id) => {
    let answer = answers.get(id);
    if (answer === undefined) {
      answer = ask(id);
      answers.set(id, answer);
    }
    return answer;
  };
}

/**
 * Validates a flow as it is saved (automations.md: "A flow is validated when saved"), reporting
 * every problem at once with its path (['trigger', 'keywords'], ['steps', 3, 'timeoutMinutes']):
 * the trigger and each step against its type's schema (unknown types and fields included), the
 * number of steps, duplicate ids, a next/then/else/onError/timeoutNext naming no step, a template,
 * stage or agent that is not the account's, a
 * `matches` regex that is long, broken or unsafe, and a cycle without an ask or wait in it.
 */
export async function validateFlow(input: { trigger: unknown; steps: unknown }, lookups: FlowLookups): Promise<FlowValidation> {
  const problems: ValidationProblem[] = [];
  const trigger = parseTyped(input.trigger, ['trigger'], triggerSchemas, 'flow_trigger_type', problems).parsed as Trigger | null;

  const list = z.array(z.unknown()).min(1).max(MAX_STEPS).safeParse(input.steps);
  if (!list.success) {
    // Not a list, empty or too long: its entries are not validated one by one.
    problems.push(...problemsOf(['steps'], list.error.issues));
    return { ok: false, problems };
  }

  const parsedSteps = list.data.map((value, i) => parseTyped(value, ['steps', i], stepSchemas, 'flow_step_type', problems));

  // The graph of the flow, from the raw objects: a step with problems still has its id and links.
  const shapes: Shape[] = parsedSteps.map(({ raw, type }) => {
    const shape: Shape = { id: refOf(raw, 'id') ?? null, type };
    for (const field of type ? REFERENCES[type] : []) {
      const ref = refOf(raw, field);
      if (ref !== undefined) shape[field as 'next'] = ref;
    }
    return shape;
  });

  const firstWithId = new Map<string, number>();
  shapes.forEach((s, i) => {
    if (s.id === null) return;
    if (firstWithId.has(s.id)) problems.push({ path: ['steps', i, 'id'], message: textFor('flow_step_id_duplicate', { id: s.id }) });
    else firstWithId.set(s.id, i);
  });

  shapes.forEach((s, i) => {
    for (const field of s.type ? REFERENCES[s.type] : []) {
      const ref = s[field];
      if (typeof ref === 'string' && !firstWithId.has(ref)) {
        problems.push({ path: ['steps', i, field], message: textFor('flow_step_unknown', { id: ref }) });
      }
    }
  });

  // The account's own records, each id asked once.
  const templateOk = cached((id) => lookups.templateOfAccount(id));
  const stageOk = cached((id) => lookups.stageOfAccount(id));
  const agentOk = cached((id) => lookups.agentOfAccount(id));
  for (const [i, { parsed }] of parsedSteps.entries()) {
    const step = parsed as Step | null;
    if (step === null) continue;
    if (step.type === 'send' && step.template && !(await templateOk(step.template.id))) {
      problems.push({ path: ['steps', i, 'template', 'id'], message: textFor('flow_template_not_found') });
    } else if (step.type === 'stage' && !(await stageOk(step.stageId))) {
      problems.push({ path: ['steps', i, 'stageId'], message: textFor('flow_stage_not_found') });
    } else if (step.type === 'agent' && !(await agentOk(step.agentId))) {
      problems.push({ path: ['steps', i, 'agentId'], message: textFor('agent_ref_not_found') });
    }
  }

  for (const cycle of cyclesWithoutPause(shapes)) {
    const ids = cycle.map((i) => `"${shapes[i].id}"`).join(', ');
    problems.push({ path: ['steps', cycle[0]], message: textFor('flow_cycle', { ids, count: cycle.length }) });
  }

  if (problems.length > 0 || trigger === null) return { ok: false, problems };
  return { ok: true, trigger, steps: parsedSteps.map((p) => p.parsed as Step) };
}
