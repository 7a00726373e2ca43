// Schemas of the contact routes (api.md §2 "Contact", §4 POST /contacts; decisions.md
// "Naming and shapes": phone 6–32 raw characters, name ≤ 120, attribute keys and values).
import { z } from 'zod';
import { textFor } from '../http/messages.es-AR.js';
import { Timestamp, Uuid } from '../http/schemas.js';
import { canonicalPhone } from '../lib/phone.js';

export const ATTRIBUTE_KEY = /^[A-Za-z0-9_]{1,64}$/;

/** A phone in international format, validated and turned into canonical digits. */
export const PhoneInput = z
  .string()
  .min(6)
  .max(32)
  .transform((raw, ctx) => {
    const r = canonicalPhone(raw);
    if (!r.ok) {
      ctx.addIssue({ code: 'custom', message: r.message });
      return z.NEVER;
    }
    return r.phone;
  });

const AttributeKey = z.string().regex(ATTRIBUTE_KEY, { message: textFor('attribute_key_invalid') });

/** Keys one request may send (decisions.md "Attribute counts"). */
export const MAX_ATTRIBUTES_PER_REQUEST = 100;

/**
 * An object of at most `max` keys, counted before its entries are validated: a body of 30,000
 * keys gets one problem naming the object, not one per key.
 */
export function atMostKeys<T extends z.ZodType>(schema: T, max: number) {
  return z.preprocess(
    (value, ctx) => {
      if (value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length > max) {
        ctx.addIssue({ code: 'custom', message: textFor('attributes_too_many', { max }) });
        // Refused already: its entries are not validated one by one.
        return {};
      }
      return value;
    },
    schema.meta({ maxProperties: max }),
  );
}

export const Attributes = atMostKeys(
  z
    .record(
      AttributeKey,
      z.string().max(1000).nullable().describe('Attribute value: text of at most 1,000 characters; null removes the key'),
      { error: (iss) => (iss.code === 'invalid_key' ? textFor('attribute_key_invalid') : undefined) },
    )
    .describe('Custom fields: keys of 1–64 letters, digits or _; values are text, null removes the key'),
  MAX_ATTRIBUTES_PER_REQUEST,
);

export const ContactInput = z.strictObject({
  phone: PhoneInput.describe('International format with country code; spaces, hyphens and one leading + are accepted').meta({
    example: '+54 9 11 5555-5555',
  }),
  name: z.string().max(120).optional().describe('Replaced only when sent').meta({ example: 'Ana Pérez' }),
  attributes: Attributes.optional()
    .describe('Merged with the existing attributes (JSON Merge Patch): only the sent keys change, null removes a key')
    .meta({ example: { ciudad: 'Rosario', pedido: '1234' } }),
});

export const ContactView = z
  .object({
    id: Uuid,
    phone: z.string().nullable().describe('International digits; null for social-channel-only contacts').meta({ example: '5491155555555' }),
    name: z.string(),
    attributes: z.record(z.string(), z.string()),
    optedOut: z.boolean().describe('The contact asked for no more messages'),
    marketingOptOut: z.boolean().describe('The channel provider blocks marketing messages to this number'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    socialchat: z
      .object({
        id: z.string().describe('The Instagram-scoped user id'),
        username: z.string().nullable().describe('The Instagram username, when known'),
      })
      .nullable()
      .describe('Social channel (Instagram) user, when the contact wrote there; null otherwise'),
  })
  .describe('Contact (docs/api.md §2)');

export const ContactPage = z.object({
  data: z.array(ContactView),
  hasMore: z.boolean(),
  nextCursor: Uuid.nullable().describe('Pass it as `after` to get the next page; null on the last page'),
});

const Rows = (what: string) => z.array(z.record(z.string(), z.unknown())).describe(what);
/** GET …/contacts/{contactId}/export (person-export.ts streams it). */
export const PersonExport = z
  .object({
    object: z.literal('contact_export'),
    exportedAt: Timestamp,
    contact: ContactView,
    consent: z.object({ optedOut: z.boolean(), marketingOptOut: z.boolean() }).describe('Their opt-outs now'),
    conversations: z
      .array(
        z.object({
          id: Uuid,
          channel: z.string(),
          createdAt: Timestamp,
          lastInboundAt: Timestamp.nullable(),
          messages: Rows('Every message, oldest first: text, template and variables, status and times, who sent it'),
          notes: Rows('The team’s notes'),
        }),
      )
      .describe('Their conversations, oldest first'),
    cases: Rows('Their cases, each as GET /cases/{id} shows it'),
    automationExecutions: Rows('Flow executions: the flow’s name, saved variables and the step log (steps)'),
    agentStretches: Rows('AI agent stretches: summary, goal data and each model turn (turns: tool calls and decision)'),
    agentReviews: Rows('Reviews of those stretches'),
    campaigns: Rows('Campaigns that reached them: status per campaign'),
    socialComments: Rows('Their Instagram comments'),
  })
  .describe('Everything held about one person (docs/privacy.md "Erasure and export of one person")');
