import { describe, expect, it } from 'vitest';
import { isOptOutButton, isOptOutPhrase, normalizeOptOutText } from './opt-out.js';

describe('opt-out (decisions.md "Channel": whole message, case- and accent-insensitive)', () => {
  it('"the whole message": ¡BAJA!, "Baja." and No recibir más are the phrase; "quiero la baja del plan" is not', () => {
    for (const t of ['¡BAJA!', '"Baja."', 'No recibir más', '  darme   de baja ', 'Cancelar suscripción…'])
      expect(isOptOutPhrase(t)).toBe(true);
    for (const t of ['quiero la baja del plan', 'stop, por favor', '', null]) expect(isOptOutPhrase(t)).toBe(false);
  });

  it('"the opt-out quick reply": its text or payload, spelled with spaces, _ or - alike', () => {
    expect(isOptOutButton('No recibir promociones', undefined)).toBe(true);
    expect(isOptOutButton('Ver ofertas', 'STOP_PROMOTIONS')).toBe(true);
    expect(isOptOutButton(undefined, 'opt-out')).toBe(true);
    expect(isOptOutButton('Baja', undefined)).toBe(true);
    expect(isOptOutButton('Ver ofertas', 'OFFERS')).toBe(false);
  });

  it('one normaliser for both: accents, case, separators and surrounding punctuation go', () => {
    expect(normalizeOptOutText('¿Opt_Out?')).toBe('opt out');
    expect(normalizeOptOutText('DESUSCRIBÍ-ME')).toBe('desuscribi me');
  });
});
