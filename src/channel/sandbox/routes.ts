// Operator API: the sandbox channel (operator.md, "Sandbox channel"). Only registered with
// CHANNEL_PROVIDER=sandbox. The inbound route runs the real inbound path; the status route is the
// provider reporting a delivery status (the real status machine).
import { z } from 'zod';
import { getAccount } from '../../accounts/service.js';
import { receiveInbound } from '../../conversations/inbound.js';
import { invalid } from '../../http/errors.js';
import { textFor } from '../../http/messages.es-AR.js';
import { type RoutesFn, Uuid } from '../../http/schemas.js';
import { newId } from '../../lib/ids.js';
import { reportStatus } from '../../messages/status.js';
import { receiveComment } from '../instagram/comments.js';
import { getLiveSocialAccount } from '../social-accounts.js';

/** A little clock skew is tolerated; a timestamp further ahead is a mistake of the caller. */
const FUTURE_SKEW_MS = 60_000;

const IsoDate = z.iso.datetime({ offset: true });

/** Unix seconds below this are seconds; above, milliseconds (1e11 s is the year 5138). */
const SECONDS_UNTIL = 1e11;

/**
 * When the customer sent it: an ISO 8601 date, or unix seconds (the channel's own form, as a
 * number or digits) or milliseconds. Normalised to the ISO form.
 */
const InboundTimestamp = z.union([z.string(), z.number()]).transform((v, ctx) => {
  let ms = Number.NaN;
  if (typeof v === 'number' || /^\d{1,16}$/.test(v)) {
    const n = Number(v);
    ms = n < SECONDS_UNTIL ? n * 1000 : n;
  } else if (IsoDate.safeParse(v).success) ms = Date.parse(v);
  if (!Number.isFinite(ms) || ms < 0 || ms > 8.64e15) {
    ctx.addIssue({ code: 'custom', message: textFor('inbound_timestamp_invalid') });
    return z.NEVER;
  }
  return new Date(ms).toISOString();
});

const InboundBody = z
  .strictObject({
    accountId: Uuid,
    from: z.string().optional().describe('The customer phone, international format'),
    socialchat: z.string().trim().min(1).max(200).optional().describe('A social-channel user id instead of a phone'),
    text: z.string().max(4096).optional(),
    type: z.string().trim().min(1).max(40).default('text').describe('text, image, button, interactive, reaction, …'),
    name: z.string().max(200).optional().describe('Profile name'),
    timestamp: InboundTimestamp.optional().describe(
      'When the customer sent it: ISO 8601 or unix seconds (default now; may be in the past)',
    ),
    phoneNumberId: Uuid.optional().describe('The receiving number (default: the account default)'),
    wamid: z.string().trim().min(1).max(200).optional().describe('Provider message id (the same one twice is stored once)'),
    button: z
      .strictObject({ text: z.string().min(1).max(200), payload: z.string().max(1000).optional(), optOut: z.boolean().optional() })
      .optional()
      .describe('A tapped template button; optOut: true is the template opt-out button'),
    referral: z
      .strictObject({ id: z.string().max(200), headline: z.string().max(1000), sourceUrl: z.string().max(2000) })
      .optional()
      .describe('The ad that brought the customer'),
  })
  .superRefine((b, ctx) => {
    if ((b.from === undefined) === (b.socialchat === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['from'], message: textFor('inbound_from_or_socialchat') });
    }
    if (b.type === 'text' && (b.text === undefined || b.text.trim() === '') && !b.button) {
      ctx.addIssue({ code: 'custom', path: ['text'], message: textFor('inbound_text_required') });
    }
  });

const SocialInboundBody = z.strictObject({
  socialAccountId: Uuid.describe('The social account that receives it'),
  userId: z.string().trim().min(1).max(200).describe("The customer's Instagram-scoped user id"),
  username: z.string().trim().min(1).max(200).optional().describe('The Instagram username'),
  text: z.string().trim().min(1).max(4096),
  mid: z.string().trim().min(1).max(200).optional().describe('Instagram message id (the same one twice is stored once)'),
  timestamp: InboundTimestamp.optional().describe('When the customer sent it: ISO 8601 or unix seconds (default now)'),
});

const SocialCommentBody = z.strictObject({
  socialAccountId: Uuid.describe('The social account whose post is commented'),
  userId: z.string().trim().min(1).max(200).describe("The commenter's Instagram-scoped user id"),
  username: z.string().trim().min(1).max(200).optional().describe('The Instagram username'),
  text: z.string().trim().min(1).max(2200),
  commentId: z
    .string()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .describe('Instagram comment id (the same one twice is handled once; default generated)'),
  mediaId: z.string().trim().min(1).max(200).optional().describe('The commented post'),
});

const StatusBody = z.strictObject({
  wamid: z.string().trim().min(1).max(200),
  status: z.enum(['sent', 'delivered', 'read', 'failed']),
  code: z.number().int().optional().describe('Provider code (with failed)'),
  timestamp: IsoDate.optional().describe('When it happened (default now)'),
});

