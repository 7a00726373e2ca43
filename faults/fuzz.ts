// Property-based bad input from the service's own OpenAPI document: for every operation, bodies,
// path and query parameters that are wrong in the ways integrations get them wrong (wrong types,
// huge strings, unicode, missing and extra fields, bad UUIDs, negative numbers, broken JSON), and
// as many again with hostile input beyond the shapes (faults/hostile.ts) in its body, a query
// parameter or a path parameter. The property: no answer is a 5xx. Deterministic (seeded) so a
// failure can be replayed.
import fc from 'fast-check';
import { ADMIN_TOKEN } from '../bench/lib.js';
import { hostileBody, hostileRawBody, hostileUrlValue } from './hostile.js';

type Schema = Record<string, any>;

interface Body {
  raw: string | Buffer;
  contentType: string;
}

/** One request: the path and query exactly as sent (already encoded), and the body. */
interface Case {
  path: string;
  query: string;
  body: Body;
}

interface Operation {
  method: string;
  path: string;
  params: { name: string; in: string; schema: Schema }[];
  body: Schema | null;
  admin: boolean;
}

const weird = fc.oneof(
  fc.constant(null),
  fc.integer({ min: -1_000_000_000, max: 1_000_000_000 }),
  fc.double({ noNaN: false }),
  fc.boolean(),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constant('𝕳𝖔𝖑𝖆 ñandú 🎉 \u0000 \u202e'),
  fc.constant('x'.repeat(200_000)),
  fc.constant('00000000-0000-0000-0000-000000000000'),
  fc.constant('not-a-uuid'),
  fc.constant('+54 9 11 5555-5555'),
  fc.constant('{{variable}}'),
  fc.array(fc.anything({ maxDepth: 2 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 4 }),
  fc.constant({ __proto__: { admin: true } }),
  fc.constant({ constructor: { prototype: { polluted: true } } }),
);

const pathValue = fc.oneof(
  fc.uuid(),
  fc.constant('abc'),
  fc.constant('-1'),
  fc.constant('%00'),
  fc.constant('%F0%9F%8E%89'),
  fc.constant('..%2F..%2Fetc'),
  fc.constant('x'.repeat(2000)),
  fc.string({ minLength: 1, maxLength: 20 }).map(encodeURIComponent),
);

/** A plausible value for a schema, so that mutations hit deeper validation and handlers. */
function plausible(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return weird;
  // The document's own example is valid input: the surest way past validation.
  if (schema.example !== undefined)
    return fc.oneof({ weight: 2, arbitrary: fc.constant(schema.example) }, plausible({ ...schema, example: undefined }, depth));
  if (schema.anyOf || schema.oneOf) return fc.oneof(...(schema.anyOf ?? schema.oneOf).map((s: Schema) => plausible(s, depth + 1)));
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      if (schema.format === 'uuid') return fc.uuid();
      if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      return fc.oneof(
        fc.constantFrom('5491155554444', '+54 9 11 5555-0001', 'Ana', 'baja', 'https://example.com/hook'),
        fc.string({ maxLength: 30 }),
      );
    case 'integer':
    case 'number':
      return fc.integer({ min: -5, max: 500 });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(plausible(schema.items, depth + 1), { maxLength: 3 });
    case 'object': {
      const props = schema.properties ?? {};
      const rec: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(props)) rec[k] = plausible(v as Schema, depth + 1);
      if (!Object.keys(rec).length) return fc.dictionary(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 }), { maxKeys: 3 });
      return fc.record(rec, { requiredKeys: [] });
    }
    default:
      return weird;
  }
}

