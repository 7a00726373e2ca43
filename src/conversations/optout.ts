// Opt-out phrases (api.md §3 "Contact opt-out", decisions.md "Channel"): the whole message, case-
// and accent-insensitive, trimmed, surrounding punctuation ignored. "quiero la baja del plan" is
// not one: only a message that is nothing but the phrase unsubscribes.
export const OPT_OUT_PHRASES = ['baja', 'stop', 'no recibir mas', 'darme de baja', 'desuscribir', 'cancelar suscripcion'] as const;

const PHRASES: ReadonlySet<string> = new Set(OPT_OUT_PHRASES);

/** Lower case, no accents, single spaces, no leading ¡¿ nor trailing punctuation. */
export function normalizePhrase(text: string): string {
  return text
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^[¡¿"'«“\s]+/u, '')
    .replace(/[.!?¡¿,;:…"'»”)\s]+$/u, '');
}

export const isOptOutPhrase = (text: string | null | undefined): boolean => !!text && PHRASES.has(normalizePhrase(text));