export const sandboxAdminRoutes: RoutesFn = (app, s) => {
  if (s.config.CHANNEL_PROVIDER !== 'sandbox') return;

  app.post(
    '/sandbox/inbound',
    {
      schema: {
        summary: 'A customer writes through the sandbox (runs the real inbound path)',
        tags: ['Sandbox'],
        body: InboundBody,
        response: { 201: z.object({ messageId: Uuid, contactId: Uuid, conversationId: Uuid, duplicate: z.boolean() }) },
      },
    },
    async (req, reply) => {
      const b = req.body;
      // An unknown account answers 404 ahead of any other refusal; the account is read only when
      // the message is refused (one round trip less per inbound).
      const refused = async (err: unknown): Promise<never> => {
        await getAccount(s.db, b.accountId);
        throw err;
      };
      const now = s.clock.now();
      const timestamp = b.timestamp ? new Date(b.timestamp) : now;
      if (timestamp.getTime() > now.getTime() + FUTURE_SKEW_MS) await refused(invalid(['timestamp'], textFor('timestamp_future')));
      const type = b.button && b.type === 'text' ? 'button' : b.type;
      const r = await receiveInbound(s, {
        accountId: b.accountId,
        phoneNumberId: b.phoneNumberId ?? null,
        ...(b.from !== undefined ? { from: b.from } : {}),
        ...(b.socialchat !== undefined ? { socialchat: b.socialchat } : {}),
        ...(b.name !== undefined ? { name: b.name } : {}),
        ...(b.wamid !== undefined ? { providerMessageId: b.wamid } : {}),
        type,
        text: b.text ?? b.button?.text ?? null,
        timestamp,
        ...(b.button ? { button: b.button } : {}),
        ...(b.referral ? { referral: b.referral } : {}),
      }).catch(refused);
      return reply.code(201).send(r);
    },
  );

  app.post(
    '/sandbox/social-inbound',
    {
      schema: {
        summary: 'A customer writes a direct message to a social account (runs the real inbound path)',
        tags: ['Sandbox'],
        body: SocialInboundBody,
        response: { 201: z.object({ messageId: Uuid, contactId: Uuid, conversationId: Uuid, duplicate: z.boolean() }) },
      },
    },
    async (req, reply) => {
      const b = req.body;
      const social = await getLiveSocialAccount(s.db, b.socialAccountId);
      const now = s.clock.now();
      const timestamp = b.timestamp ? new Date(b.timestamp) : now;
      if (timestamp.getTime() > now.getTime() + FUTURE_SKEW_MS) throw invalid(['timestamp'], textFor('timestamp_future'));
      const r = await receiveInbound(s, {
        accountId: social.account_id,
        phoneNumberId: null,
        socialchat: b.userId,
        socialAccountId: social.id,
        ...(b.username !== undefined ? { username: b.username } : {}),
        ...(b.mid !== undefined ? { providerMessageId: b.mid } : {}),
        type: 'text',
        text: b.text,
        timestamp,
      });
      return reply.code(201).send(r);
    },
  );

  app.post(
    '/sandbox/social-comment',
    {
      schema: {
        summary: 'A customer comments on a post of a social account (runs the real path: comment automations, private reply)',
        tags: ['Sandbox'],
        body: SocialCommentBody,
        response: {
          201: z.object({
            duplicate: z.boolean(),
            contactId: Uuid.nullable(),
            conversationId: Uuid.nullable(),
            executionId: Uuid.nullable().describe('The comment automation it started, if any'),
          }),
        },
      },
    },
    async (req, reply) => {
      const b = req.body;
      const social = await getLiveSocialAccount(s.db, b.socialAccountId);
      const r = await receiveComment(s, {
        accountId: social.account_id,
        socialAccountId: social.id,
        userId: b.userId,
        username: b.username ?? null,
        commentId: b.commentId ?? `sbx-comment-${newId()}`,
        mediaId: b.mediaId ?? null,
        text: b.text,
      });
      return reply.code(201).send(r);
    },
  );

  app.post(
    '/sandbox/status',
    {
      schema: {
        summary: 'The sandbox provider reports a delivery status for a wamid',
        description:
          'Forward only (sent < delivered < read; failed after sent or delivered, final). A report for a wamid no send has stored yet is kept and applied when it is.',
        tags: ['Sandbox'],
        body: StatusBody,
        response: {
          200: z.object({
            applied: z.boolean().describe('The status moved and one message.status event was written'),
            early: z.boolean().describe('No message has this wamid yet: kept for when the send stores it'),
            status: z.string().nullable(),
            messageId: Uuid.nullable(),
          }),
        },
      },
    },
    async (req) => {
      const b = req.body;
      const at = b.timestamp ? new Date(b.timestamp) : s.clock.now();
      const out = await reportStatus(s, { wamid: b.wamid, status: b.status, code: b.code ?? null, at });
      return { applied: out.applied, early: out.early ?? false, status: out.status ?? null, messageId: out.messageId ?? null };
    },
  );
};
