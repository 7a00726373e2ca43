// The webhook payloads Meta posts to us (messages, statuses, template updates), read with zod.
// Meta adds fields over time: every object is loose (unknown keys pass) and every field we read
// falls back to "absent" when it has another shape, so one malformed part is skipped (and
// reported in `skipped` for the logs) while the rest of the batch is processed. Pure, no I/O.

import { z } from 'zod';
import { isOptOutButton } from '../../contacts/opt-out.js';
import { isUuid } from '../../lib/ids.js';
import type { DeliveryStatus } from '../../messages/status.js';
import { describeValue, each, Id, List, loose, MAX_TIME_MS, Short, Str } from '../meta-json.js';

/** A customer message, ready for receiveInbound once the number is resolved. */
export interface ParsedMessage {
  kind: 'message';
  /** Graph phone-number id of the receiving number (metadata.phone_number_id). */
  graphPhoneNumberId: string;
  from: string;
  name?: string;
  wamid: string;
  type: string;
  text: string | null;
  timestamp: Date;
  button?: { text: string; payload?: string; optOut?: boolean };
  referral?: { id: string; headline: string; sourceUrl: string };
}

export interface ParsedStatus {
  kind: 'status';
  graphPhoneNumberId: string;
  wamid: string;
  status: DeliveryStatus;
  code: number | null;
  timestamp: Date;
  /** Our message id echoed from the send's `biz_opaque_callback_data` (only a UUID counts; else null). */
  messageId: string | null;
}

export interface ParsedTemplateUpdate {
  kind: 'template';
  /** entry.id: the WhatsApp Business Account the template belongs to. */
  wabaId: string;
  templateId: string | null;
  name: string | null;
  language: string | null;
  /** Our status, or `DELETED`; null when the event does not change the status. */
  status: TemplateStatus | 'DELETED' | null;
  category: string | null;
}

export type ParsedItem = ParsedMessage | ParsedStatus | ParsedTemplateUpdate;

export type TemplateStatus = 'APPROVED' | 'PENDING' | 'REJECTED' | 'PAUSED' | 'DISABLED';

export interface ParseResult {
  items: ParsedItem[];
  /** Things we saw and did not turn into work (unknown fields, malformed entries): for logs. */
  skipped: string[];
}

const Reply = loose({ id: Str, title: Str });
/** The type-named part of a message (`text`, `image`, `location`, `interactive`, …): the fields we read. */
const Part = loose({
  body: Str,
  caption: Str,
  filename: Str,
  name: Str,
  address: Str,
  latitude: Str,
  longitude: Str,
  text: Str,
  payload: Str,
  emoji: Str,
  button_reply: Reply,
  list_reply: Reply,
  nfm_reply: loose({ body: Str, name: Str }),
});
const ContactCard = z.looseObject({
  name: loose({ formatted_name: Str, first_name: Str, last_name: Str }),
  phones: List,
});
const CardPhone = z.looseObject({ phone: Str, wa_id: Str });

const Message = z.looseObject({
  id: Id,
  from: Id,
  type: Short,
  timestamp: z.unknown().optional(),
  contacts: List,
  referral: loose({ source_id: Short, headline: Str, source_url: Str }),
});
type Message = z.infer<typeof Message>;

const Status = z.looseObject({
  id: Id,
  status: Short,
  timestamp: z.unknown().optional(),
  errors: List,
  biz_opaque_callback_data: z.unknown().optional(),
});
/**
 * A provider error code, as the `integer` column keeps it: a whole number from 0 to 2³¹−1 (Meta's
 * are 6 digits). Anything else Meta could send in its place (a larger number, a numeric string
 * past the range, a fraction, text) is `MALFORMED`: the status is skipped and logged, never a
 * database error that fails the batch on every try.
 */
const MAX_CODE = 2_147_483_647;
const MALFORMED = 'malformed' as const;
const Code = z
  .union([
    z.number(),
    z
      .string()
      .regex(/^\d{1,20}$/)
      .transform(Number),
  ])
  .transform((n) => (Number.isSafeInteger(n) && n >= 0 && n <= MAX_CODE ? n : MALFORMED));
