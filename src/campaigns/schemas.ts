// Campaign request and response shapes (decisions.md "Campaigns").
import { z } from 'zod';
import { atMostKeys, MAX_ATTRIBUTES_PER_REQUEST } from '../contacts/schemas.js';
import { textFor } from '../http/messages.es-AR.js';
import { Timestamp, Uuid } from '../http/schemas.js';

export const CAMPAIGN_STATUSES = ['draft', 'scheduled', 'sending', 'completed', 'cancelled', 'failed'] as const;

export const CampaignView = z.object({
  id: Uuid,
  name: z.string(),
  status: z.enum(CAMPAIGN_STATUSES),
  phoneNumberId: Uuid.nullable().describe('The connected channel number it sends from'),
  templateId: Uuid.nullable(),
  variables: z.record(z.string(), z.string()),
  audience: z.object({ attributes: z.record(z.string(), z.string()).optional() }),
  recipients: z.number().int().describe('Contacts it is sent to (fixed when sending starts)'),
  sent: z.number().int().describe('Accepted by the channel provider'),
  delivered: z.number().int(),
  read: z.number().int(),
  failed: z.number().int().describe('Rejected at send or failed later'),
  scheduledAt: Timestamp.nullable(),
  startedAt: Timestamp.nullable(),
  completedAt: Timestamp.nullable(),
  createdAt: Timestamp,
});
export type CampaignView = z.infer<typeof CampaignView>;

const AttrKey = z.string().regex(/^[A-Za-z0-9_]{1,64}$/, textFor('attribute_key_invalid'));

export const CampaignInput = z.strictObject({
  name: z.string().trim().min(1).max(200),
  templateId: Uuid.describe('An APPROVED template of the account'),
  variables: z
    .record(AttrKey, z.string().max(1000))
    .optional()
    .describe('Template variables; missing ones take each contact’s attribute, then the example'),
  audience: z
    .strictObject({
      attributes: atMostKeys(z.record(AttrKey, z.string().max(1000)), MAX_ATTRIBUTES_PER_REQUEST)
        .optional()
        .describe('Contacts whose attributes equal all of these'),
    })
    .optional(),
  phoneNumberId: Uuid.optional().describe('Number to send from; default: the account’s default connected number'),
  scheduledAt: z.iso.datetime({ offset: true }).optional().describe('When sending starts; omitted or past: at once'),
});
export type CampaignInput = z.infer<typeof CampaignInput>;
