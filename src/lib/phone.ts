// Phones (decisions.md, "Naming and shapes"): international format in, canonical digits out.
// Validation uses libphonenumber-js's full metadata; Argentine mobiles take the channel's
// `54 9` form and Mexican ones drop the old `52 1`, so two spellings never make two contacts.
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { textFor } from '../http/messages.es-AR.js';

const ALLOWED = /^\+?[0-9 ()./-]+$/;

export type PhoneResult = { ok: true; phone: string } | { ok: false; message: string };

export function canonicalPhone(raw: string): PhoneResult {
  if (typeof raw !== 'string' || raw.length < 6 || raw.length > 32) {
    return { ok: false, message: textFor('phone_length') };
  }
  const trimmed = raw.trim();
  if (!ALLOWED.test(trimmed) || (trimmed.match(/\+/g)?.length ?? 0) > 1) return { ok: false, message: textFor('phone_format') };
  let digits = trimmed.replace(/\D/g, '');
  let parsed = parsePhoneNumberFromString(`+${digits}`);
  if (!parsed) return { ok: false, message: textFor('phone_format') };
  const cc = parsed.countryCallingCode;
  let national = String(parsed.nationalNumber);
  if (cc === '54' && !national.startsWith('9')) national = `9${national}`;
  if (cc === '52' && national.length === 11 && national.startsWith('1')) national = national.slice(1);
  digits = `${cc}${national}`;
  parsed = parsePhoneNumberFromString(`+${digits}`);
  if (!parsed?.isValid()) return { ok: false, message: textFor('phone_format') };
  return { ok: true, phone: digits };
}