/** Mutations of a plausible body: a field made weird, a field dropped, extra fields, or not an object at all. */
function bodyArb(schema: Schema | null): fc.Arbitrary<Body> {
  const json = (v: unknown) => ({ raw: JSON.stringify(v) ?? 'null', contentType: 'application/json' });
  const base = plausible(schema ?? { type: 'object' });
  const keys = Object.keys(schema?.properties ?? {});
  const mutated = keys.length
    ? fc.tuple(base, fc.constantFrom(...keys), weird, fc.constantFrom('weird', 'drop')).map(([b, k, w, how]) => {
        const o = { ...((b as Record<string, unknown>) ?? {}) };
        if (how === 'drop') delete o[k];
        else o[k] = w;
        return json(o);
      })
    : base.map(json);
  return fc.oneof(
    { weight: 5, arbitrary: mutated },
    { weight: 2, arbitrary: base.map(json) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(base, fc.dictionary(fc.string({ maxLength: 12 }), weird, { maxKeys: 3 }))
        .map(([b, x]) => json({ ...(b as object), ...x })),
    },
    { weight: 1, arbitrary: weird.map(json) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        { raw: '{"phone": ', contentType: 'application/json' },
        { raw: '', contentType: 'application/json' },
        { raw: 'phone=123', contentType: 'application/x-www-form-urlencoded' },
        { raw: '<xml/>', contentType: 'text/xml' },
        { raw: `${'['.repeat(5000)}${']'.repeat(5000)}`, contentType: 'application/json' },
        { raw: '{"a":1,"a":2}', contentType: 'application/json' },
        { raw: '\uFEFF{}', contentType: 'application/json' },
        { raw: '{}', contentType: 'application/json; charset=latin1' },
      ),
    },
  );
}

function operations(doc: any): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method];
      if (!op) continue;
      const body = op.requestBody?.content?.['application/json']?.schema ?? null;
      ops.push({
        method: method.toUpperCase(),
        path,
        params: (op.parameters ?? []).map((p: any) => ({ name: p.name, in: p.in, schema: p.schema ?? {} })),
        body,
        admin: path.startsWith('/admin/'),
      });
    }
  }
  return ops;
}

/** The case from the document's shapes: every path and query parameter mutated together. */
function shapesArb(op: Operation): fc.Arbitrary<Case> {
  return fc.record({
    path: fc.tuple(...op.path.split('/').map((seg) => (seg.startsWith('{') ? pathValue : fc.constant(seg)))).map((s) => s.join('/')),
    query: fc
      .tuple(
        ...op.params
          .filter((p) => p.in === 'query')
          .map((p) => fc.tuple(fc.constant(p.name), fc.option(fc.oneof(plausible(p.schema), weird)))),
      )
      .map((pairs) => {
        const qs = new URLSearchParams();
        for (const [name, v] of pairs as [string, unknown][]) {
          if (v !== null && v !== undefined) qs.append(name, typeof v === 'string' ? v : JSON.stringify(v));
        }
        return qs.toString();
      }),
    body: bodyArb(op.body),
  });
}

/**
 * The case with hostile input in one place (the rest plausible): a query parameter, a path
 * parameter, or the body. Operator paths name the fuzzing account, so valid-looking input reaches
 * the handlers and the database; except the template sync, which would call Meta's Graph API
 * (unreachable here, a 502 that is not ours).
 */
