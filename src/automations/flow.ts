// Flow definitions of automations (automations.md "Triggers" and "Steps"): `validateFlow` (every
// problem of a flow at once, as a 400 lists them). The schemas of a trigger and of each step type
// are in flow-triggers.ts and flow-steps.ts, the helpers the runner uses to walk a flow in
// flow-graph.ts; this module is what the rest of the code imports. Pure: the database is reached
// only through the lookups the caller passes.
import { z } from 'zod';
import type { ValidationProblem } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import { isPrivateLiteral } from '../webhooks/ssrf.js';
import { cyclesWithoutPause, REFERENCES, type Shape } from './flow-graph.js';
import { MAX_STEPS, type Step, stepSchemas } from './flow-steps.js';
import { type Trigger, triggerSchemas } from './flow-triggers.js';

export { followingOf, nextOf } from './flow-graph.js';
export { STEP_TYPES, type Step, type StepOf } from './flow-steps.js';
export type { Trigger } from './flow-triggers.js';

/** Answers about the account's own records, asked while validating (the caller reaches the database). */
export interface FlowLookups {
  templateOfAccount(id: string): Promise<boolean>;
  stageOfAccount(id: string): Promise<boolean>;
  /** An agent of the account, not deleted (its status is checked when the step runs). */
  agentOfAccount(id: string): Promise<boolean>;
}

export interface FlowOptions {
  /**
   * The private-address guard (ALLOW_PRIVATE_WEBHOOKS off): an http step whose URL's host is a
   * literal loopback, private or link-local address is refused, as a webhook URL is.
   */
  refusePrivateUrls: boolean;
}

/**
 * An http step's URL whose host is a literal non-public address (the webhooks' SSRF check). A URL
 * that does not parse as it is (one that starts with {{{var}}}, a {{var}} in its host or port)
 * cannot be checked here: the step checks it when it runs.
 */
function privateLiteralUrl(raw: string): boolean {
  try {
    return isPrivateLiteral(new URL(raw));
  } catch {
    return false;
  }
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
 * `matches` regex that is long, broken or unsafe, a cycle without an ask or wait in it, and (with
 * the private-address guard on) an http step's URL to a literal private or local address.
 */
export async function validateFlow(
  input: { trigger: unknown; steps: unknown },
  lookups: FlowLookups,
  options: FlowOptions,
): Promise<FlowValidation> {
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
    } else if (step.type === 'http' && options.refusePrivateUrls && privateLiteralUrl(step.url)) {
      problems.push({ path: ['steps', i, 'url'], message: textFor('flow_http_url_private') });
    }
  }

  for (const cycle of cyclesWithoutPause(shapes)) {
    const ids = cycle.map((i) => `"${shapes[i].id}"`).join(', ');
    problems.push({ path: ['steps', cycle[0]], message: textFor('flow_cycle', { ids, count: cycle.length }) });
  }

  if (problems.length > 0 || trigger === null) return { ok: false, problems };
  return { ok: true, trigger, steps: parsedSteps.map((p) => p.parsed as Step) };
}
