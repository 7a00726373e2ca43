// Property-based input beyond the OpenAPI shapes: text PostgreSQL cannot store (NUL, lone
// surrogates), other control characters, very long strings, JSON nested far past 32 levels,
// numbers JSON can write but a double or a bigint column cannot hold, and bytes that are not
// UTF-8 at all. Each arbitrary gives the exact text to send (JSON text, or a percent-encoded
// path segment or query value), so nothing on the way repairs it.
import fc from 'fast-check';

const controlChar = fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c));
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
// NUL and lone surrogates are what PostgreSQL cannot store: they come up most.
const oddChar = fc.oneof(
  { weight: 3, arbitrary: fc.constant('\u0000') },
  { weight: 3, arbitrary: loneSurrogate },
  { weight: 2, arbitrary: controlChar },
  { weight: 1, arbitrary: fc.constantFrom('\u007f', '\u0085', '\u2028', '\u202e', '\ufeff', '\ufffe', '\uffff') },
);

/** Ordinary text with odd characters spliced in, text of any code points, or very long text. */
export const hostileText = fc.oneof(
  {
    weight: 5,
    arbitrary: fc
      .tuple(fc.string({ maxLength: 12 }), fc.array(oddChar, { minLength: 1, maxLength: 4 }), fc.string({ maxLength: 12 }))
      .map(([a, odd, b]) => `${a}${odd.join('')}${b}`),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 2_000, max: 300_000 }), fc.constantFrom('x', 'ñ', '🎉', '\u0000', '\ud800'))
      .map(([n, c]) => c.repeat(n)),
  },
);

/** A number as JSON text: past the double range, past safe integers, negative zero, odd spellings. */
export const oddNumberJson = fc.oneof(
  fc.constantFrom(
    '1e400',
    '-1e400',
    '1e-400',
    '-0',
    '9007199254740993',
    '123456789012345678901234567890',
    '9223372036854775808',
    '2147483648',
    '1E+2',
    '0.1e1',
  ),
  fc.bigInt({ min: -(2n ** 90n), max: 2n ** 90n }).map(String),
  fc.double().map((d) => JSON.stringify(d)),
);

/** JSON text nested `depth` levels (around the 32-level bound, and far past it). */
export const deepJson = fc
  .tuple(fc.oneof(fc.constantFrom(31, 32, 33), fc.integer({ min: 34, max: 20_000 })), fc.constantFrom('array', 'object', 'mixed'))
  .map(([depth, kind]) => {
    let open = '';
    let close = '';
    for (let i = 0; i < depth; i++) {
      const obj = kind === 'object' || (kind === 'mixed' && i % 2 === 1);
      open += obj ? '{"a":' : '[';
      close = (obj ? '}' : ']') + close;
    }
    return `${open}"fondo"${close}`;
  });

/** UTF-8 bytes, percent-encoded (a lone surrogate comes out as U+FFFD, as any client sends it). */
const percentEncoded = (s: string): string =>
  [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');

/** A path segment or query value, percent-encoded: hostile text, and byte sequences that are not UTF-8. */
export const hostileUrlValue = fc.oneof(
  hostileText.filter((s) => s.length <= 4_000).map(percentEncoded),
  fc.constantFrom('%00', 'a%00b', '%ED%A0%80', '%ED%B0%80', '%C0%80', '%E0%80', '%FF', '%F4%90%80%80', '%1B%5B31m', '%0D%0A'),
);

/** A JSON string token with the text's odd characters escaped (as JSON.stringify writes them). */
const jsonString = (s: string): string => JSON.stringify(s);

/**
 * The JSON text of `body` with hostile input in one place: a string (value or key, at any depth)
 * with odd characters added, a field holding deep JSON or an odd number, or a new odd key.
 */
export function hostileBody(body: unknown, fields: string[]): fc.Arbitrary<string> {
  const text = JSON.stringify(body ?? {}) ?? '{}';
  const strings = [...text.matchAll(/"(?:[^"\\]|\\.)*"/g)];
  const isObject = body !== null && typeof body === 'object' && !Array.isArray(body);
  const withField = (key: string, raw: string): string => {
    const rest = isObject ? JSON.stringify(Object.fromEntries(Object.entries(body as object).filter(([k]) => k !== key))) : '{}';
    return rest === '{}' ? `{${jsonString(key)}:${raw}}` : `{${jsonString(key)}:${raw},${rest.slice(1)}`;
  };
  const field = fc.constantFrom(...(fields.length ? fields : ['name']));
  const options: fc.Arbitrary<string>[] = [
    fc.tuple(field, fc.oneof(hostileText.map(jsonString), oddNumberJson, deepJson)).map(([k, raw]) => withField(k, raw)),
    fc
      .tuple(
        hostileText.filter((s) => s.length <= 200),
        fc.string({ maxLength: 8 }),
      )
      .map(([k, v]) => withField(k, jsonString(v))),
  ];
  if (strings.length > 0) {
    options.push(
      fc.tuple(fc.nat({ max: strings.length - 1 }), hostileText).map(([i, odd]) => {
        const m = strings[i]!;
        const spliced = jsonString(`${JSON.parse(m[0]) as string}${odd}`);
        return `${text.slice(0, m.index)}${spliced}${text.slice(m.index! + m[0].length)}`;
      }),
    );
  }
  return fc.oneof(...options);
}

/** Whole bodies: deep JSON, raw control bytes inside a JSON string, bytes that are not UTF-8. */
export const hostileRawBody = fc.oneof(
  deepJson.map((text) => Buffer.from(text)),
  fc.constantFrom(
    Buffer.from('{"name":"a\u0000b"}'),
    Buffer.from('{"name":"a\tb\u001bc"}'),
    Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]),
    Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xc0, 0x80, 0xff, 0x22, 0x7d]),
    Buffer.from('{"n\\u0000":"x"}'),
    Buffer.from('"\\udfff"'),
  ),
);
