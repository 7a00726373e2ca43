// The Cloud API's JSON, both ways: the body of POST /{phone-number-id}/messages, and the webhook
// payloads Meta posts to us (messages, statuses, template status updates). Pure functions, no I/O.

import { isOptOutButton } from '../../contacts/opt-out.js';
import type { DeliveryStatus } from '../../messages/status.js';
import type { SendRequest } from '../types.js';

// ---------------------------------------------------------------------------------------------
// Outbound: the send request
// ---------------------------------------------------------------------------------------------

export interface GraphTextParameter {
  type: 'text';
  text: string;
  /** Only for templates with named parameters ({{first_name}}). */
  parameter_name?: string;
}

export type GraphComponent =
  | { type: 'header' | 'body'; parameters: GraphTextParameter[] }
  | { type: 'button'; sub_type: 'url'; index: string; parameters: GraphTextParameter[] };

export interface GraphSendBody {
  messaging_product: 'whatsapp';
  recipient_type: 'individual';
  to: string;
  type: 'text' | 'template';
  text?: { body: string };
  template?: {
    name: string;
    language: { code: string };
    components?: GraphComponent[];
  };
}

const POSITIONAL = /^\d+$/;
/** Our names for a positional template's header variables (its body keeps `1`, `2`…). */
const HEADER_POSITIONAL = /^header_\d+$/;

/**
 * The documented send body. The template's `variables` come in the order of its parameters,
 * each with the component it fills: header text, body, or the URL of a button (Graph's
 * `components`, in that order). Named templates ({{first_name}}) send `parameter_name` in the header and the body;
 * positional ones ({{1}}, {{2}}) bare parameters in number order; URL buttons take one bare
 * parameter each.
 */
export function buildSendBody(req: SendRequest): GraphSendBody {
  const base = {
    messaging_product: 'whatsapp' as const,
    recipient_type: 'individual' as const,
    to: req.to,
  };
  if (req.template) {
    const t = req.template;
    const { variables } = t;
    const named = variables.some((v) => v.component !== 'button' && !POSITIONAL.test(v.name) && !HEADER_POSITIONAL.test(v.name));
    const header: GraphTextParameter[] = [];
    const body: GraphTextParameter[] = [];
    const buttons = new Map<number, GraphTextParameter[]>();
    t.parameters.forEach((text, i) => {
      const v = variables[i];
      if (v?.component === 'button') {
        const list = buttons.get(v.button ?? 0) ?? [];
        list.push({ type: 'text', text });
        buttons.set(v.button ?? 0, list);
        return;
      }
      // The header's positional names are ours (header_1…): Graph only needs their order.
      const param: GraphTextParameter = named && v ? { type: 'text', parameter_name: v.name, text } : { type: 'text', text };
      (v?.component === 'header' ? header : body).push(param);
    });
    const components: GraphComponent[] = [
      ...(header.length > 0 ? [{ type: 'header' as const, parameters: header }] : []),
      ...(body.length > 0 ? [{ type: 'body' as const, parameters: body }] : []),
      ...[...buttons.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, parameters]) => ({ type: 'button' as const, sub_type: 'url' as const, index: String(index), parameters })),
    ];
    return {
      ...base,
      type: 'template',
      template: {
        name: t.name,
        language: { code: t.language },
        ...(components.length > 0 ? { components } : {}),
      },
    };
  }
  return { ...base, type: 'text', text: { body: req.text ?? '' } };
}

/** The send response: `messages[0].id` is the wamid. */
export function wamidFrom(res: unknown): string | null {
  const id = (res as { messages?: { id?: unknown }[] } | null)?.messages?.[0]?.id;
  return typeof id === 'string' && id.length > 0 ? id : null;
}

// ---------------------------------------------------------------------------------------------
// Inbound: the webhook payload
// ---------------------------------------------------------------------------------------------

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

const STATUS_VALUES = new Set<DeliveryStatus>(['sent', 'delivered', 'read', 'failed']);

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

const obj = (v: unknown): Record<string, any> | null =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, any>) : null;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : typeof v === 'number' ? String(v) : undefined);

/** Unix seconds (as Meta sends them, in a string) → Date; `fallback` when absent or malformed. */
export function unixTime(v: unknown, fallback: Date): Date {
  const n = typeof v === 'string' ? Number(v) : typeof v === 'number' ? v : Number.NaN;
  return Number.isFinite(n) && n > 0 ? new Date(n * 1000) : fallback;
}

