// The webhook payloads Meta posts for Instagram (Instagram API with Instagram Login: direct
// messages, echoes, reads, reactions), read with loose zod schemas as the WhatsApp ones
// (../cloud/webhook.ts): unknown keys pass, a field of another shape reads as absent, and a
// malformed part is skipped (named in `skipped` for the logs) while the rest is processed. Pure.
import { z } from 'zod';
import { Bool, describeValue, each, Id, List, loose, MAX_TIME_MS, Short, Str } from '../meta-json.js';

/** A customer's direct message, ready for receiveInbound once the social account is resolved. */
export interface ParsedDirectMessage {
  kind: 'message';
  /** Our Instagram account id (entry[].id / recipient.id). */
  igUserId: string;
  /** The customer's Instagram-scoped id. */
  userId: string;
  mid: string;
  type: string;
  text: string | null;
  timestamp: Date;
}

/** The customer read our messages up to `mid` (Instagram reports only `read`). */
export interface ParsedRead {
  kind: 'read';
  igUserId: string;
  userId: string;
  mid: string;
  timestamp: Date;
}

/** A comment on one of our posts (field "comments"): it starts `comment` automations. */
export interface ParsedComment {
  kind: 'comment';
  igUserId: string;
  /** The commenter's Instagram-scoped id. */
  userId: string;
  username: string | null;
  commentId: string;
  mediaId: string | null;
  text: string | null;
  timestamp: Date;
}

export type ParsedInstagramItem = ParsedDirectMessage | ParsedRead | ParsedComment;

export interface InstagramParseResult {
  items: ParsedInstagramItem[];
  /** What we saw and did not turn into work (echoes, reactions, unknown fields, malformed parts). */
  skipped: string[];
}

const Party = loose({ id: Id });
const Attachment = z.looseObject({ type: Short });
const Message = loose({ mid: Id, text: Str, is_echo: Bool, is_deleted: Bool, is_unsupported: Bool, attachments: List });
const Messaging = z.looseObject({
  sender: Party,
  recipient: Party,
  timestamp: z.unknown().optional(),
  message: Message,
  read: loose({ mid: Id, watermark: z.unknown().optional() }),
  reaction: z.unknown().optional(),
  postback: z.unknown().optional(),
});
const Change = z.looseObject({
  field: Short,
  value: loose({ id: Id, text: Str, from: loose({ id: Id, username: Short }), media: loose({ id: Id }) }),
});
const Entry = z.looseObject({ id: Id, time: z.unknown().optional(), messaging: List, changes: List });
const Root = z.looseObject({ object: z.unknown().optional(), entry: List });

/** Instagram attachment types → our message types (api.md: image, video, audio, document, …). */
const ATTACHMENT_TYPES: Readonly<Record<string, string>> = {
  image: 'image',
  video: 'video',
  audio: 'audio',
  file: 'document',
  ig_reel: 'video',
  reel: 'video',
  story_mention: 'story_mention',
  share: 'share',
};

/**
 * Milliseconds (Instagram's form; seconds tolerated) → Date; `fallback` when absent, malformed or
 * outside the dates the database keeps (year 10000 and on).
 */
function msTime(v: unknown, fallback: Date): Date {
  const n = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : Number.NaN;
  if (!Number.isFinite(n) || n <= 0) return fallback;
  const ms = n < 1e11 ? n * 1000 : n;
  return ms < MAX_TIME_MS ? new Date(ms) : fallback;
}

type MessagingEvent = z.infer<typeof Messaging>;

function parseMessaging(entryId: string | undefined, ev: MessagingEvent, now: Date, items: ParsedInstagramItem[], skipped: string[]): void {
  const timestamp = msTime(ev.timestamp, now);
  const m = ev.message;
  if (m) {
    // Our own sends come back as echoes: never the customer writing (or the bot answers itself).
    if (m.is_echo) return void skipped.push('echo');
    if (m.is_deleted) return void skipped.push('deleted message');
    const igUserId = ev.recipient?.id ?? entryId;
    const userId = ev.sender?.id;
    if (!m.mid || !userId || !igUserId) return void skipped.push('malformed message');
    const first = each(m.attachments, Attachment)[0];
    const type = m.text !== undefined ? 'text' : first?.type ? (ATTACHMENT_TYPES[first.type] ?? first.type) : 'unsupported';
    items.push({ kind: 'message', igUserId, userId, mid: m.mid, type, text: m.text ?? null, timestamp });
    return;
  }
  if (ev.read) {
    const igUserId = ev.recipient?.id ?? entryId;
    const userId = ev.sender?.id;
    if (!ev.read.mid || !igUserId || !userId) return void skipped.push('read without mid');
    items.push({ kind: 'read', igUserId, userId, mid: ev.read.mid, timestamp });
    return;
  }
  if (ev.reaction !== undefined) return void skipped.push('reaction');
  if (ev.postback !== undefined) return void skipped.push('postback');
  skipped.push('messaging event of an unknown kind');
}

/** Every entry and messaging event of one webhook POST, in payload order. */
export function parseInstagramWebhook(payload: unknown, now: Date): InstagramParseResult {
  const items: ParsedInstagramItem[] = [];
  const skipped: string[] = [];
  const root = Root.safeParse(payload);
  if (!root.success) return { items, skipped: ['payload is not an object'] };
  const { object } = root.data;
  if (object !== undefined && object !== 'instagram') skipped.push(`object ${describeValue(object)}`);
  for (const entry of each(root.data.entry, Entry, () => skipped.push('malformed entry'))) {
    for (const ev of each(entry.messaging, Messaging, () => skipped.push('malformed messaging event')))
      parseMessaging(entry.id, ev, now, items, skipped);
    for (const change of each(entry.changes, Change, () => skipped.push('malformed change'))) {
      if (change.field !== 'comments') {
        skipped.push(`field ${change.field ?? '(none)'}`);
        continue;
      }
      const v = change.value;
      const userId = v?.from?.id;
      if (!entry.id || !v?.id || !userId) {
        skipped.push('malformed comment');
        continue;
      }
      // Our own comments (a reply from the account) are not a customer commenting.
      if (userId === entry.id) {
        skipped.push('own comment');
        continue;
      }
      items.push({
        kind: 'comment',
        igUserId: entry.id,
        userId,
        username: v.from?.username ?? null,
        commentId: v.id,
        mediaId: v.media?.id ?? null,
        text: v.text ?? null,
        timestamp: msTime(entry.time, now),
      });
    }
  }
  return { items, skipped };
}

/** The Instagram account ids a payload names (entry[].id), for finding the app secrets. */
export function namedIgUserIds(items: ParsedInstagramItem[]): string[] {
  return [...new Set(items.map((i) => i.igUserId))];
}
