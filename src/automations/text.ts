// Text of automations (automations.md "Triggers" and "Steps"): the normaliser keywords and
// conditions compare with, keyword matching, `{{…}}` templates and the `condition` step's
// comparisons. Pure functions: no database, no clock.
import { RE2JS } from 're2js';

/** What templates and conditions read: the execution's variables, the contact's attributes and the contact. */
export interface TextContext {
  variables: Record<string, unknown>;
  attributes: Record<string, string>;
  contact: { name: string | null; phone: string | null };
}

/**
 * Lower case, accents removed, punctuation turned into spaces, spaces collapsed and trimmed
 * (automations.md: "lower case, accents and punctuation removed, spaces collapsed").
 * "¿Precio?" → "precio", "Envío  GRATIS!!" → "envio gratis".
 */
export function normalizeText(s: string): string {
  return s.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase().replace(/\p{P}/gu, ' ').replace(/\s+/gu, ' ').trim();
}

/**
 * Whether an inbound text fires a keyword trigger: `exact`, its normalised form equals a
 * normalised keyword; `contains`, a normalised keyword occurs in it as whole words. A keyword
 * that normalises to nothing ("??") never matches, nor does a message without text.
 */
export function keywordMatches(trigger: { keywords: string[]; match: 'exact' | 'contains' }, text: string | null): boolean {
  if (text === null) return false;
  const said = normalizeText(text);
  if (said === '') return false;
  const padded = ` ${said} `;
  return trigger.keywords.some((k) => {
    const keyword = normalizeText(k);
    if (keyword === '') return false;
    return trigger.match === 'exact' ? said === keyword : padded.includes(` ${keyword} `);
  });
}

const own = (o: object, key: string): boolean => Object.hasOwn(o, key);

/** One step down a value: an object's own key or an array's index ("0", "1"…); undefined otherwise. */
function child(value: unknown, key: string): unknown {
  if (Array.isArray(value)) return /^(0|[1-9]\d*)$/.test(key) ? value[Number(key)] : undefined;
  if (value !== null && typeof value === 'object' && own(value, key)) return (value as Record<string, unknown>)[key];
  return undefined;
}

/**
 * The value a template or condition path names, undefined when missing:
 * `contact.name` / `contact.phone` read the contact; `name` the execution variable, else the
 * contact attribute; `webhook.a.b`, `http_var.body.0.x` walk into a variable's nested value.
 * Only own keys are read (`{{x.constructor}}` is missing, not a function).
 */
export function lookup(path: string, ctx: TextContext): unknown {
  const parts = path.trim().split('.');
  if (parts.length === 2 && parts[0] === 'contact' && (parts[1] === 'name' || parts[1] === 'phone')) {
    return ctx.contact[parts[1]] ?? undefined;
  }
  const [head, ...rest] = parts;
  let value: unknown = own(ctx.variables, head) ? ctx.variables[head] : undefined;
  if (value === undefined || value === null) {
    value = rest.length === 0 && own(ctx.attributes, head) ? ctx.attributes[head] : undefined;
  }
  for (const key of rest) value = child(value, key);
  return value ?? undefined;
}

/** How a value reads inside a text: strings as they are, numbers and booleans as written, objects as JSON, missing as "". */
export function asText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value) ?? '';
}

/** `{{ path }}`: spaces inside the braces are allowed; the path has no braces. */
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** A template with every `{{path}}` replaced by the value it names ("" when missing). */
export function renderText(template: string, ctx: TextContext): string {
  return template.replace(PLACEHOLDER, (_all, path: string) => (path === '' ? '' : asText(lookup(path, ctx))));
}

/** A JSON value with every string inside it rendered as a template (object keys stay as they are). */
export function renderJson(value: unknown, ctx: TextContext): unknown {
  if (typeof value === 'string') return renderText(value, ctx);
  if (Array.isArray(value)) return value.map((v) => renderJson(v, ctx));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderJson(v, ctx)]));
  }
  return value;
}

/** Operators of a `condition` step. */
export const CONDITION_OPS = ['equals', 'not_equals', 'contains', 'exists', 'gt', 'lt', 'matches'] as const;
export type ConditionOp = (typeof CONDITION_OPS)[number];

export interface Condition {
  var: string;
  op: ConditionOp;
  value?: string;
}

/** The text a `matches` regex is tried against is cut to this many characters. */
export const MATCH_INPUT_MAX = 1000;

