// Meta's webhook JSON (WhatsApp Cloud API and Instagram), read with loose zod shapes: a field of
// another shape reads as absent (`catch`), never as a failure of the whole object; a malformed part
// of a list is skipped while the rest is read (cloud/webhook.ts, instagram/webhook.ts).
import { z } from 'zod';
import { storableText } from '../http/storable.js';

/** The first instant the database cannot keep as a timestamp: a time from a payload at or past it is malformed. */
export const MAX_TIME_MS = Date.UTC(10000, 0, 1);

/** Ids Meta gives (wamids, mids, user ids) are short; a longer one is malformed (it would not fit an index). */
export const MAX_ID_LENGTH = 512;

/** A value for a log line: strings as they are (cut), anything else by its type (never serialised: it may nest deep). */
export const describeValue = (v: unknown): string =>
  typeof v === 'string' ? v.slice(0, 100) : Array.isArray(v) ? 'an array' : v === null ? 'null' : typeof v;

/**
 * A non-empty string; Meta sends some ids as numbers. Every text we keep from Meta passes here: a
 * customer's text is theirs to keep even when PostgreSQL cannot store it as sent, so NUL is
 * dropped and a lone surrogate becomes U+FFFD.
 */
export const Str = z
  .union([z.string(), z.number().transform(String)])
  .transform(storableText)
  .pipe(z.string().min(1))
  .optional()
  .catch(undefined);
/** A non-empty string of at most `max` characters (numbers as text); anything else reads as absent. */
const bounded = (max: number) =>
  z
    .union([z.string(), z.number().transform(String)])
    .transform(storableText)
    .pipe(z.string().min(1).max(max))
    .optional()
    .catch(undefined);
/** An id Meta gives (a wamid, a phone's wa_id): a longer one than any real id reads as absent. */
export const Id = bounded(MAX_ID_LENGTH);
/**
 * A short text Meta gives (a type, a status, a template's name, language or category, a profile
 * name): longer than any real one reads as absent, so it never reaches an indexed column (a btree
 * row over ~2.7 kB is a database error, and the batch would fail on every try).
 */
export const Short = bounded(MAX_ID_LENGTH);
/** A list we walk element by element (each element is parsed on its own). */
export const List = z.array(z.unknown()).catch([]);
export const loose = <T extends z.core.$ZodLooseShape>(shape: T) =>
  z
    .looseObject(shape)
    .optional()
    .catch(() => undefined);

export const Bool = z.boolean().optional().catch(undefined);

/** Each element of a list that has the shape; `onBad` hears of the others. */
export function each<T extends z.ZodType>(list: unknown[], schema: T, onBad?: (raw: unknown) => void): z.infer<T>[] {
  const out: z.infer<T>[] = [];
  for (const raw of list) {
    const r = schema.safeParse(raw);
    if (r.success) out.push(r.data);
    else onBad?.(raw);
  }
  return out;
}
