// The Message record (decisions.md "Resources"): POST /messages 201 and GET /messages/{id}.
import { z } from 'zod';
import type { MessageRow } from '../db/types.js';
import { iso, Timestamp, Uuid } from '../http/schemas.js';

const NullableTs = Timestamp.nullable();

export const MessageRecord = z
  .object({
    id: Uuid.describe('Service message id'),
    wamid: z.string().nullable().describe('Channel message id (webhooks identify messages by it); null if the provider never accepted it'),
    status: z
      .enum(['pending', 'sent', 'delivered', 'read', 'failed', 'received'])
      .describe('sent < delivered < read; failed is final. `received` for inbound messages'),
    direction: z.enum(['outbound', 'inbound']),
    to: z.string().nullable().describe('Recipient phone (digits); on inbound messages, the receiving number of the account'),
    from: z.string().nullable().optional().describe('Inbound messages only: the customer phone'),
    contactId: Uuid,
    conversationId: Uuid,
    phoneNumberId: Uuid.nullable().describe('The channel number it was sent from (or received on)'),
    type: z.string().describe('`text` or `template` (inbound: the channel type, e.g. image, button)'),
    text: z.string().nullable().optional(),
    template: z
      .object({ id: Uuid, name: z.string(), variables: z.record(z.string(), z.string()).describe('Values sent, after fallbacks') })
      .optional(),
    campaignId: Uuid.nullable(),
    code: z.number().int().nullable().describe('Provider numeric code when failed (e.g. 131026)'),
    error: z.string().nullable().describe('Spanish description of the failure'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    statusTimes: z.object({ sent: NullableTs, delivered: NullableTs, read: NullableTs, failed: NullableTs }),
    timestamp: NullableTs.optional().describe('Inbound messages only: when the customer sent it'),
  })
  .describe('Message');

export type MessageRecord = z.infer<typeof MessageRecord>;

export function messageView(m: MessageRow, contactPhone?: string | null): MessageRecord {
  const inbound = m.direction === 'inbound';
  return {
    id: m.id,
    wamid: m.wamid,
    status: m.status as MessageRecord['status'],
    direction: m.direction,
    to: m.to_phone,
    ...(inbound ? { from: contactPhone ?? null } : {}),
    contactId: m.contact_id,
    conversationId: m.conversation_id,
    phoneNumberId: m.phone_number_id,
    type: m.type,
    ...(m.type === 'template' && !inbound
      ? { template: { id: m.template_id ?? '', name: m.template_name ?? '', variables: m.template_variables ?? {} } }
      : { text: m.text }),
    campaignId: m.campaign_id,
    code: m.code,
    error: m.error,
    createdAt: m.created_at.toISOString(),
    updatedAt: m.updated_at.toISOString(),
    statusTimes: { sent: iso(m.sent_at), delivered: iso(m.delivered_at), read: iso(m.read_at), failed: iso(m.failed_at) },
    ...(inbound ? { timestamp: iso(m.provider_timestamp) } : {}),
  };
}