const StatusError = z.looseObject({ code: Code.optional().catch(MALFORMED) });
const Profile = z.looseObject({ wa_id: Id, profile: loose({ name: Short }) });

const Value = z.looseObject({
  messaging_product: z.unknown().optional(),
  metadata: loose({ phone_number_id: Id }),
  contacts: List,
  messages: List,
  statuses: List,
  event: z.unknown().optional(),
  message_template_id: Id,
  message_template_name: Short,
  message_template_language: Short,
  message_template_category: Short,
  new_category: Short,
});
type Value = z.infer<typeof Value>;
const Change = z.looseObject({ field: Short, value: Value });
const Entry = z.looseObject({ id: Id, changes: List });
const Root = z.looseObject({ object: z.unknown().optional(), entry: List });

const STATUS_VALUES = new Set<string>(['sent', 'delivered', 'read', 'failed']);

/** Meta's template events → our template status (decisions.md "Template"); null: no status change. */
export function templateStatusFrom(event: unknown): TemplateStatus | 'DELETED' | null {
  switch (typeof event === 'string' ? event.toUpperCase() : '') {
    case 'APPROVED':
    case 'REINSTATED':
    case 'UNPAUSED':
      return 'APPROVED';
    case 'PENDING':
    case 'IN_APPEAL':
      return 'PENDING';
    case 'REJECTED':
      return 'REJECTED';
    case 'PAUSED':
      return 'PAUSED';
    case 'DISABLED':
    case 'ARCHIVED':
    case 'LIMIT_EXCEEDED':
      return 'DISABLED';
    case 'DELETED':
    case 'PENDING_DELETION':
      return 'DELETED';
    default:
      return null;
  }
}

/** Unix seconds (as Meta sends them, in a string) → Date; `fallback` when absent or malformed. */
function unixTime(v: unknown, fallback: Date): Date {
  const n = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : Number.NaN;
  return Number.isFinite(n) && n > 0 && n * 1000 < MAX_TIME_MS ? new Date(n * 1000) : fallback;
}

function contactsText(cards: unknown[]): string | null {
  const described = each(cards, ContactCard).map((c) => {
    const name = c.name?.formatted_name ?? [c.name?.first_name, c.name?.last_name].filter(Boolean).join(' ');
    const first = each(c.phones.slice(0, 1), CardPhone)[0];
    return [name, first?.phone ?? first?.wa_id].filter(Boolean).join(' ');
  });
  return described.filter(Boolean).join('; ') || null;
}

/** Text of one inbound message (api.md §6: caption or a description for attachments, button text). */
function messageText(m: Message, type: string): string | null {
  const part = Part.parse(m[type]);
  switch (type) {
    case 'text':
    case 'system':
      return part?.body ?? null;
    case 'image':
    case 'video':
    case 'sticker':
    case 'audio':
      return part?.caption ?? null;
    case 'document':
      return part?.caption ?? part?.filename ?? null;
    case 'location': {
      const named = [part?.name, part?.address].filter(Boolean).join(', ');
      if (named) return named;
      return part?.latitude && part.longitude ? `${part.latitude},${part.longitude}` : null;
    }
    case 'contacts':
      return contactsText(m.contacts);
    case 'button':
      return part?.text ?? part?.payload ?? null;
    case 'interactive': {
      const reply = part?.button_reply ?? part?.list_reply;
      if (reply) return reply.title ?? reply.id ?? null;
      return part?.nfm_reply ? (part.nfm_reply.body ?? part.nfm_reply.name ?? null) : null;
    }
    case 'reaction':
      return part?.emoji ?? null;
    case 'order':
      return part?.text ?? null;
    default:
      return null;
  }
}

function parseMessage(graphPhoneNumberId: string, m: Message, profiles: Map<string, string>, now: Date): ParsedMessage | null {
  const { id: wamid, from } = m;
  if (!wamid || !from) return null;
  const type = m.type ?? 'unsupported';
  const out: ParsedMessage = {
    kind: 'message',
    graphPhoneNumberId,
    from,
    wamid,
    type,
    text: messageText(m, type),
    timestamp: unixTime(m.timestamp, now),
  };
  const name = profiles.get(from) ?? (profiles.size === 1 ? [...profiles.values()][0] : undefined);
  if (name) out.name = name;
  if (type === 'button') {
    const b = Part.parse(m.button);
    const text = b?.text ?? b?.payload ?? '';
    const payload = b?.payload;
    out.button = { text, ...(payload ? { payload } : {}), ...(isOptOutButton(text, payload) ? { optOut: true } : {}) };
  }
  const ref = m.referral;
  if (ref) out.referral = { id: ref.source_id ?? '', headline: ref.headline ?? '', sourceUrl: ref.source_url ?? '' };
  return out;
}

