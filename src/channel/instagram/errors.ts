// Instagram's Graph errors → ProviderError (api.md §7 kinds: window → 409; rejected/auth/temporary
// → 502, temporary marked so). Meta's code decides, never the HTTP status alone: Instagram answers
// the same code with 400 or 403 depending on the endpoint. The reason is the Spanish text of the
// catalogue (instagramReason); an unknown code keeps Instagram's own words and its code.
import { instagramReason } from '../../http/messages.es-AR.js';
import { GraphApiError, GraphNetworkError } from '../cloud/graph.js';
import { ProviderError } from '../types.js';

/** Code 10 with these subcodes: "This message is sent outside of allowed window" (Instagram, Messenger). */
const WINDOW_SUBCODES = new Set([2534022, 2018278]);
/** Code 100 with these subcodes: the recipient does not exist for this account (Instagram, Messenger). */
const NOT_FOUND_SUBCODES = new Set([2534014, 2018001, 33]);
/** "Activity already replied to": a comment takes one private reply. */
const ALREADY_REPLIED = 10900;
/** "This person isn't available right now": blocked the account, deactivated, or restricted. */
const USER_UNAVAILABLE = 551;
/** Throttling: application, user, page and API-specific request limits. */
const RATE_LIMIT_CODES = new Set([4, 17, 32, 613]);

/** What the send was addressed to: a user's Instagram-scoped id (DM) or a comment (private reply). */
export type InstagramTarget = 'user' | 'comment';

/** Maps whatever the Instagram send threw into the ProviderError the send path understands. */
export function instagramErrorFrom(err: unknown, target: InstagramTarget): ProviderError {
  if (err instanceof ProviderError) return err;
  if (err instanceof GraphNetworkError) return new ProviderError('temporary', instagramReason(err.timeout ? 'timeout' : 'unreachable'));
  if (!(err instanceof GraphApiError)) return new ProviderError('temporary', instagramReason('failed'));
  const code = typeof err.error?.code === 'number' ? err.error.code : null;
  const sub = typeof err.error?.error_subcode === 'number' ? err.error.error_subcode : null;
  const text = err.error?.message?.trim() ?? '';

  if ((code === 10 && sub !== null && WINDOW_SUBCODES.has(sub)) || /outside (of )?(the )?allowed window/i.test(text)) {
    return new ProviderError('window', instagramReason(target === 'comment' ? 'comment_window' : 'window'), code);
  }
  if (code === ALREADY_REPLIED || /already (been )?replied/i.test(text)) {
    return new ProviderError('rejected', instagramReason('comment_replied'), code);
  }
  // 190 whatever its subcode (463 expired, 460 password changed, 467 invalid); 102 an old session.
  if (code === 190 || code === 102) return new ProviderError('auth', instagramReason('token'), code);
  if (code === 3 || code === 10 || (code !== null && code >= 200 && code <= 299)) {
    return new ProviderError('auth', instagramReason('permission'), code);
  }
  if (code !== null && RATE_LIMIT_CODES.has(code)) return new ProviderError('temporary', instagramReason('rate_limit'), code);
  if (code === 1) return new ProviderError('temporary', instagramReason('unknown'), code);
  if (code === 2) return new ProviderError('temporary', instagramReason('unavailable'), code);
  if (code === USER_UNAVAILABLE) return new ProviderError('rejected', instagramReason('user_unavailable'), code);
  if (code === 100 && sub !== null && NOT_FOUND_SUBCODES.has(sub)) {
    return new ProviderError('rejected', instagramReason(target === 'comment' ? 'comment_not_found' : 'user_not_found'), code);
  }
  if (code === null && err.error?.type === 'OAuthException') return new ProviderError('auth', instagramReason('token'), null);
  if (code === null && (err.status === 401 || err.status === 403)) return new ProviderError('auth', instagramReason('token'), null);
  if (err.status >= 500 || err.status === 429) {
    return new ProviderError('temporary', instagramReason('status', { status: err.status }), code);
  }
  if (code !== null && text) return new ProviderError('rejected', instagramReason('text_code', { text, code }), code);
  return new ProviderError('rejected', instagramReason('status', { status: err.status }), code);
}

/** Instagram's throttling (codes 4, 17, 32, 613): the social account's sends slow down (channel/paced.ts). */
export const instagramThrottled = (err: ProviderError): boolean => err.code !== null && RATE_LIMIT_CODES.has(err.code);

/**
 * Why a template send on the social channel fails (the automation step's error, with kind
 * `template`): Instagram has no templates (social.md "Outbound").
 */
export function instagramTemplateReason(): string {
  return instagramReason('template');
}