function hostileArb(op: Operation, accountId: string | undefined): fc.Arbitrary<Case> {
  const segments = op.path.split('/');
  const params = segments.flatMap((seg, i) => (seg.startsWith('{') ? [i] : []));
  const ownAccount = op.admin && accountId !== undefined && !op.path.endsWith('/templates/sync');
  const plainSegment = (seg: string, i: number) =>
    !seg.startsWith('{') ? fc.constant(seg) : ownAccount && i === params[0] ? fc.constant(accountId!) : fc.uuid();
  const plainPath = fc.tuple(...segments.map(plainSegment));
  const json = (raw: string | Buffer): Body => ({ raw, contentType: 'application/json' });
  const base = plausible(op.body ?? { type: 'object' });
  const plainBody = base.map((b) => json(JSON.stringify(b) ?? '{}'));
  const names = op.params.filter((p) => p.in === 'query').map((p) => p.name);
  const path = plainPath.map((segs) => segs.join('/'));
  const arbs: fc.WeightedArbitrary<Case>[] = [
    {
      weight: 1,
      arbitrary: fc.record({
        path,
        query: fc.tuple(fc.constantFrom(...names, 'q'), hostileUrlValue).map(([n, v]) => `${encodeURIComponent(n)}=${v}`),
        body: plainBody,
      }),
    },
  ];
  if (params.length > 0) {
    const onePathParam = fc
      .tuple(plainPath, fc.constantFrom(...params), hostileUrlValue)
      .map(([segs, i, v]) => segs.map((x, j) => (j === i ? v : x)).join('/'));
    arbs.push({ weight: 1, arbitrary: fc.record({ path: onePathParam, query: fc.constant(''), body: plainBody }) });
  }
  if (op.method !== 'GET' && op.method !== 'DELETE') {
    const keys = Object.keys(op.body?.properties ?? {});
    const body = fc.oneof(
      { weight: 4, arbitrary: base.chain((b) => hostileBody(b, keys)).map(json) },
      { weight: 1, arbitrary: hostileRawBody.map(json) },
    );
    // Bodies hold most of the input: twice the weight of a parameter.
    arbs.push({ weight: 2, arbitrary: fc.record({ path, query: fc.constant(''), body }) });
  }
  return fc.oneof(...arbs);
}

export interface FuzzResult {
  total: number;
  /** Of which carried hostile input beyond the shapes. */
  hostile: number;
  operations: number;
  fiveXX: number;
  byStatus: Record<number, number>;
  samples: string[];
}

export async function fuzzOpenApi(
  url: string,
  key: string,
  totalRequests: number,
  seed = 20261123,
  accountId?: string,
): Promise<FuzzResult> {
  // Both documents: the customer API and the operator API (behind the operator token).
  const doc = await (await fetch(`${url}/api/v1/openapi.json`)).json();
  const adminDoc = await (await fetch(`${url}/admin/v1/openapi.json`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json();
  // Operations that would destroy the fuzzing account's own access are left out.
  const ops = [...operations(doc), ...operations(adminDoc)].filter((o) => !(o.method === 'DELETE' && o.path.includes('/keys/')));
  const perOp = Math.ceil(totalRequests / Math.max(1, ops.length));
  const result: FuzzResult = { total: 0, hostile: 0, operations: ops.length, fiveXX: 0, byStatus: {}, samples: [] };
  for (const op of ops) {
    await send(url, key, op, fc.sample(shapesArb(op), { numRuns: perOp, seed: seed + result.total }), result);
    const hostile = fc.sample(hostileArb(op, accountId), { numRuns: perOp, seed: seed + result.total });
    await send(url, key, op, hostile, result);
    result.hostile += hostile.length;
  }
  return result;
}

/** Sends the cases 16 at a time and counts the answers. */
async function send(url: string, key: string, op: Operation, cases: Case[], r: FuzzResult): Promise<void> {
  const batch = 16;
  for (let i = 0; i < cases.length; i += batch) {
    await Promise.all(
      cases.slice(i, i + batch).map(async (c) => {
        const target = `${url}${c.path}${c.query ? `?${c.query}` : ''}`;
        const headers: Record<string, string> = { authorization: `Bearer ${op.admin ? ADMIN_TOKEN : key}` };
        const withBody = op.method !== 'GET' && op.method !== 'DELETE';
        if (withBody) headers['content-type'] = c.body.contentType;
        let status = 0;
        try {
          const res = await fetch(target, { method: op.method, headers, body: withBody ? c.body.raw : undefined });
          await res.arrayBuffer();
          status = res.status;
        } catch {
          status = 0;
        }
        r.total++;
        r.byStatus[status] = (r.byStatus[status] ?? 0) + 1;
        if (status >= 500 || status === 0) {
          r.fiveXX++;
          if (r.samples.length < 10) {
            r.samples.push(
              `${op.method} ${c.path.slice(0, 80)}?${c.query.slice(0, 60)} → ${status} body ${String(c.body.raw).slice(0, 80)}`,
            );
          }
        }
      }),
    );
  }
}