/**
 * A `matches` regex compiled for RE2 (re2js), whose matching time is linear in the text whatever
 * the pattern, so no customer message can block the server; or why it cannot be:
 * `unsupported`, valid JavaScript that RE2 cannot express (backreferences, lookahead, lookbehind,
 * repetitions over 1000); `invalid`, no regex at all. Used at save (flow.ts regexProblem) and at
 * run (evaluateCondition); each pattern is compiled once (a bounded cache).
 */
type CompiledPattern = { ok: true; re: RE2JS } | { ok: false; problem: 'unsupported' | 'invalid' };

const PATTERN_CACHE_MAX = 500;
const patternCache = new Map<string, CompiledPattern>();

export function compilePattern(source: string): CompiledPattern {
  const hit = patternCache.get(source);
  if (hit) return hit;
  let compiled: CompiledPattern;
  try {
    compiled = { ok: true, re: RE2JS.compile(source, RE2JS.CASE_INSENSITIVE) };
  } catch {
    let js = true;
    try {
      new RegExp(source, 'i'); // compiled only to tell the two refusals apart, never run
    } catch {
      js = false;
    }
    compiled = { ok: false, problem: js ? 'unsupported' : 'invalid' };
  }
  if (patternCache.size >= PATTERN_CACHE_MAX) patternCache.delete(patternCache.keys().next().value as string);
  patternCache.set(source, compiled);
  return compiled;
}

/** A number written as "12", "-3.5" or with a decimal comma "1234,5"; null when it is not one. */
export function parseNumber(s: string): number | null {
  const t = s.trim();
  if (!/^[+-]?(\d+([.,]\d+)?|[.,]\d+)$/.test(t)) return null;
  const n = Number(t.replace(',', '.'));
  return Number.isFinite(n) ? n : null;
}

/** A condition's variable path: `respuesta`, or `{{respuesta}}` as a template would write it. */
const variablePath = (v: string): string => v.trim().replace(/^\{\{\s*(.*?)\s*\}\}$/s, '$1');

/** The outcome of a `condition` step: whether it holds, and why it is false when its regex no longer compiles. */
interface ConditionOutcome {
  yes: boolean;
  /** Set when a `matches` regex saved before RE2 (e.g. with a lookahead) cannot be compiled now. */
  problem?: 'unsupported' | 'invalid';
}

/**
 * The outcome of a `condition` step. Text comparisons normalise both sides as keywords do;
 * `value` is a template (`{{otra}}` compares two variables) except for `matches`, whose regex is
 * used as saved (validated when the flow was saved). `contains` is a substring of the whole
 * normalised text, and a value that normalises to nothing contains nothing; `exists` is a present,
 * non-blank value; `gt`/`lt` compare numbers (a decimal comma is accepted) and are false when
 * either side is not one; `matches` is case-insensitive over the first 1,000 characters of the
 * normalised text, matched by RE2 in linear time, and false (with the problem) for a regex RE2
 * does not compile.
 */
export function conditionOutcome(cond: Condition, ctx: TextContext): ConditionOutcome {
  if (cond.op !== 'matches') return { yes: evaluateCondition(cond, ctx) };
  const compiled = compilePattern(cond.value ?? '');
  if (!compiled.ok) return { yes: false, problem: compiled.problem };
  const left = asText(lookup(variablePath(cond.var), ctx));
  return { yes: compiled.re.matcher(normalizeText(left).slice(0, MATCH_INPUT_MAX)).find() };
}

/** Whether a `condition` step holds (conditionOutcome without the why). */
export function evaluateCondition(cond: Condition, ctx: TextContext): boolean {
  const left = asText(lookup(variablePath(cond.var), ctx));
  const raw = cond.value ?? '';
  switch (cond.op) {
    case 'exists':
      return left.trim() !== '';
    case 'equals':
      return normalizeText(left) === normalizeText(renderText(raw, ctx));
    case 'not_equals':
      return normalizeText(left) !== normalizeText(renderText(raw, ctx));
    case 'contains': {
      const needle = normalizeText(renderText(raw, ctx));
      return needle !== '' && normalizeText(left).includes(needle);
    }
    case 'gt':
    case 'lt': {
      const a = parseNumber(left);
      const b = parseNumber(renderText(raw, ctx));
      if (a === null || b === null) return false;
      return cond.op === 'gt' ? a > b : a < b;
    }
    case 'matches':
      return conditionOutcome(cond, ctx).yes;
  }
}
