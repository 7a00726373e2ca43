// POST /messages and GET /messages/{id} (api.md §4).
import { z } from 'zod';
import { textFor } from '../http/messages.es-AR.js';
import { errors, IdParams, type RoutesFn, Uuid } from '../http/schemas.js';
import { sendMessage } from './send.js';
import { getMessage } from './service.js';
import { MessageRecord } from './view.js';

const SendBody = z
  .strictObject({
    to: z.string().describe('Recipient phone, international format with country code').meta({ example: '+54 9 11 5555-5555' }),
    text: z.string().min(1).max(4096).optional().describe('Free text: only within 24 h of the contact’s last inbound message'),
    template: z
      .strictObject({
        id: Uuid.describe('An APPROVED template of the account'),
        variables: z
          .record(z.string(), z.string().max(4096))
          .optional()
          .describe('Variable name → text; missing ones take the contact attribute of that name, then the template example'),
      })
      .optional(),
    // api.md types it as a string: an id the account does not have (UUID or not) is 409, not 400.
    phoneNumberId: z
      .string()
      .max(200)
      .optional()
      .describe('Connected number to send from (an id of GET /me phoneNumbers); default: the account’s default connected number'),
  })
  .superRefine((b, ctx) => {
    // Exactly one of text and template (api.md §4).
    if (b.text !== undefined && b.template !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['template'], message: textFor('send_not_both') });
    } else if (b.text === undefined && b.template === undefined) {
      ctx.addIssue({ code: 'custom', path: ['text'], message: textFor('send_text_or_template') });
    } else if (b.text !== undefined && b.text.trim() === '') {
      ctx.addIssue({ code: 'custom', path: ['text'], message: textFor('text_blank') });
    }
  });

export const messageRoutes: RoutesFn = (app, s) => {
  app.post(
    '/messages',
    {
      config: { idempotent: true },
      schema: {
        summary: 'Send a template (any time) or free text (within the 24-hour window)',
        description:
          '201 means the channel provider accepted it (status `sent`), not that it arrived: follow it with GET /messages/{id} or the `message.status` webhook. Send an `Idempotency-Key` header to retry safely.',
        tags: ['Messages'],
        body: SendBody,
        response: { 201: MessageRecord, ...errors(400, 401, 402, 404, 409, 429, 502) },
      },
    },
    async (req, reply) => {
      const record = await sendMessage(s, req.auth.account, req.body);
      return reply.code(201).send(record);
    },
  );

  app.get(
    '/messages/:id',
    {
      schema: {
        summary: 'A message with its current delivery status (and the provider code when failed)',
        tags: ['Messages'],
        params: IdParams,
        response: { 200: MessageRecord, ...errors(400, 401, 402, 404, 429) },
      },
    },
    async (req) => getMessage(s.db, req.auth.account.id, req.params.id),
  );
};
