import { describe, expect, it } from 'vitest';
import { findUnstorable, jsonTextSuspect, MAX_JSON_DEPTH } from './storable.js';

const nested = (depth: number): string => `${'['.repeat(depth)}1${']'.repeat(depth)}`;

describe('jsonTextSuspect: the one-pass read of a JSON body that spares clean bodies the walk (decisions.md "Naming and shapes")', () => {
  it('a clean body is not suspect, whatever its strings hold: brackets, escaped quotes and backslashes, emoji, other escapes', () => {
    for (const value of [
      { phone: '+54 9 11 5555-5555', name: 'Ana [la] {jefa}', attributes: { a: 'x"y', b: 'c:\\u0000', c: '😀', d: '\u00e9\n' } },
      [1, 2, { a: [{}] }],
      'texto',
    ]) {
      const text = JSON.stringify(value);
      expect(jsonTextSuspect(text), text).toBe(false);
      expect(findUnstorable(JSON.parse(text))).toBeNull();
    }
  });

  it('"Text fields hold no NUL (\\u0000) and no lone surrogate": every body the walk refuses is suspect', () => {
    for (const value of [
      { name: 'Ana\u0000' },
      { 'ciu\u0000dad': 'x' },
      { name: 'A\ud83d' },
      ['\udc00'],
      { a: { b: [{ c: 'x\u0000' }] } },
    ]) {
      const text = JSON.stringify(value);
      expect(findUnstorable(JSON.parse(text))).not.toBeNull();
      expect(jsonTextSuspect(text), text).toBe(true);
    }
    // Escapes in any letter case.
    expect(jsonTextSuspect('{"a":"\\uD83D"}')).toBe(true);
    expect(jsonTextSuspect('{"a":"\\udfff"}')).toBe(true);
  });

  it('"JSON nesting deeper than 32 levels is a 400": 32 levels are not suspect, 33 are; brackets inside strings do not count', () => {
    expect(jsonTextSuspect(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonTextSuspect(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonTextSuspect(JSON.stringify({ a: '['.repeat(100) }))).toBe(false);
  });
});
