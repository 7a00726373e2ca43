// Instagram webhook receiver: GET/POST /channels/instagram/webhook (docs/operator.md). No bearer
// token: the GET handshake checks a social account's verify token, the POST its
// X-Hub-Signature-256 (the rules of the WhatsApp receiver, ../cloud/routes.ts).
import { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import type { RoutesFn } from '../../http/schemas.js';
import { isInstagramVerifyToken } from '../social-accounts.js';
import { handleInstagramWebhook, signedByAnySocialAccount } from './receiver.js';

const PATH = '/channels/instagram/webhook';

const HandshakeQuery = z.object({
  'hub.mode': z.string().optional().describe('subscribe'),
  'hub.verify_token': z.string().optional().describe('The verify token set on the social account'),
  'hub.challenge': z.string().optional().describe('Echoed back when the token matches'),
});

export const instagramReceiverRoutes: RoutesFn = (app, s) => {
  // The signature is over the exact bytes Meta sent: keep them (this plugin only).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.get(
    PATH,
    {
      schema: {
        summary: 'Instagram webhook verification (hub.challenge handshake)',
        tags: ['channel'],
        querystring: HandshakeQuery,
        security: [],
      },
    },
    async (req, reply) => {
      const q = req.query;
      const token = q['hub.verify_token'];
      if (q['hub.mode'] !== 'subscribe' || !token || q['hub.challenge'] === undefined) throw new ApiError('instagram_verify_refused');
      if (!(await isInstagramVerifyToken(s.db, token))) throw new ApiError('instagram_verify_refused');
      return reply.type('text/plain; charset=utf-8').send(q['hub.challenge']);
    },
  );

  app.post(
    PATH,
    {
      schema: {
        summary: 'Instagram webhook (direct messages, reads), signed with X-Hub-Signature-256',
        tags: ['channel'],
        security: [],
      },
    },
    async (req, reply) => {
      const signature = req.headers['x-hub-signature-256'];
      const sig = Array.isArray(signature) ? signature[0] : signature;
      if (!sig) throw new ApiError('instagram_signature_invalid');
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.from(typeof req.body === 'string' ? req.body : '');
      let payload: unknown;
      try {
        payload = JSON.parse(raw.toString('utf8'));
      } catch {
        // Unsigned garbage is an authentication failure, not our parser's business.
        throw new ApiError((await signedByAnySocialAccount(s, raw, sig)) ? 'invalid_json' : 'instagram_signature_invalid');
      }
      const outcome = await handleInstagramWebhook(s, raw, payload, sig);
      if (outcome.unauthorized) throw new ApiError('instagram_signature_invalid');
      req.log.debug({ ...outcome }, 'instagram webhook processed');
      // A failure that was not our own refusal: 500 makes Meta send the batch again (processing is idempotent).
      if (outcome.failed > 0) throw new Error(`instagram webhook: ${outcome.failed} item(s) failed`);
      return reply.code(200).send({ received: true });
    },
  );
};
