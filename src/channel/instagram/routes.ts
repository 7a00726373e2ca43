// Instagram webhook receiver: GET/POST /channels/instagram/webhook (docs/operator.md). No bearer
// token: the GET handshake checks a social account's verify token, the POST its
// X-Hub-Signature-256 (../meta-webhook-routes.ts, shared with the WhatsApp receiver).
import type { RoutesFn } from '../../http/schemas.js';
import { metaReceiverRoutes } from '../meta-webhook-routes.js';
import { isInstagramVerifyToken } from '../social-accounts.js';
import { handleInstagramWebhook, signedByAnySocialAccount } from './receiver.js';

export const instagramReceiverRoutes: RoutesFn = (app, s) =>
  metaReceiverRoutes(app, s, {
    path: '/channels/instagram/webhook',
    name: 'instagram',
    summaries: {
      handshake: 'Instagram webhook verification (hub.challenge handshake)',
      webhook: 'Instagram webhook (direct messages, reads, comments), signed with X-Hub-Signature-256',
    },
    tokenOwner: 'social account',
    errors: { verify: 'instagram_verify_refused', signature: 'instagram_signature_invalid' },
    isVerifyToken: isInstagramVerifyToken,
    signedByAny: signedByAnySocialAccount,
    handle: handleInstagramWebhook,
  });
