// Phones (decisions.md, "Naming and shapes"): international format in, canonical digits out.
// Validation uses libphonenumber-js's full metadata; Argentine mobiles take the channel's
// `54 9` form and Mexican ones drop the old `52 1`, so two spellings never make two contacts.
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

const ALLOWED = /^\+?[0-9 ()./-]+$/;

export type PhoneResult = { ok: true; phone: string } | { ok: false; message: string };

export const PHONE_FORMAT_HINT =
  'Revisá el número: tiene que estar en formato internacional, con código de país (por ejemplo +54 9 11 5555-5555).';

export function canonicalPhone(raw: string): PhoneResult {
  if (typeof raw !== 'string' || raw.length < 6 || raw.length > 32) {
    return { ok: false, message: 'El teléfono tiene que tener entre 6 y 32 caracteres, en formato internacional.' };
  }
  const trimmed = raw.trim();
  if (!ALLOWED.test(trimmed) || (trimmed.match(/\+/g)?.length ?? 0) > 1) return { ok: false, message: PHONE_FORMAT_HINT };
  let digits = trimmed.replace(/\D/g, '');
  let parsed = parsePhoneNumberFromString(`+${digits}`);
  if (!parsed) return { ok: false, message: PHONE_FORMAT_HINT };
  const cc = parsed.countryCallingCode;
  let national = String(parsed.nationalNumber);
  if (cc === '54' && !national.startsWith('9')) national = `9${national}`;
  if (cc === '52' && national.length === 11 && national.startsWith('1')) national = national.slice(1);
  digits = `${cc}${national}`;
  parsed = parsePhoneNumberFromString(`+${digits}`);
  if (!parsed?.isValid()) return { ok: false, message: PHONE_FORMAT_HINT };
  return { ok: true, phone: digits };
}
