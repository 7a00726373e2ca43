// Graph API errors → ProviderError (api.md §7): the kind decides our status (window/template → 409,
// auth/rejected/temporary → 502, temporary marked so), the reason is the Spanish text the caller
// sees inside provider_rejected / provider_temporary. Codes: the Cloud API's documented error codes.
import { ProviderError } from '../types.js';
import { GraphApiError, GraphNetworkError } from './graph.js';

/** Codes that say "try again later": throughput, pair rate limit, Graph service trouble. */
const TEMPORARY_CODES: Record<number, string> = {
  1: 'Meta tuvo un error desconocido',
  2: 'el servicio de Meta no está disponible',
  4: 'la app llegó a su límite de llamadas a Meta',
  80007: 'la cuenta de WhatsApp llegó a su límite de llamadas a Meta',
  130429: 'se alcanzó el límite de envíos por segundo del número en Meta',
  131000: 'Meta tuvo un error interno',
  131016: 'el servicio de WhatsApp no está disponible',
  131056: 'se enviaron demasiados mensajes seguidos a este mismo contacto',
  133004: 'el servidor de WhatsApp no está disponible',
};

/** Account problems: what the operator has to fix, in Spanish (the API answers 502 with it). */
const ACCOUNT_REASONS: Record<number, string> = {
  0: 'Meta no aceptó el token de acceso del número. Generá un token nuevo en la app de Meta y actualizalo en la conexión del número.',
  3: 'la app de Meta no tiene permiso para enviar. Dale el permiso whatsapp_business_messaging al token del número.',
  10: 'la app de Meta no tiene permiso para enviar. Dale el permiso whatsapp_business_messaging al token del número.',
  190: 'Meta rechazó el token de acceso del número (venció o fue revocado). Generá un token de sistema nuevo y actualizalo en la conexión del número.',
  368: 'Meta bloqueó temporalmente la cuenta de WhatsApp por incumplir sus políticas. Revisá los avisos en el Administrador de WhatsApp.',
  131031: 'Meta bloqueó la cuenta de WhatsApp Business. Revisá el estado de la cuenta y sus avisos en el Administrador de WhatsApp.',
  131042: 'la cuenta de WhatsApp Business tiene un problema de pago. Agregá o revisá el método de pago en el Administrador de WhatsApp.',
  131045: 'el número no está registrado en la API de WhatsApp Cloud. Registralo desde la app de Meta y probá de nuevo.',
  133010: 'el número no está registrado en la API de WhatsApp Cloud. Registralo desde la app de Meta y probá de nuevo.',
};

const TEMPLATE_REASONS: Record<number, string> = {
  132000: 'la cantidad de variables no coincide con la plantilla aprobada en Meta: enviá todas las variables',
  132001: 'no existe en Meta con ese nombre e idioma: sincronizá las plantillas y revisá el idioma',
  132005: 'el texto con las variables supera el largo permitido: acortá los valores',
  132007: 'el contenido no cumple las políticas de Meta',
  132012: 'el formato de las variables no coincide con la plantilla aprobada en Meta',
  132015: 'está pausada en Meta por baja calidad: revisala en el Administrador de WhatsApp o usá otra',
  132016: 'está deshabilitada en Meta: usá otra plantilla',
};

export const WINDOW_CODE = 131047;

/** Maps whatever the Graph client threw into the ProviderError the send path understands. */
export function providerErrorFrom(err: unknown): ProviderError {
  if (err instanceof ProviderError) return err;
  if (err instanceof GraphNetworkError) {
    return new ProviderError('temporary', err.timeout ? 'Meta no respondió a tiempo' : 'no pudimos conectarnos con Meta');
  }
  if (!(err instanceof GraphApiError)) return new ProviderError('temporary', 'falló la conexión con Meta');
  const code = typeof err.error?.code === 'number' ? err.error.code : null;
  const graphText = graphMessage(err);

  if (code === WINDOW_CODE) {
    return new ProviderError('window', 'pasaron más de 24 horas desde el último mensaje del contacto', code);
  }
  if (code !== null && code >= 132000 && code <= 132016) {
    return new ProviderError('template', TEMPLATE_REASONS[code] ?? `Meta la rechazó: ${graphText}`, code);
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
    return new ProviderError('temporary', `Meta respondió con estado ${err.status}`, code);
  }
  return new ProviderError('rejected', graphText, code);
}

/** Graph's own words: `error_data.details` is the most specific, then `message`. */
function graphMessage(err: GraphApiError): string {
  const details = err.error?.error_data?.details?.trim();
  const message = err.error?.message?.trim();
  const text = details || message || `Meta respondió con estado ${err.status}`;
  const code = err.error?.code;
  return code !== undefined ? `${text} (código ${code})` : text;
}
