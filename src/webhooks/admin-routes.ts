// Operator API: webhook subscriptions, deliveries, test event (operator.md, "Webhooks").
import { z } from 'zod';
import { whoOf } from '../audit/trail.js';
import { CursorQuery, errors, IdParams, NoBody, type RoutesFn, Timestamp, Uuid } from '../http/schemas.js';
import { EVENT_KINDS } from './outbox.js';
import {
  createWebhook,
  deleteWebhook,
  deliveryDetail,
  getWebhook,
  listDeliveries,
  listWebhooks,
  redeliver,
  rotateSecret,
  sendTestEvent,
  updateWebhook,
  webhookView,
} from './service.js';

const tags = ['Operator: webhooks'];
const WebhookUrl = z
  .string()
  .trim()
  .min(1)
  .max(2048)
  .describe('http(s) URL that receives the events')
  .meta({ example: 'https://example.com/hooks/chasqui' });
const Events = z
  .array(z.enum(EVENT_KINDS))
  .max(EVENT_KINDS.length * 2)
  .nullable()
  .describe('Event kinds this URL receives; null or empty: all');
const WebhookParams = z.object({ id: Uuid, wid: Uuid });
const DeliveryParams = z.object({ id: Uuid, wid: Uuid, did: Uuid });

const WebhookView = z.object({
  id: Uuid,
  url: z.string(),
  events: z.array(z.string()).nullable(),
  enabled: z.boolean(),
  disabledReason: z.string().nullable().describe('manual | gone (the receiver answered 410) | failing (5 days of failures)'),
  createdAt: Timestamp,
});
const Delivery = z.object({
  id: Uuid,
  eventId: Uuid.describe('The envelope id, sent as webhook-id'),
  event: z.string(),
  status: z
    .string()
    .describe('pending | succeeded | failed | skipped (not queued: monthly quota used up) | dead (failed for our own reason on every try)'),
  skipReason: z.string().nullable(),
  attempts: z.number().int(),
  lastAttemptAt: Timestamp.nullable(),
  nextAttemptAt: Timestamp.nullable(),
  lastStatusCode: z.number().int().nullable(),
  createdAt: Timestamp,
});
const Attempt = z.object({
  attempt: z.number().int(),
  trigger: z.string().describe('scheduled | manual'),
  statusCode: z.number().int().nullable(),
  durationMs: z.number().int(),
  responseExcerpt: z.string().nullable().describe('First 2 KB of the answer'),
  error: z.string().nullable(),
  at: Timestamp,
});

export const webhookAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/webhooks',
    {
      schema: {
        summary: 'Register a webhook URL (returns its secret)',
        tags,
        params: IdParams,
        body: z.strictObject({ url: WebhookUrl, events: Events.optional() }),
        response: { 201: WebhookView.extend({ secret: z.string().describe('whsec_… signing secret') }), ...errors(400, 402, 404) },
      },
    },
    async (req, reply) => reply.code(201).send(await createWebhook(s, req.account, req.body, whoOf(req))),
  );

  app.get('/accounts/:id/webhooks', { schema: { summary: 'List the webhook URLs', tags, params: IdParams } }, async (req) => {
    return { data: await listWebhooks(s.db, req.params.id) };
  });

  app.get('/accounts/:id/webhooks/:wid', { schema: { summary: 'One webhook URL', tags, params: WebhookParams } }, async (req) =>
    webhookView(await getWebhook(s.db, req.params.id, req.params.wid)),
  );

  app.patch(
    '/accounts/:id/webhooks/:wid',
    {
      schema: {
        summary: 'Change URL or events; enable or disable',
        tags,
        params: WebhookParams,
        body: z.strictObject({ url: WebhookUrl.optional(), events: Events.optional(), enabled: z.boolean().optional() }),
        response: { 200: WebhookView, ...errors(400, 404) },
      },
    },
    async (req) => updateWebhook(s, req.params.id, req.params.wid, req.body, whoOf(req)),
  );

  app.delete(
    '/accounts/:id/webhooks/:wid',
    { schema: { summary: 'Delete a webhook URL', tags, params: WebhookParams } },
    async (req, reply) => {
      await deleteWebhook(s, req.params.id, req.params.wid, whoOf(req));
      return reply.code(204).send();
    },
  );

  app.post(
    '/accounts/:id/webhooks/:wid/rotate-secret',
    {
      schema: {
        summary: 'New secret (the old one keeps signing for 24 h)',
        description: 'For 24 hours each delivery is signed with both secrets, so the receiver can switch without losing events.',
        tags,
        params: WebhookParams,
        body: NoBody,
      },
    },
    async (req) => rotateSecret(s, req.params.id, req.params.wid, whoOf(req)),
  );

  app.post(
    '/accounts/:id/webhooks/:wid/test',
    { schema: { summary: 'Queue a test message.received (test: true)', tags, params: WebhookParams, body: NoBody } },
    async (req, reply) => reply.code(202).send(await sendTestEvent(s, req.params.id, req.params.wid)),
  );

  app.get(
    '/accounts/:id/webhooks/:wid/deliveries',
    {
      schema: {
        summary: 'The delivery log (cursor pages)',
        tags,
        params: WebhookParams,
        querystring: CursorQuery,
        response: { 200: z.object({ data: z.array(Delivery) }) },
      },
    },
    async (req) => listDeliveries(s.db, req.params.id, req.params.wid, req.query),
  );

  app.get(
    '/accounts/:id/webhooks/:wid/deliveries/:did',
    {
      schema: {
        summary: 'One delivery with every attempt',
        tags,
        params: DeliveryParams,
        response: { 200: Delivery.extend({ attemptLog: z.array(Attempt) }) },
      },
    },
    async (req) => deliveryDetail(s.db, req.params.id, req.params.wid, req.params.did),
  );

  app.post(
    '/accounts/:id/webhooks/:wid/deliveries/:did/redeliver',
    { schema: { summary: 'Send a delivery again', tags, params: DeliveryParams, body: NoBody } },
    async (req, reply) => {
      await redeliver(s, req.params.id, req.params.wid, req.params.did);
      return reply.code(202).send({ queued: true });
    },
  );
};
