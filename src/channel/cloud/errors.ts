// Graph API errors → ProviderError (api.md §7): the kind decides our status (window/template → 409,
// auth/rejected/temporary → 502, temporary marked so), the reason is the Spanish text the caller
// sees inside provider_rejected / provider_temporary (texts in the catalogue, by Graph's documented
// error code).
import {
  graphAccountReasons as ACCOUNT_REASONS,
  providerReason,
  graphTemplateReasons as TEMPLATE_REASONS,
  graphTemporaryReasons as TEMPORARY_CODES,
} from '../../http/messages.es-AR.js';
import { ProviderError } from '../types.js';
import { GraphApiError, GraphNetworkError } from './graph.js';

export const WINDOW_CODE = 131047;

/** Maps whatever the Graph client threw into the ProviderError the send path understands. */
export function providerErrorFrom(err: unknown): ProviderError {
  if (err instanceof ProviderError) return err;
  if (err instanceof GraphNetworkError) {
    return new ProviderError('temporary', providerReason(err.timeout ? 'graph_timeout' : 'graph_unreachable'));
  }
  if (!(err instanceof GraphApiError)) return new ProviderError('temporary', providerReason('graph_failed'));
  const code = typeof err.error?.code === 'number' ? err.error.code : null;
  const graphText = graphMessage(err);

  if (code === WINDOW_CODE) {
    return new ProviderError('window', providerReason('graph_window'), code);
  }
  if (code !== null && code >= 132000 && code <= 132016) {
    return new ProviderError('template', TEMPLATE_REASONS[code] ?? providerReason('graph_template_refused', { text: graphText }), code);
  }
  if (code !== null && TEMPORARY_CODES[code]) return new ProviderError('temporary', TEMPORARY_CODES[code], code);
  const isOAuth = err.error?.type === 'OAuthException' && (code === null || code === 0 || code === 190 || code === 102);
  if (code === 190 || code === 0 || code === 102 || isOAuth || (code !== null && code >= 200 && code <= 299)) {
    return new ProviderError('auth', ACCOUNT_REASONS[code === 102 || code === null ? 190 : code] ?? ACCOUNT_REASONS[10]!, code);
  }
  if (code !== null && ACCOUNT_REASONS[code]) {
    return new ProviderError(code === 3 || code === 10 ? 'auth' : 'rejected', ACCOUNT_REASONS[code], code);
  }
  if (code === null && (err.status === 401 || err.status === 403)) {
    return new ProviderError('auth', ACCOUNT_REASONS[190]!, null);
  }
  if (err.status >= 500 || err.status === 429) {
    return new ProviderError('temporary', providerReason('graph_status', { status: err.status }), code);
  }
  return new ProviderError('rejected', graphText, code);
}

/** Graph's own words: `error_data.details` is the most specific, then `message`. */
function graphMessage(err: GraphApiError): string {
  const details = err.error?.error_data?.details?.trim();
  const message = err.error?.message?.trim();
  const text = details || message || providerReason('graph_status', { status: err.status });
  const code = err.error?.code;
  return code !== undefined ? providerReason('graph_text_code', { text, code }) : text;
}
