// Input PostgreSQL cannot store as sent, caught before it reaches a query (decisions.md: text
// holds no NUL and no lone surrogate; JSON nests at most 32 levels). PostgreSQL refuses a NUL in
// text (a 500 with the query's parameters in the error), and turns a lone surrogate into U+FFFD
// without a word.
import type { ValidationProblem } from './errors.js';
import { textFor } from './messages.es-AR.js';

export const MAX_JSON_DEPTH = 32;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

export const isStorable = (s: string): boolean => !s.includes('\u0000') && !LONE_SURROGATE.test(s);

/** The text with NUL removed and lone surrogates as U+FFFD: for input we must keep (a customer's message). */
export const storableText = (s: string): string => s.replaceAll('\u0000', '').replace(LONE_SURROGATES, '\uFFFD');

/**
 * Whether a JSON text may hold an unstorable string or nest past the limit, read from the text in
 * one pass, so the parsed value of a clean body (nearly all of them) need not be walked. A body is
 * decoded from UTF-8, where a lone surrogate cannot be written, and JSON forbids a raw NUL: both can
 * only arrive as `\u` escapes (any surrogate escape counts as suspect; the walk tells pairs apart).
 * Depth is the count of open brackets outside strings.
 */
export function jsonTextSuspect(text: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) {
        if (text.charCodeAt(i + 1) === 0x75 /* u */ && escapeSuspect(text, i + 2)) return true;
        i += 1;
      } else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth -= 1;
  }
  return false;
}

/** The four hex digits of a `\u` escape at `at` write NUL (0000) or a surrogate (D800–DFFF). */
function escapeSuspect(text: string, at: number): boolean {
  const hex = text.slice(at, at + 4).toLowerCase();
  return hex === '0000' || (hex[0] === 'd' && '89abcdef'.includes(hex[1] ?? ''));
}

/**
 * The first unstorable string (a value or an object key) or over-deep container of a parsed JSON
 * value, in document order, as a validation problem; null when there is none. A key's problem
 * points at the key itself; the depth problem at the first container of level 33.
 */
export function findUnstorable(value: unknown): ValidationProblem | null {
  const found = walk(value, 0);
  if (!found) return null;
  const message = found.code === 'json_too_deep' ? textFor('json_too_deep', { max: MAX_JSON_DEPTH }) : textFor('text_unstorable');
  return { path: found.path, message };
}

interface Found {
  path: (string | number)[];
  code: 'text_unstorable' | 'json_too_deep';
}

// The path is built on the way back, so a clean body allocates nothing.
function walk(value: unknown, depth: number): Found | null {
  if (typeof value === 'string') return isStorable(value) ? null : { path: [], code: 'text_unstorable' };
  if (value === null || typeof value !== 'object') return null;
  if (depth === MAX_JSON_DEPTH) return { path: [], code: 'json_too_deep' };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = walk(value[i], depth + 1);
      if (found) {
        found.path.unshift(i);
        return found;
      }
    }
    return null;
  }
  for (const key in value) {
    const found = isStorable(key)
      ? walk((value as Record<string, unknown>)[key], depth + 1)
      : { path: [], code: 'text_unstorable' as const };
    if (found) {
      found.path.unshift(key);
      return found;
    }
  }
  return null;
}
