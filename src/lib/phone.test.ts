import { describe, expect, it } from 'vitest';
import { canonicalPhone } from './phone.js';

const ok = (s: string) => {
  const r = canonicalPhone(s);
  if (!r.ok) throw new Error(`${s}: ${r.message}`);
  return r.phone;
};

describe('canonicalPhone (decisions.md "Phones are normalised to digits")', () => {
  it('+54 11 5555-5555, 54 9 11 5555 5555 and 5491155555555 are one contact', () => {
    expect(ok('+54 11 5555-5555')).toBe('5491155555555');
    expect(ok('54 9 11 5555 5555')).toBe('5491155555555');
    expect(ok('5491155555555')).toBe('5491155555555');
    expect(ok('+54 (11) 5555.5555')).toBe('5491155555555');
  });
  it('Mexico: 52 1 → 52', () => {
    expect(ok('+52 1 55 1234 5678')).toBe('525512345678');
    expect(ok('+52 55 1234 5678')).toBe('525512345678');
  });
  it('other countries keep their international digits', () => {
    expect(ok('+34 612 345 678')).toBe('34612345678');
    expect(ok('+1 415 555 2671')).toBe('14155552671');
  });
  it('rejects what is not an international number, with a Spanish reason', () => {
    for (const bad of ['123456', '+54 11', 'hola mundo', '++5491155555555', '12345', 'x'.repeat(33), '5491155555555abc']) {
      const r = canonicalPhone(bad);
      expect(r.ok, bad).toBe(false);
      if (!r.ok) expect(r.message).toMatch(/internacional/);
    }
  });
});
