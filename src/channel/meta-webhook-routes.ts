// The receiver routes Meta calls (WhatsApp Cloud API and Instagram): GET answers the
// `hub.challenge` handshake when the verify token is one of ours, POST keeps the exact bytes Meta
// sent, checks X-Hub-Signature-256 and hands the batch to the channel's receiver: WhatsApp's
// queues it and answers at once (inbound-queue.ts), Instagram's processes it before answering.
// No bearer token.
// Each channel (cloud/routes.ts, instagram/routes.ts) says only what is its own.
import { z } from 'zod';
import { ApiError } from '../http/errors.js';
import type { ErrorCode } from '../http/messages.es-AR.js';
import type { ZodApp } from '../http/schemas.js';
import type { Services } from '../services.js';

export interface MetaReceiver {
  path: string;
  /** For the debug log line and the 500's message. */
  name: string;
  summaries: { handshake: string; webhook: string };
  /** Who holds the verify token (the handshake's query description). */
  tokenOwner: string;
  errors: { verify: ErrorCode; signature: ErrorCode };
  isVerifyToken(s: Services, token: string): Promise<boolean>;
  /** Whether the signature matches any of our app secrets (a body that is not JSON). */
  signedByAny(s: Services, raw: Buffer, signature: string): Promise<boolean>;
  /** Verifies the signature and queues (WhatsApp) or processes (Instagram) the batch. */
  handle(s: Services, raw: Buffer, payload: unknown, signature: string): Promise<{ unauthorized: boolean; failed: number }>;
}

export function metaReceiverRoutes(app: ZodApp, s: Services, r: MetaReceiver): void {
  // The signature is over the exact bytes Meta sent: keep them (this plugin only).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  const HandshakeQuery = z.object({
    'hub.mode': z.string().optional().describe('subscribe'),
    'hub.verify_token': z.string().optional().describe(`The verify token set on the ${r.tokenOwner}`),
    'hub.challenge': z.string().optional().describe('Echoed back when the token matches'),
  });

  app.get(
    r.path,
    { schema: { summary: r.summaries.handshake, tags: ['channel'], querystring: HandshakeQuery, security: [] } },
    async (req, reply) => {
      const q = req.query;
      const token = q['hub.verify_token'];
      if (q['hub.mode'] !== 'subscribe' || !token || q['hub.challenge'] === undefined) throw new ApiError(r.errors.verify);
      if (!(await r.isVerifyToken(s, token))) throw new ApiError(r.errors.verify);
      return reply.type('text/plain; charset=utf-8').send(q['hub.challenge']);
    },
  );

  app.post(r.path, { schema: { summary: r.summaries.webhook, tags: ['channel'], security: [] } }, async (req, reply) => {
    const signature = req.headers['x-hub-signature-256'];
    const sig = Array.isArray(signature) ? signature[0] : signature;
    if (!sig) throw new ApiError(r.errors.signature);
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.from(typeof req.body === 'string' ? req.body : '');
    let payload: unknown;
    try {
      payload = JSON.parse(raw.toString('utf8'));
    } catch {
      // Unsigned garbage is an authentication failure, not our parser's business.
      throw new ApiError((await r.signedByAny(s, raw, sig)) ? 'invalid_json' : r.errors.signature);
    }
    const outcome = await r.handle(s, raw, payload, sig);
    if (outcome.unauthorized) throw new ApiError(r.errors.signature);
    req.log.debug({ ...outcome }, `${r.name} webhook received`);
    // A failure that was not our own refusal: 500 makes Meta send the batch again (processing is idempotent).
    if (outcome.failed > 0) throw new Error(`${r.name} webhook: ${outcome.failed} item(s) failed`);
    return reply.code(200).send({ received: true });
  });
}
