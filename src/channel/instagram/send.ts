// Sends on the social channel (social.md "Outbound"): Instagram API with Instagram Login,
// `POST {INSTAGRAM_API_URL}/{igUserId}/messages` with `{recipient: {id}, message: {text}}` for a
// direct message or `{recipient: {comment_id}, message: {text}}` for a comment's private reply;
// Instagram answers `{recipient_id, message_id}`. Like the Cloud client (cloud/graph.ts): one
// pooled undici agent, a connect timeout and a whole-request timeout, redirects not followed, no
// retries (a timed-out send may have left). The token travels only in the Authorization header.
// InstagramProvider is the social channel's provider of `instagram` accounts (channel/registry.ts
// paces it per social account).
import { Agent, request } from 'undici';
import type { SocialAccountRow } from '../../db/types.js';
import { instagramReason } from '../../http/messages.es-AR.js';
import { SecretKeyMissing } from '../../secrets/keyring.js';
import type { Services } from '../../services.js';
import { GraphNetworkError, graphAnswer, isTimeout } from '../cloud/graph.js';
import { instagramAccessToken } from '../social-accounts.js';
import { ProviderError, type SendResult, type SocialProvider, type SocialSendRequest } from '../types.js';
import { instagramErrorFrom } from './errors.js';

/** Instagram takes message text up to 1000 bytes of UTF-8. */
export const INSTAGRAM_TEXT_MAX_BYTES = 1000;
const CONNECT_TIMEOUT_MS = 5_000;
const DEFAULT_TIMEOUT_MS = 15_000;

export interface InstagramSendOptions {
  /** INSTAGRAM_API_URL, used as is (it carries the version: `https://graph.instagram.com/v22.0`). */
  baseUrl: string;
  /** The professional account's Instagram user id (the social account's igUserId). */
  igUserId: string;
  accessToken: string;
  /** Whole request, connect to the answer's last byte (GRAPH_TIMEOUT_MS in the app); default 15 s. */
  timeoutMs?: number;
  /** The request's duration (chasqui_provider_request_duration_seconds, operation `send`). */
  observe?: (seconds: number) => void;
}

/** A user's Instagram-scoped id (a direct message) or a comment's id (its one private reply). */
export type InstagramRecipient = { userId: string } | { commentId: string };

let agent: Agent | null = null;

/**
 * Sends one text; resolves with Instagram's message id (`mid`, the id its webhooks use) or
 * throws a ProviderError whose reason is the catalogue's Spanish text.
 */
export async function sendInstagram(opts: InstagramSendOptions, to: InstagramRecipient, text: string): Promise<{ mid: string }> {
  const target = 'commentId' in to ? 'comment' : 'user';
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > INSTAGRAM_TEXT_MAX_BYTES) {
    throw new ProviderError('rejected', instagramReason('text_too_long', { bytes, max: INSTAGRAM_TEXT_MAX_BYTES }));
  }
  const recipient = 'commentId' in to ? { comment_id: to.commentId } : { id: to.userId };
  let answer: unknown;
  const started = performance.now();
  try {
    answer = await post(opts, { recipient, message: { text } });
  } catch (err) {
    throw instagramErrorFrom(err, target);
  } finally {
    opts.observe?.((performance.now() - started) / 1000);
  }
  const mid = (answer as { message_id?: unknown } | null)?.message_id;
  // 2xx without a message id: the message may or may not have left; do not guess.
  if (typeof mid !== 'string' || mid === '') throw new ProviderError('temporary', instagramReason('no_mid'));
  return { mid };
}

/** The account's token opened for this send; a key not in the ring fails the send with a reason naming it. */
function openToken(s: Services, from: SocialAccountRow): string | null {
  try {
    return instagramAccessToken(s.secrets, from);
  } catch (err) {
    if (err instanceof SecretKeyMissing) throw new ProviderError('auth', instagramReason('secret_key_missing', { keyId: err.keyId }));
    throw err;
  }
}

/** Sends through the social account's Instagram user id and token, with the app's timeout and metrics. */
export class InstagramProvider implements SocialProvider {
  readonly name = 'instagram' as const;

  constructor(private readonly services: Services) {}

  async send(req: SocialSendRequest): Promise<SendResult> {
    const { config, metrics } = this.services;
    const opts: InstagramSendOptions = {
      baseUrl: config.INSTAGRAM_API_URL,
      igUserId: req.from.ig_user_id ?? '',
      accessToken: openToken(this.services, req.from) ?? '',
      timeoutMs: config.GRAPH_TIMEOUT_MS,
      observe: (seconds) => metrics.providerRequest('instagram', 'send', seconds),
    };
    const r = await sendInstagram(opts, req.to, req.text);
    return { wamid: r.mid };
  }

  close(): Promise<void> {
    return closeInstagramSend();
  }
}

/** Closes the pooled connections (at shutdown). */
export async function closeInstagramSend(): Promise<void> {
  const a = agent;
  agent = null;
  await a?.close();
}

async function post(opts: InstagramSendOptions, body: unknown): Promise<unknown> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  agent ??= new Agent({ connect: { timeout: CONNECT_TIMEOUT_MS } });
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/${encodeURIComponent(opts.igUserId)}/messages`;
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(url, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${opts.accessToken}`, accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify(body),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    throw new GraphNetworkError(isTimeout(err), err);
  }
  return graphAnswer(res);
}
