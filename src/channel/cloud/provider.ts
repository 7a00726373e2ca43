// The WhatsApp Cloud API provider: sends through Graph's POST /{phone-number-id}/messages
// with the number's own access token, and turns Graph's errors into ProviderErrors (api.md §7).
// Never retried here: a timeout may still have sent the message (POST /messages is not idempotent).

import type { PhoneNumberRow } from '../../db/types.js';
import { providerReason } from '../../http/messages.es-AR.js';
import { SecretKeyMissing } from '../../secrets/keyring.js';
import type { Services } from '../../services.js';
import { cloudAccessToken } from '../phone-numbers.js';
import { type ChannelProvider, ProviderError, type SendRequest, type SendResult } from '../types.js';
import { providerErrorFrom } from './errors.js';
import { GraphClient } from './graph.js';
import { buildSendBody, wamidFrom } from './send-body.js';

export interface CloudProviderOptions {
  /** Defaults: GRAPH_API_URL, connect 5 s, whole request GRAPH_TIMEOUT_MS (15 s). */
  baseUrl?: string;
  connectTimeoutMs?: number;
  timeoutMs?: number;
}

/**
 * The number's access token opened for a Graph call (sealed at rest); a key not in the ring is a
 * refusal naming its id: the send is recorded failed with it, never retried.
 */
export function openAccessToken(s: Services, from: Pick<PhoneNumberRow, 'cloud_access_token'>): string | null {
  try {
    return cloudAccessToken(s.secrets, from);
  } catch (err) {
    if (err instanceof SecretKeyMissing) throw new ProviderError('auth', providerReason('secret_key_missing', { keyId: err.keyId }));
    throw err;
  }
}

export class CloudProvider implements ChannelProvider {
  readonly name = 'cloud' as const;
  readonly graph: GraphClient;

  constructor(
    private readonly services: Services,
    opts: CloudProviderOptions = {},
  ) {
    this.graph = new GraphClient({
      baseUrl: opts.baseUrl ?? services.config.GRAPH_API_URL,
      connectTimeoutMs: opts.connectTimeoutMs,
      timeoutMs: opts.timeoutMs ?? services.config.GRAPH_TIMEOUT_MS,
      observe: (operation, seconds) => services.metrics.providerRequest('cloud', operation, seconds),
    });
  }

  async send(req: SendRequest): Promise<SendResult> {
    const { from } = req;
    const token = openAccessToken(this.services, from);
    if (!from.cloud_phone_number_id || !token) throw new ProviderError('auth', providerReason('cloud_not_connected'));
    const body = buildSendBody(req);
    const log = this.services.log;
    let res: unknown;
    try {
      res = await this.graph.call('POST', `${encodeURIComponent(from.cloud_phone_number_id)}/messages`, token, body);
    } catch (err) {
      const pe = providerErrorFrom(err);
      log.warn({ messageId: req.messageId, phoneNumberId: from.id, kind: pe.kind, code: pe.code }, 'cloud send refused');
      throw pe;
    }
    const wamid = wamidFrom(res);
    if (!wamid) {
      // Graph said 2xx without a message id: the message may or may not have left; do not guess.
      log.error({ messageId: req.messageId, phoneNumberId: from.id }, 'cloud send answered without messages[0].id');
      throw new ProviderError('temporary', providerReason('cloud_no_wamid'));
    }
    log.debug({ messageId: req.messageId, wamid }, 'cloud send accepted');
    return { wamid };
  }

  async close(): Promise<void> {
    await this.graph.close();
  }
}
