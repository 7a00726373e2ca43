// Contact opt-out by message (api.md §3 "Contact opt-out", decisions.md "Channel"): a message that
// is nothing but an opt-out phrase, or a tap on a template's opt-out quick reply. "quiero la baja
// del plan" is not one. Both channels (sandbox, Cloud API) decide through this one module.

/** Whole-message phrases, in normalised form. */
export const OPT_OUT_PHRASES = ['baja', 'stop', 'no recibir mas', 'darme de baja', 'desuscribir', 'cancelar suscripcion'] as const;

/** Texts and payloads of the templates' opt-out quick reply (Meta's marketing opt-out button too), normalised. */
const OPT_OUT_BUTTONS = [
  'stop promotions',
  'detener promociones',
  'no recibir promociones',
  'no quiero recibir mas',
  'opt out',
  'optout',
  'unsubscribe',
] as const;

const PHRASES: ReadonlySet<string> = new Set(OPT_OUT_PHRASES);
const BUTTONS: ReadonlySet<string> = new Set(OPT_OUT_BUTTONS);

/**
 * Lower case, no accents, `_` and `-` as spaces (button payloads spell OPT_OUT), single spaces,
 * no surrounding quotes nor punctuation (¡BAJA! and "Baja." are the phrase).
 */
export function normalizeOptOutText(text: string): string {
  return text
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[\s_-]+/g, ' ')
    .trim()
    .replace(/^[¡¿"'«“(\s]+/u, '')
    .replace(/[.!?¡¿,;:…"'»”)\s]+$/u, '');
}

/** A message text that is nothing but an opt-out phrase. */
export const isOptOutPhrase = (text: string | null | undefined): boolean => !!text && PHRASES.has(normalizeOptOutText(text));

/** A tapped quick reply is the opt-out button when its text or payload says so. */
export function isOptOutButton(text: string | undefined, payload: string | undefined): boolean {
  return [text, payload].some((v) => {
    if (!v) return false;
    const n = normalizeOptOutText(v);
    return PHRASES.has(n) || BUTTONS.has(n);
  });
}
