// renderUrl (automations.md "The http step's request"): {{…}} percent-encoded by component, {{{…}}} raw.
import { describe, expect, it } from 'vitest';
import { renderUrl } from './http-step.js';

const ctx = (variables: Record<string, unknown>) => ({ variables, attributes: {}, contact: { name: null, phone: null } });

describe('renderUrl', () => {
  it('encodes a value as a path segment, a query value and in the fragment; keeps the author text', () => {
    const v = ctx({ p: '../a b?x=1&y#z', n: 7 });
    expect(renderUrl('https://t.example/api/{{p}}/x?q={{p}}&n={{n}}#{{p}}', v)).toEqual({
      url: 'https://t.example/api/%2E%2E%2Fa%20b%3Fx%3D1%26y%23z/x?q=%2E%2E%2Fa%20b%3Fx%3D1%26y%23z&n=7#%2E%2E%2Fa%20b%3Fx%3D1%26y%23z',
      literalOrigin: 'https://t.example',
    });
  });
  it('inserts {{{…}}} raw; a missing value is empty; a lone surrogate does not throw', () => {
    expect(renderUrl('{{{base}}}/o/{{ falta }}/{{s}}', ctx({ base: 'https://t.example/v1', s: 'a\uD800' }))).toEqual({
      url: 'https://t.example/v1/o//a%EF%BF%BD',
      literalOrigin: null,
    });
  });
});
