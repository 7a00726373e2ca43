// Operator API: channel numbers (operator.md, "Channel numbers"); the rules
// live in phone-numbers.ts.
import { z } from 'zod';
import { PhoneNumberView } from '../accounts/schemas.js';
import { whoOf } from '../audit/trail.js';
import { IdParams, type RoutesFn, Uuid } from '../http/schemas.js';
import { createPhoneNumber, readOperatorNumbers, updatePhoneNumber } from './phone-numbers.js';

const secret = z.string().trim().min(1).max(1000);

const CloudInput = z
  .strictObject({
    phoneNumberId: z.string().trim().min(1).max(100).describe('Graph id of the number (metadata.phone_number_id)'),
    wabaId: z.string().trim().min(1).max(100).describe('WhatsApp Business Account id'),
    accessToken: secret.describe('Graph access token (never returned)'),
    appSecret: secret.describe('App secret that signs the webhooks (never returned)'),
    verifyToken: secret.describe('Token of the webhook verification handshake'),
  })
  .describe('WhatsApp Cloud API ids and secrets');

const CreateInput = z.strictObject({
  phone: z.string().describe('International format with country code').meta({ example: '+54 9 11 5555-0000' }),
  name: z.string().trim().max(200).optional(),
  provider: z.enum(['sandbox', 'cloud']).optional().describe('Default: CHANNEL_PROVIDER'),
  cloud: CloudInput.optional(),
});

const PatchInput = z.strictObject({
  status: z.enum(['connected', 'disconnected']).optional(),
  default: z.boolean().optional().describe('true makes it the default number (the previous default stops being it)'),
  agentId: Uuid.nullable()
    .optional()
    .describe(
      'The AI agent that answers the conversations on this number that no automation, running agent or team member handles (docs/agents.md "Who answers a customer"): an agent of the account, not deleted (a paused one answers once active); null: none',
    ),
  throughputPerSecond: z
    .number()
    .int()
    .min(1)
    .max(1000)
    .optional()
    .describe(
      "The number's throughput tier: messages a second Meta lets it send (80 by default; upgraded numbers up to 1,000). Sends are paced at 93 % of it in every process (docs/performance.md)",
    ),
});

const OperatorNumberView = PhoneNumberView.extend({
  agentId: Uuid.nullable().describe('The AI agent that answers its conversations (null: none)'),
});

const NumberParams = z.object({ id: Uuid, pnId: Uuid });

export const phoneNumberAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/phone-numbers',
    {
      schema: {
        summary: 'Connect a channel number (the first one is the default)',
        tags: ['Operator'],
        params: IdParams,
        body: CreateInput,
        response: { 201: OperatorNumberView },
      },
    },
    async (req, reply) => {
      const { account } = req;
      const row = await createPhoneNumber(s, account.id, req.body, whoOf(req));
      req.log.info({ accountId: account.id, phoneNumberId: row.id, provider: row.provider }, 'phone number connected');
      return reply.code(201).send(row);
    },
  );

  app.get(
    '/accounts/:id/phone-numbers',
    { schema: { summary: "The account's channel numbers", tags: ['Operator'], params: IdParams } },
    async (req) => {
      return { data: await readOperatorNumbers(s.db, req.params.id) };
    },
  );

  app.patch(
    '/accounts/:id/phone-numbers/:pnId',
    {
      schema: {
        summary: 'Connect or disconnect a number, make it the default, assign its AI agent or set its throughput tier',
        tags: ['Operator'],
        params: NumberParams,
        body: PatchInput,
        response: { 200: OperatorNumberView },
      },
    },
    async (req) => {
      const { account } = req;
      return updatePhoneNumber(s, account.id, req.params.pnId, req.body, whoOf(req));
    },
  );
};
