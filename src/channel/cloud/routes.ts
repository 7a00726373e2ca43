// WhatsApp Cloud API receiver: GET/POST /channels/whatsapp/webhook (operator.md). No bearer
// token: the GET handshake checks a number's verify token, the POST its X-Hub-Signature-256
// (../meta-webhook-routes.ts, shared with Instagram's receiver).
import type { RoutesFn } from '../../http/schemas.js';
import { metaReceiverRoutes } from '../meta-webhook-routes.js';
import { isCloudVerifyToken } from '../phone-numbers.js';
import { receiveWebhook, signedByAnyNumber } from './receiver.js';

export const cloudReceiverRoutes: RoutesFn = (app, s) =>
  metaReceiverRoutes(app, s, {
    path: '/channels/whatsapp/webhook',
    name: 'cloud',
    summaries: {
      handshake: 'WhatsApp Cloud API webhook verification (hub.challenge handshake)',
      webhook: 'WhatsApp Cloud API webhook (messages, statuses, template updates), signed with X-Hub-Signature-256',
    },
    tokenOwner: 'number',
    errors: { verify: 'cloud_verify_refused', signature: 'cloud_signature_invalid' },
    isVerifyToken: isCloudVerifyToken,
    signedByAny: signedByAnyNumber,
    handle: receiveWebhook,
  });