/** Text of one inbound message (api.md §6: caption or a description for attachments, button text). */
export function messageText(m: Record<string, any>): string | null {
  const type = m.type as string;
  const part = obj(m[type]);
  switch (type) {
    case 'text':
      return str(part?.body) ?? null;
    case 'image':
    case 'video':
    case 'sticker':
    case 'audio':
      return str(part?.caption) ?? null;
    case 'document':
      return str(part?.caption) ?? str(part?.filename) ?? null;
    case 'location': {
      const named = [str(part?.name), str(part?.address)].filter(Boolean).join(', ');
      if (named) return named;
      return part && part.latitude !== undefined && part.longitude !== undefined ? `${part.latitude},${part.longitude}` : null;
    }
    case 'contacts': {
      const cards = arr(m.contacts).map(obj).filter(Boolean) as Record<string, any>[];
      const described = cards.map((c) => {
        const name =
          str(obj(c.name)?.formatted_name) ?? [str(obj(c.name)?.first_name), str(obj(c.name)?.last_name)].filter(Boolean).join(' ');
        const phone = str(obj(arr(c.phones)[0])?.phone) ?? str(obj(arr(c.phones)[0])?.wa_id);
        return [name, phone].filter(Boolean).join(' ');
      });
      return described.filter(Boolean).join('; ') || null;
    }
    case 'button':
      return str(part?.text) ?? str(part?.payload) ?? null;
    case 'interactive': {
      const reply = obj(part?.button_reply) ?? obj(part?.list_reply);
      if (reply) return str(reply.title) ?? str(reply.id) ?? null;
      const nfm = obj(part?.nfm_reply);
      return nfm ? (str(nfm.body) ?? str(nfm.name) ?? null) : null;
    }
    case 'reaction':
      return str(part?.emoji) ?? null;
    case 'order':
      return str(part?.text) ?? null;
    case 'system':
      return str(part?.body) ?? null;
    default:
      return null;
  }
}

function parseMessage(graphPhoneNumberId: string, m: Record<string, any>, profiles: Map<string, string>, now: Date): ParsedMessage | null {
  const wamid = str(m.id);
  const from = str(m.from);
  if (!wamid || !from) return null;
  const type = str(m.type) ?? 'unsupported';
  const out: ParsedMessage = {
    kind: 'message',
    graphPhoneNumberId,
    from,
    wamid,
    type,
    text: messageText(m),
    timestamp: unixTime(m.timestamp, now),
  };
  const name = profiles.get(from) ?? (profiles.size === 1 ? [...profiles.values()][0] : undefined);
  if (name) out.name = name;
  if (type === 'button') {
    const b = obj(m.button);
    const text = str(b?.text) ?? str(b?.payload) ?? '';
    const payload = str(b?.payload);
    out.button = { text, ...(payload ? { payload } : {}), ...(isOptOutButton(text, payload) ? { optOut: true } : {}) };
  }
  const ref = obj(m.referral);
  if (ref) {
    out.referral = { id: str(ref.source_id) ?? '', headline: str(ref.headline) ?? '', sourceUrl: str(ref.source_url) ?? '' };
  }
  return out;
}

function parseStatus(graphPhoneNumberId: string, st: Record<string, any>, now: Date): ParsedStatus | null {
  const wamid = str(st.id);
  const status = str(st.status) as DeliveryStatus | undefined;
  if (!wamid || !status || !STATUS_VALUES.has(status)) return null;
  const code = obj(arr(st.errors)[0])?.code;
  return {
    kind: 'status',
    graphPhoneNumberId,
    wamid,
    status,
    code: typeof code === 'number' ? code : typeof code === 'string' && /^\d+$/.test(code) ? Number(code) : null,
    timestamp: unixTime(st.timestamp, now),
  };
}

/**
 * Every entry, change, message and status of one webhook POST, in payload order (batches are
 * normal: several entries, several changes, several messages per change).
 */
export function parseWebhook(payload: unknown, now: Date): ParseResult {
  const items: ParsedItem[] = [];
  const skipped: string[] = [];
  const root = obj(payload);
  if (!root) return { items, skipped: ['payload is not an object'] };
  if (root.object !== undefined && root.object !== 'whatsapp_business_account') skipped.push(`object ${String(root.object)}`);
  for (const e of arr(root.entry)) {
    const entry = obj(e);
    if (!entry) continue;
    const wabaId = str(entry.id) ?? '';
    for (const c of arr(entry.changes)) {
      const change = obj(c);
      const value = obj(change?.value);
      if (!change || !value) continue;
      const field = str(change.field) ?? (value.messaging_product === 'whatsapp' ? 'messages' : '');
      if (field === 'messages') {
        const pnid = str(obj(value.metadata)?.phone_number_id);
        if (!pnid) {
          skipped.push('messages change without metadata.phone_number_id');
          continue;
        }
        const profiles = new Map<string, string>();
        for (const ct of arr(value.contacts)) {
          const k = obj(ct);
          const waId = str(k?.wa_id);
          const name = str(obj(k?.profile)?.name);
          if (waId && name) profiles.set(waId, name);
        }
        for (const m of arr(value.messages)) {
          const msg = obj(m);
          // A system notice (the customer changed number) is not the customer writing: no message, no case.
          if (msg?.type === 'system') {
            skipped.push('system message');
            continue;
          }
          const parsed = msg ? parseMessage(pnid, msg, profiles, now) : null;
          if (parsed) items.push(parsed);
          else skipped.push('malformed message');
        }
        for (const s of arr(value.statuses)) {
          const st = obj(s);
          const parsed = st ? parseStatus(pnid, st, now) : null;
          if (parsed) items.push(parsed);
          else skipped.push(`status ${String(st?.status)}`);
        }
      } else if (field === 'message_template_status_update' || field === 'template_category_update') {
        const isStatus = field === 'message_template_status_update';
        items.push({
          kind: 'template',
          wabaId,
          templateId: str(value.message_template_id) ?? null,
          name: str(value.message_template_name) ?? null,
          language: str(value.message_template_language) ?? null,
          status: isStatus ? templateStatusFrom(value.event) : null,
          category: (isStatus ? str(value.message_template_category) : str(value.new_category)) ?? null,
        });
      } else {
        skipped.push(`field ${field || '(none)'}`);
      }
    }
  }
  return { items, skipped };
}
