// How long an outbound text may be on each channel, and how an agent's long replies are cut into
// messages (docs/decisions.md "Outbound text"). Pure functions: no database, no clock.
//
// WhatsApp takes 4,096 characters, counted here in UTF-16 code units (String#length), as the API's
// own 4,096 of POST /messages is: never more characters than WhatsApp counts. Instagram takes
// 1,000 bytes of UTF-8 (docs/instagram.md "What differs from WhatsApp": an accented letter is 2).

export type TextChannel = 'whatsapp' | 'instagram';

/** A channel's bound: at most `max` of what `measure` counts. */
export interface TextBound {
  max: number;
  measure: (text: string) => number;
  /** What `measure` counts, as the Spanish reason says it. */
  unit: 'caracteres' | 'bytes';
}

/** The longest text one message may carry: WhatsApp 4,096 characters, Instagram 1,000 bytes of UTF-8. */
export const TEXT_BOUNDS: Readonly<Record<TextChannel, TextBound>> = Object.freeze({
  whatsapp: { max: 4096, measure: (t: string) => t.length, unit: 'caracteres' as const },
  instagram: { max: 1000, measure: (t: string) => Buffer.byteLength(t, 'utf8'), unit: 'bytes' as const },
});

/** The most messages one agent turn sends (its replies, long ones split); the rest is dropped. */
export const MAX_REPLIES_PER_TURN = 3;

/** Ends the last message when the rest of a reply did not fit in the turn's messages. */
const ELLIPSIS = '…';

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;

/** Sentence ends: . ! ? … (and closing quotes or brackets after them) followed by a space. */
const SENTENCE_END = /[.!?…]["'”’»)\]]*\s/g;

/** The longest prefix of `text` (in code units) whose measure is at most `max`, never half a surrogate pair. */
function fitIndex(text: string, max: number, measure: TextBound['measure']): number {
  if (measure(text) <= max) return text.length;
  // Measures grow with the prefix: the longest prefix that fits, by bisection.
  let lo = 0;
  let hi = Math.min(text.length, max);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (measure(text.slice(0, mid)) <= max) lo = mid;
    else hi = mid - 1;
  }
  return lo > 1 && isHighSurrogate(text.charCodeAt(lo - 1)) ? lo - 1 : lo;
}

/**
 * Where to cut `text` so the piece before it is at most `fit` code units: the last paragraph
 * break, else line break, else sentence end, else space in the piece's second half; else `fit`
 * itself (fitIndex keeps surrogate pairs whole).
 */
function cutPoint(text: string, fit: number): number {
  const head = text.slice(0, fit + 1);
  const min = Math.floor(fit / 2);
  const paragraph = head.lastIndexOf('\n\n');
  if (paragraph >= min) return paragraph;
  const line = head.lastIndexOf('\n');
  if (line >= min) return line;
  let sentence = -1;
  for (const m of head.matchAll(SENTENCE_END)) {
    const at = m.index + m[0].length - 1;
    if (at >= min && at <= fit) sentence = at;
  }
  if (sentence >= min) return sentence;
  for (let i = Math.min(fit, head.length - 1); i >= min; i--) {
    if (/\s/.test(head[i] as string)) return i;
  }
  return Math.max(1, fit);
}

/**
 * `text` in at most `maxParts` pieces within the bound, cut at paragraph or line breaks, sentence
 * ends or spaces (cutPoint). What does not fit in `maxParts` is cut: the last piece ends in "…"
 * (`cut` true).
 */
export function splitText(text: string, bound: TextBound, maxParts: number): { parts: string[]; cut: boolean } {
  const parts: string[] = [];
  let rest = text.trim();
  while (rest !== '' && parts.length < maxParts) {
    if (bound.measure(rest) <= bound.max) {
      parts.push(rest);
      return { parts, cut: false };
    }
    const last = parts.length === maxParts - 1;
    const room = last ? bound.max - bound.measure(ELLIPSIS) : bound.max;
    const at = cutPoint(rest, fitIndex(rest, room, bound.measure));
    const piece = rest.slice(0, at).trimEnd();
    if (last) {
      parts.push(`${piece}${ELLIPSIS}`);
      return { parts, cut: true };
    }
    if (piece !== '') parts.push(piece);
    rest = rest.slice(at).trimStart();
  }
  return { parts, cut: rest !== '' };
}

/**
 * An agent turn's replies as the messages it sends: each reply over the bound split (splitText),
 * in order, at most `max` messages in all. `dropped`: replies of which nothing was sent; `cut`: a
 * reply's end did not fit and was cut (its last message ends in "…").
 */
export function boundReplies(
  replies: string[],
  bound: TextBound,
  max: number = MAX_REPLIES_PER_TURN,
): { messages: string[]; dropped: number; cut: boolean } {
  const messages: string[] = [];
  let dropped = 0;
  let cut = false;
  for (const reply of replies) {
    const room = max - messages.length;
    if (room <= 0) {
      dropped += 1;
      continue;
    }
    const split = splitText(reply, bound, room);
    messages.push(...split.parts);
    cut ||= split.cut;
  }
  return { messages, dropped, cut };
}
