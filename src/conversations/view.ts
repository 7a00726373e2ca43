// The Conversation record and a conversation's message list (decisions.md "Conversations").
import { z } from 'zod';
import type { MessageRow } from '../db/types.js';
import { iso, Timestamp, Uuid } from '../http/schemas.js';
import { MessageRecord, messageView } from '../messages/view.js';
import { WINDOW_MS } from './service.js';

export const HandlingView = z
  .object({
    type: z.enum(['automation', 'agent', 'team']).nullable().describe('Who answers it now; null: nobody in particular'),
    id: z.string().nullable().describe('The automation, the AI agent or the team member'),
    name: z.string().nullable(),
  })
  .describe('Handling');

export const ConversationView = z
  .object({
    id: Uuid,
    contactId: Uuid,
    channel: z.enum(['whatsapp', 'socialchat']),
    phoneNumberId: Uuid.optional().describe('WhatsApp conversations: the account number it runs on'),
    socialAccountId: Uuid.nullable()
      .optional()
      .describe('Social channel conversations: the social account it runs on (null: written through the sandbox without one)'),
    lastInboundAt: Timestamp.nullable().describe("The contact's last inbound message (the channel's time)"),
    windowOpenUntil: Timestamp.nullable().describe(
      'lastInboundAt + 24 h: until then free text may be sent; null if the contact never wrote',
    ),
    handling: HandlingView,
    openCaseId: Uuid.nullable().describe("The conversation's open case, if any"),
    createdAt: Timestamp,
  })
  .describe('Conversation');
export type ConversationView = z.infer<typeof ConversationView>;

export const ConversationPage = z.object({
  data: z.array(ConversationView),
  hasMore: z.boolean(),
  nextCursor: Uuid.nullable().describe('Pass it as `after` for the next page; null on the last one'),
});

/** A conversation row with what its view needs from cases. */
export interface ConversationViewRow {
  id: string;
  contact_id: string;
  channel: string;
  phone_number_id: string | null;
  social_account_id: string | null;
  last_inbound_at: Date | null;
  handling_type: 'automation' | 'agent' | 'team' | null;
  handling_id: string | null;
  handling_name: string | null;
  handling_case_id: string | null;
  created_at: Date;
  open_case_id: string | null;
  /** Status of the case in handling_case_id (null when none, or it does not exist). */
  handling_case_status: string | null;
}

export function conversationView(r: ConversationViewRow): ConversationView {
  // A team's handling lasts while the case it took over stays open (decisions.md "Conversations").
  const lapsed = r.handling_type === 'team' && r.handling_case_id !== null && r.handling_case_status !== 'open';
  const handling =
    r.handling_type && !lapsed ? { type: r.handling_type, id: r.handling_id, name: r.handling_name } : { type: null, id: null, name: null };
  const social = r.channel === 'socialchat';
  return {
    id: r.id,
    contactId: r.contact_id,
    channel: social ? 'socialchat' : 'whatsapp',
    ...(social ? { socialAccountId: r.social_account_id } : { phoneNumberId: r.phone_number_id ?? undefined }),
    lastInboundAt: iso(r.last_inbound_at),
    windowOpenUntil: r.last_inbound_at ? new Date(r.last_inbound_at.getTime() + WINDOW_MS).toISOString() : null,
    handling,
    openCaseId: r.open_case_id,
    createdAt: r.created_at.toISOString(),
  };
}

const OUTBOUND_FROM = ['api', 'campaign', 'automation', 'agent', 'team'] as const;

export const ConversationMessage = MessageRecord.extend({
  from: z
    .enum(['contact', ...OUTBOUND_FROM])
    .describe('Who wrote it: `contact` (inbound), or the outbound source: api, campaign, automation, agent, team'),
  by: z
    .object({ type: z.enum(['ai_app', 'member']).optional(), id: z.string().nullable(), name: z.string() })
    .nullable()
    .describe(
      'Team replies: the team member who wrote it ({type: "member", id, name} through a console session); an AI app\'s sends (MCP): {type: "ai_app", id, name}; null otherwise',
    ),
}).describe('ConversationMessage');
export type ConversationMessage = z.infer<typeof ConversationMessage>;

export const ConversationMessagePage = z.object({
  data: z.array(ConversationMessage),
  hasMore: z.boolean(),
  nextCursor: Uuid.nullable().describe('Pass it as `after` for the next page; null on the last one'),
});

/** A message as a conversation's list shows it: `from` says who wrote it (not the phone). */
export function conversationMessageView(m: MessageRow): ConversationMessage {
  const inbound = m.direction === 'inbound';
  const source = (OUTBOUND_FROM as readonly string[]).includes(m.source) ? (m.source as (typeof OUTBOUND_FROM)[number]) : 'api';
  const sentBy = m.sent_by as { id?: unknown; name?: unknown } | null;
  const who =
    !inbound && sentBy && typeof sentBy.name === 'string'
      ? { id: typeof sentBy.id === 'string' ? sentBy.id : null, name: sentBy.name }
      : null;
  // A team member's reply, or what an AI app sent through MCP (its `{type: "ai_app", id, name}`).
  const type = (sentBy as { type?: unknown } | null)?.type;
  const app = type === 'ai_app';
  const kind = app ? { type: 'ai_app' as const } : type === 'member' ? { type: 'member' as const } : {};
  const by = who && (m.source === 'team' || app) ? { ...kind, ...who } : null;
  return { ...messageView(m), from: inbound ? 'contact' : source, by };
}
