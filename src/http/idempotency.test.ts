import { describe, expect, it } from 'vitest';
import { ValidationError } from './errors.js';
import { canonicalJson } from './idempotency.js';

describe('canonicalJson (the Idempotency-Key fingerprint of a body)', () => {
  it('"the same body in another key order is the same request"', () => {
    expect(canonicalJson({ b: [1, { y: 2, x: null }], a: 'ñ' })).toBe(canonicalJson({ a: 'ñ', b: [1, { x: null, y: 2 }] }));
    expect(canonicalJson({ b: 1, a: undefined, c: [] })).toBe('{"b":1,"c":[]}');
  });

  it('"JSON nesting deeper than 32 levels is a 400": 32 levels are fingerprinted, 10,000 are refused with the validation error, never a stack overflow', () => {
    const nested = (levels: number): unknown => {
      let v: unknown = 1;
      for (let i = 0; i < levels; i++) v = i % 2 ? [v] : { a: v };
      return v;
    };
    expect(canonicalJson(nested(32))).toContain('1');
    expect(() => canonicalJson(nested(33))).toThrow(ValidationError);
    expect(() => canonicalJson(nested(10_000))).toThrow(ValidationError);
  });
});