function parseStatus(graphPhoneNumberId: string, st: z.infer<typeof Status>, now: Date): ParsedStatus | null {
  if (!st.id || !st.status || !STATUS_VALUES.has(st.status)) return null;
  const code = each(st.errors.slice(0, 1), StatusError)[0]?.code;
  if (code === MALFORMED) return null;
  return {
    kind: 'status',
    graphPhoneNumberId,
    wamid: st.id,
    status: st.status as DeliveryStatus,
    code: code ?? null,
    timestamp: unixTime(st.timestamp, now),
    // We send our message id there (send-body.ts); anything else (another system's data) is not ours.
    messageId: typeof st.biz_opaque_callback_data === 'string' && isUuid(st.biz_opaque_callback_data) ? st.biz_opaque_callback_data : null,
  };
}

/** The messages and statuses of one `messages` change. */
function parseMessagesChange(value: Value, now: Date, items: ParsedItem[], skipped: string[]): void {
  const pnid = value.metadata?.phone_number_id;
  if (!pnid) {
    skipped.push('messages change without metadata.phone_number_id');
    return;
  }
  const profiles = new Map<string, string>();
  for (const k of each(value.contacts, Profile)) {
    const name = k.profile?.name;
    if (k.wa_id && name) profiles.set(k.wa_id, name);
  }
  for (const msg of each(value.messages, Message, () => skipped.push('malformed message'))) {
    // A system notice (the customer changed number) is not the customer writing: no message, no case.
    if (msg.type === 'system') {
      skipped.push('system message');
      continue;
    }
    const parsed = parseMessage(pnid, msg, profiles, now);
    if (parsed) items.push(parsed);
    else skipped.push('malformed message');
  }
  for (const st of each(value.statuses, Status, () => skipped.push('status undefined'))) {
    const parsed = parseStatus(pnid, st, now);
    if (parsed) items.push(parsed);
    else if (st.id && st.status && STATUS_VALUES.has(st.status)) skipped.push(`status ${st.status} with a malformed error code`);
    else skipped.push(`status ${describeValue(st.status)}`);
  }
}

function templateUpdate(field: string, wabaId: string, value: Value): ParsedTemplateUpdate {
  const isStatus = field === 'message_template_status_update';
  return {
    kind: 'template',
    wabaId,
    templateId: value.message_template_id ?? null,
    name: value.message_template_name ?? null,
    language: value.message_template_language ?? null,
    status: isStatus ? templateStatusFrom(value.event) : null,
    category: (isStatus ? value.message_template_category : value.new_category) ?? null,
  };
}

/**
 * Every entry, change, message and status of one webhook POST, in payload order (batches are
 * normal: several entries, several changes, several messages per change).
 */
export function parseWebhook(payload: unknown, now: Date): ParseResult {
  const items: ParsedItem[] = [];
  const skipped: string[] = [];
  const root = Root.safeParse(payload);
  if (!root.success) return { items, skipped: ['payload is not an object'] };
  const { object } = root.data;
  if (object !== undefined && object !== 'whatsapp_business_account') skipped.push(`object ${describeValue(object)}`);
  for (const entry of each(root.data.entry, Entry)) {
    const wabaId = entry.id ?? '';
    for (const change of each(entry.changes, Change)) {
      const { value } = change;
      const field = change.field ?? (value.messaging_product === 'whatsapp' ? 'messages' : '');
      if (field === 'messages') parseMessagesChange(value, now, items, skipped);
      else if (field === 'message_template_status_update' || field === 'template_category_update')
        items.push(templateUpdate(field, wabaId, value));
      else skipped.push(`field ${field || '(none)'}`);
    }
  }
  return { items, skipped };
}
