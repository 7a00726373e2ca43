// WhatsApp Cloud API receiver: GET/POST /channels/whatsapp/webhook (operator.md). No bearer
// token: the GET handshake checks a number's verify token, the POST its X-Hub-Signature-256.
import { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import type { RoutesFn } from '../../http/schemas.js';
import { isCloudVerifyToken } from '../phone-numbers.js';
import { handleWebhook, signedByAnyNumber } from './receiver.js';

const PATH = '/channels/whatsapp/webhook';

const HandshakeQuery = z.object({
  'hub.mode': z.string().optional().describe('subscribe'),
  'hub.verify_token': z.string().optional().describe('The verify token set on the number'),
  'hub.challenge': z.string().optional().describe('Echoed back when the token matches'),
});

export const cloudReceiverRoutes: RoutesFn = (app, s) => {
  // The signature is over the exact bytes Meta sent: keep them (this plugin only).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.get(
    PATH,
    {
      schema: {
        summary: 'WhatsApp Cloud API webhook verification (hub.challenge handshake)',
        tags: ['channel'],
        querystring: HandshakeQuery,
        security: [],
      },
    },
    async (req, reply) => {
      const q = req.query;
      const token = q['hub.verify_token'];
      if (q['hub.mode'] !== 'subscribe' || !token || q['hub.challenge'] === undefined) throw new ApiError('cloud_verify_refused');
      if (!(await isCloudVerifyToken(s.db, token))) throw new ApiError('cloud_verify_refused');
      return reply.type('text/plain; charset=utf-8').send(q['hub.challenge']);
    },
  );

  app.post(
    PATH,
    {
      schema: {
        summary: 'WhatsApp Cloud API webhook (messages, statuses, template updates), signed with X-Hub-Signature-256',
        tags: ['channel'],
        security: [],
      },
    },
    async (req, reply) => {
      const signature = req.headers['x-hub-signature-256'];
      const sig = Array.isArray(signature) ? signature[0] : signature;
      if (!sig) throw new ApiError('cloud_signature_invalid');
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.from(typeof req.body === 'string' ? req.body : '');
      let payload: unknown;
      try {
        payload = JSON.parse(raw.toString('utf8'));
      } catch {
        // Unsigned garbage is an authentication failure, not our parser's business.
        throw new ApiError((await signedByAnyNumber(s, raw, sig)) ? 'invalid_json' : 'cloud_signature_invalid');
      }
      const outcome = await handleWebhook(s, raw, payload, sig);
      if (outcome.unauthorized) throw new ApiError('cloud_signature_invalid');
      req.log.debug({ ...outcome }, 'cloud webhook processed');
      // A failure that was not our own refusal: 500 makes Meta send the batch again (processing is idempotent).
      if (outcome.failed > 0) throw new Error(`cloud webhook: ${outcome.failed} item(s) failed`);
      return reply.code(200).send({ received: true });
    },
  );
};
