// How long an outbound text may be on each channel, and how an agent's long replies are cut into
// messages (docs/decisions.md "Outbound text"). Pure functions: no database, no clock.
//
// Lengths are counted in UTF-16 code units (String#length), as the API's own 4,096 of POST
// /messages is: never more characters than the channel counts, so a text within the bound is
// within the channel's limit.

export type TextChannel = 'whatsapp' | 'instagram';

/** The longest text one message may carry: WhatsApp 4,096 characters, Instagram 1,000. */
export const TEXT_LIMITS: Readonly<Record<TextChannel, number>> = Object.freeze({ whatsapp: 4096, instagram: 1000 });

/** The most messages one agent turn sends (its replies, long ones split); the rest is dropped. */
export const MAX_REPLIES_PER_TURN = 3;

/** Ends the last message when the rest of a reply did not fit in the turn's messages. */
const ELLIPSIS = '…';

/** The text's length as the bound counts it. */
export const textLength = (text: string): number => text.length;

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;

/** Sentence ends: . ! ? … (and closing quotes or brackets after them) followed by a space. */
const SENTENCE_END = /[.!?…]["'”’»)\]]*\s/g;

/**
 * Where to cut `text` (longer than `limit`) so the piece before it is at most `limit` long: the
 * last paragraph break, else line break, else sentence end, else space in the piece's second
 * half; else `limit` itself (never between the two halves of a surrogate pair).
 */
function cutPoint(text: string, limit: number): number {
  const head = text.slice(0, limit + 1);
  const min = Math.floor(limit / 2);
  const paragraph = head.lastIndexOf('\n\n');
  if (paragraph >= min) return paragraph;
  const line = head.lastIndexOf('\n');
  if (line >= min) return line;
  let sentence = -1;
  for (const m of head.matchAll(SENTENCE_END)) {
    const at = m.index + m[0].length - 1;
    if (at >= min && at <= limit) sentence = at;
  }
  if (sentence >= min) return sentence;
  for (let i = Math.min(limit, head.length - 1); i >= min; i--) {
    if (/\s/.test(head[i] as string)) return i;
  }
  return limit > 1 && isHighSurrogate(text.charCodeAt(limit - 1)) ? limit - 1 : limit;
}

/**
 * `text` in at most `maxParts` pieces of at most `limit` each, cut at paragraph or line breaks,
 * sentence ends or spaces (cutPoint). What does not fit in `maxParts` is cut: the last piece ends
 * in "…" (`cut` true).
 */
export function splitText(text: string, limit: number, maxParts: number): { parts: string[]; cut: boolean } {
  const parts: string[] = [];
  let rest = text.trim();
  while (rest !== '' && parts.length < maxParts) {
    if (textLength(rest) <= limit) {
      parts.push(rest);
      return { parts, cut: false };
    }
    const last = parts.length === maxParts - 1;
    const at = cutPoint(rest, last ? limit - ELLIPSIS.length : limit);
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
 * An agent turn's replies as the messages it sends: each reply longer than `limit` split
 * (splitText), in order, at most `max` messages in all. `dropped`: replies of which nothing was
 * sent; `cut`: a reply's end did not fit and was cut (its last message ends in "…").
 */
export function boundReplies(
  replies: string[],
  limit: number,
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
    const split = splitText(reply, limit, room);
    messages.push(...split.parts);
    cut ||= split.cut;
  }
  return { messages, dropped, cut };
}
