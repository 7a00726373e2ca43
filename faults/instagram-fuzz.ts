// Property-based bad input for the Instagram receiver (POST /channels/instagram/webhook, issue 17):
// Meta's JSON (object, entry[], messaging[], changes[]) with a value of the wrong type, a huge
// number, deep nesting or hostile text at any path, a key dropped or written twice, bodies that
// are not JSON or not UTF-8, bodies naming another Instagram account, all signed with a connected
// account's app secret so that they get past X-Hub-Signature-256 into the parser and the inbound
// path; a share of valid payloads (each direct message must be stored) and a share unsigned or
// tampered (each must be 401). The property: no answer is a 5xx. Deterministic (seeded).
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { deepJson, hostileBody, hostileRawBody, hostileText, oddNumberJson } from './hostile.js';

/** A connected Instagram social account, as the operator API was given it. */
export interface IgAccount {
  igUserId: string;
  appSecret: string;
}

type Kind = 'valid' | 'malformed' | 'unsigned';

interface IgCase {
  kind: Kind;
  /** What was done to the payload, for the failure samples. */
  note: string;
  raw: Buffer;
  /** The X-Hub-Signature-256 header (absent: none sent). */
  signature?: string;
  contentType?: string;
  /** Direct-message mids of a valid case: each must be stored. */
  mids: string[];
}

const sign = (raw: Buffer, secret: string) => `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Path = (string | number)[];

/** Every path in a JSON value (the root included). */
function paths(v: Json, at: Path = []): Path[] {
  const out: Path[] = [at];
  if (Array.isArray(v)) for (const [i, x] of v.entries()) out.push(...paths(x, [...at, i]));
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...paths(x, [...at, k]));
  return out;
}

const SENTINEL = '\u0001fuzz\u0001';

/**
 * The JSON text of `v` with the node at `path` written as `raw` (exact JSON text, so numbers past a
 * double and nesting past any limit arrive as written), or dropped (`raw` undefined).
 */
function spliceAt(v: Json, path: Path, raw: string | undefined): string {
  if (path.length === 0) return raw ?? '';
  const copy = structuredClone(v) as Json;
  let parent: any = copy;
  for (const k of path.slice(0, -1)) parent = parent[k];
  const last = path[path.length - 1]!;
  if (raw === undefined) {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
    return JSON.stringify(copy);
  }
  parent[last] = SENTINEL;
  return JSON.stringify(copy).replace(JSON.stringify(SENTINEL), () => raw);
}

/** An object at `path` with one of its keys written twice (the odd value first or last). */
function duplicateKeyAt(v: Json, path: Path, odd: string, last: boolean): string | null {
  let node: any = v;
  for (const k of path) node = node[k];
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return null;
  const keys = Object.keys(node);
  if (keys.length === 0) return null;
  const key = JSON.stringify(keys[last ? keys.length - 1 : 0]);
  const text = JSON.stringify(node);
  const dup = last ? `${text.slice(0, -1)},${key}:${odd}}` : `{${key}:${odd},${text.slice(1)}`;
  return path.length === 0 ? dup : spliceAt(v, path, dup);
}

/** Values of the wrong kind for any place in Meta's JSON, as JSON text. */
const oddJson: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      'null',
      'true',
      'false',
      '0',
      '-1',
      '1.5',
      '""',
      '" "',
      '"x"',
      '"instagram"',
      '"page"',
      '[]',
      '{}',
      '[null]',
      '[{}]',
      '[[[[[[[[[[]]]]]]]]]]',
      '{"id":{}}',
      '{"id":null}',
      '{"mid":null,"text":"hola"}',
      '{"type":null,"payload":null}',
      '{"__proto__":{"polluted":true}}',
      '{"constructor":{"prototype":{"polluted":true}}}',
    ),
  },
  { weight: 2, arbitrary: oddNumberJson },
  { weight: 3, arbitrary: hostileText.map((s) => JSON.stringify(s)) },
  { weight: 1, arbitrary: deepJson },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 3 }).map((x) => JSON.stringify(x) ?? 'null') },
);

const uuidMid = fc.uuid().map((u) => `aWdfZAG1faXRlbToxOklH${u.replaceAll('-', '')}`);
// A few customers, so that concurrent payloads race on one contact and one conversation.
const customer = fc.integer({ min: 1, max: 12 }).map((n) => `9${String(n).padStart(15, '0')}`);
const now = Date.parse('2026-11-26T12:00:00Z');
const timestamp = fc.integer({ min: now - 3_600_000, max: now + 3_600_000 });

/** One messaging event Meta sends: a text, an attachment, a read, an echo, a reaction. */
function messagingArb(igUserId: string) {
  const head = fc.record({ sender: customer.map((id) => ({ id })), timestamp });
  const withParties = <T extends object>(body: fc.Arbitrary<T>) =>
    fc.tuple(head, body).map(([h, b]) => ({ sender: h.sender, recipient: { id: igUserId }, timestamp: h.timestamp, ...b }));
  return fc.oneof(
    {
      weight: 5,
      arbitrary: withParties(
        fc.record({
          message: fc.record({
            mid: uuidMid,
            text: fc.oneof(fc.string({ minLength: 1, maxLength: 80 }), fc.constant('Hola, ¿tienen talle M? 🎉')),
          }),
        }),
      ),
    },
    {
      weight: 2,
      arbitrary: withParties(
        fc.record({
          message: fc.record({
            mid: uuidMid,
            attachments: fc.array(
              fc.record({
                type: fc.constantFrom('image', 'video', 'audio', 'file', 'ig_reel', 'reel', 'share', 'story_mention'),
                payload: fc.record({ url: fc.constant('https://lookaside.fbsbx.com/ig_messaging_cdn/?asset_id=1') }),
              }),
              { minLength: 1, maxLength: 2 },
            ),
          }),
        }),
      ),
    },
    { weight: 1, arbitrary: withParties(fc.record({ read: fc.record({ mid: uuidMid }) })) },
    {
      weight: 1,
      arbitrary: fc.tuple(head, uuidMid).map(([h, mid]) => ({
        sender: { id: igUserId },
        recipient: h.sender,
        timestamp: h.timestamp,
        message: { mid, text: 'eco', is_echo: true },
      })),
    },
    {
      weight: 1,
      arbitrary: withParties(
        fc.record({ reaction: fc.record({ mid: uuidMid, action: fc.constant('react'), reaction: fc.constant('love') }) }),
      ),
    },
  );
}

/** Meta's envelope for one account: object "instagram", one entry with its messaging events (and sometimes changes). */
function envelopeArb(igUserId: string): fc.Arbitrary<Json> {
  return fc
    .tuple(
      fc.array(messagingArb(igUserId), { minLength: 1, maxLength: 3 }),
      fc.option(
        fc.constant([
          { field: 'comments', value: { id: '1790', text: 'precio?', from: { id: '1', username: 'ana' }, media: { id: '2' } } },
        ]),
        { freq: 4 },
      ),
      timestamp,
    )
    .map(([messaging, changes, time]) => ({
      object: 'instagram',
      entry: [{ id: igUserId, time, messaging, ...(changes ? { changes } : {}) }],
    })) as unknown as fc.Arbitrary<Json>;
}

/** The direct messages of a payload that are ours to store (not echoes). */
function directMids(v: Json): string[] {
  const mids: string[] = [];
  for (const e of (v as any).entry) for (const m of e.messaging ?? []) if (m.message && !m.message.is_echo) mids.push(m.message.mid);
  return mids;
}

const fixedRaw: [string, string | Buffer][] = [
  ['empty body', ''],
  ['truncated JSON', '{"object":"instagram","entry":[{"id":'],
  ['XML', '<xml/>'],
  ['form encoding', 'object=instagram&entry=1'],
  ['JSON null', 'null'],
  ['JSON array', '[]'],
  ['JSON string', '"instagram"'],
  ['JSON number', '0'],
  ['JSON true', 'true'],
  ['BOM before the object', '\uFEFF{"object":"instagram","entry":[]}'],
  ['NUL byte', Buffer.from([0x7b, 0x00, 0x7d])],
  ['UTF-16', Buffer.from('{"object":"instagram"}', 'utf16le')],
  ['entry is an object', '{"object":"instagram","entry":{"id":"1","messaging":[]}}'],
  ['entry is a string', '{"object":"instagram","entry":"[]"}'],
  ['object is not instagram', '{"object":"page","entry":[]}'],
  ['object is a number', '{"object":1e999,"entry":[]}'],
];

/** A malformed payload for `ig` (signed with its secret, or naming another account). */
function malformedArb(ig: IgAccount, other: IgAccount): fc.Arbitrary<IgCase> {
  const signed = (note: string, raw: string | Buffer, secret = ig.appSecret, contentType = 'application/json'): IgCase => {
    const buf = Buffer.isBuffer(raw) ? raw : Buffer.from(raw, 'utf8');
    return { kind: 'malformed', note, raw: buf, signature: sign(buf, secret), contentType, mids: [] };
  };
  const env = envelopeArb(ig.igUserId);
  const atPath = env.chain((v) => fc.tuple(fc.constant(v), fc.constantFrom(...paths(v))));
  const show = (p: Path) => (p.length ? p.join('.') : '(root)');
  return fc.oneof(
    // A value of the wrong kind at any path (every level of Meta's JSON).
    {
      weight: 8,
      arbitrary: fc.tuple(atPath, oddJson).map(([[v, p], odd]) => signed(`${show(p)} = ${odd.slice(0, 60)}`, spliceAt(v, p, odd))),
    },
    // A key dropped.
    {
      weight: 2,
      arbitrary: atPath.filter(([, p]) => p.length > 0).map(([v, p]) => signed(`${show(p)} dropped`, spliceAt(v, p, undefined))),
    },
    // A key written twice, the odd value first or last.
    {
      weight: 2,
      arbitrary: fc
        .tuple(atPath, oddJson, fc.boolean())
        .map(([[v, p], odd, last]) => {
          const raw = duplicateKeyAt(v, p, odd, last);
          return raw === null ? null : signed(`duplicate key in ${show(p)} (${last ? 'last' : 'first'} = ${odd.slice(0, 40)})`, raw);
        })
        .filter((c): c is IgCase => c !== null),
    },
    // Hostile text spliced into any string (keys and values), or an odd top-level field.
    {
      weight: 2,
      arbitrary: env.chain((v) => hostileBody(v, ['object', 'entry'])).map((raw) => signed(`hostile text: ${raw.slice(0, 60)}`, raw)),
    },
    // The fields the brief names, with the values integrations get wrong.
    {
      weight: 3,
      arbitrary: fc
        .tuple(
          env,
          fc.constantFrom(
            ['message', 'mid'],
            ['message', 'text'],
            ['message', 'attachments'],
            ['sender'],
            ['sender', 'id'],
            ['recipient'],
            ['recipient', 'id'],
            ['timestamp'],
            ['message'],
            ['read', 'mid'],
          ),
          fc.oneof(
            fc.constantFrom(
              'null',
              '""',
              '123',
              '{}',
              '[]',
              '"a\\u0000b"',
              '"\\ud800"',
              '"\\udfff\\ud800"',
              '"\\u0000"',
              '1e400',
              '-1',
              '99999999999999999999999',
              '[null,1,{"type":null},{"type":{}},{"type":"image","payload":null},{"type":"desconocido"}]',
            ),
            fc.integer({ min: 1_000, max: 500_000 }).map((n) => JSON.stringify('ñ'.repeat(n))),
          ),
        )
        .map(([v, field, odd]) => {
          const p: Path = ['entry', 0, 'messaging', 0, ...field];
          const first = (v as any).entry[0].messaging[0];
          if (field.length > 1 && (first[field[0]!] === null || typeof first[field[0]!] !== 'object')) p.splice(4, field.length, field[0]!);
          return signed(`${show(p)} = ${odd.slice(0, 60)}`, spliceAt(v, p, odd));
        }),
    },
    // Whole bodies that are not Meta's JSON at all: empty, not JSON, not UTF-8, deep.
    { weight: 2, arbitrary: fc.constantFrom(...fixedRaw).map(([note, raw]) => signed(note, raw)) },
    { weight: 1, arbitrary: hostileRawBody.map((raw) => signed(`raw body ${raw.subarray(0, 40).toString('utf8')}`, raw)) },
    // Bodies naming another Instagram account: ours signed, theirs named; an unknown one; both in one body.
    {
      weight: 2,
      arbitrary: fc
        .tuple(envelopeArb(other.igUserId), envelopeArb('17840000000000000'), env, fc.nat({ max: 2 }))
        .map(([theirs, unknown, ours, which]) => {
          if (which === 0) return signed('names the other account, signed with ours', JSON.stringify(theirs));
          if (which === 1) return signed('names an unknown igUserId', JSON.stringify(unknown));
          const both = { object: 'instagram', entry: [...(ours as any).entry, ...(theirs as any).entry] };
          return signed('names both accounts, signed with ours', JSON.stringify(both));
        }),
    },
    // Another content type over a signed body.
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          env,
          fc.constantFrom(
            'text/plain',
            'application/json; charset=latin1',
            'application/x-www-form-urlencoded',
            'application/octet-stream',
          ),
        )
        .map(([v, ct]) => signed(`content-type ${ct}`, JSON.stringify(v), ig.appSecret, ct)),
    },
  );
}

/** A valid payload, signed by the account it names. */
function validArb(ig: IgAccount, other: IgAccount): fc.Arbitrary<IgCase> {
  return fc.oneof({ weight: 5, arbitrary: fc.constant(ig) }, { weight: 1, arbitrary: fc.constant(other) }).chain((who) =>
    envelopeArb(who.igUserId).map((v) => {
      const raw = Buffer.from(JSON.stringify(v), 'utf8');
      return {
        kind: 'valid' as const,
        note: 'valid',
        raw,
        signature: sign(raw, who.appSecret),
        contentType: 'application/json',
        mids: directMids(v),
      };
    }),
  );
}

/** Unsigned, signed with a wrong secret, tampered after signing, or a malformed header: 401. */
function unsignedArb(ig: IgAccount): fc.Arbitrary<IgCase> {
  const bodies = fc.oneof(
    envelopeArb(ig.igUserId).map((v) => Buffer.from(JSON.stringify(v), 'utf8')),
    fc.constantFrom(...fixedRaw).map(([, raw]) => (Buffer.isBuffer(raw) ? raw : Buffer.from(raw, 'utf8'))),
  );
  const good = (raw: Buffer) => sign(raw, ig.appSecret);
  const how = fc.constantFrom<[string, (raw: Buffer) => { raw: Buffer; signature?: string }]>(
    ['unsigned', (raw) => ({ raw })],
    ['signed with another secret', (raw) => ({ raw, signature: sign(raw, 'not-the-app-secret') })],
    ['signed with an empty secret', (raw) => ({ raw, signature: sign(raw, '') })],
    ['tampered after signing (a byte appended)', (raw) => ({ raw: Buffer.concat([raw, Buffer.from(' ')]), signature: good(raw) })],
    [
      'tampered after signing (a byte changed)',
      (raw) => {
        const t = Buffer.from(raw.length ? raw : Buffer.from('x'));
        t[t.length >> 1] ^= 0x01;
        return { raw: t, signature: good(raw) };
      },
    ],
    ['empty header', (raw) => ({ raw, signature: '' })],
    ['sha256= without the digest', (raw) => ({ raw, signature: 'sha256=' })],
    ['sha1 digest', (raw) => ({ raw, signature: `sha1=${createHmac('sha1', ig.appSecret).update(raw).digest('hex')}` })],
    ['digest without the sha256= prefix', (raw) => ({ raw, signature: good(raw).slice(7) })],
    ['digest not hex', (raw) => ({ raw, signature: `sha256=${'z'.repeat(64)}` })],
    ['digest cut short', (raw) => ({ raw, signature: good(raw).slice(0, -2) })],
    ['two signatures in one header', (raw) => ({ raw, signature: `${good(raw)}, sha256=${'0'.repeat(64)}` })],
  );
  return fc
    .tuple(bodies, how)
    .map(([raw, [note, fn]]) => ({ kind: 'unsigned' as const, note, contentType: 'application/json', mids: [], ...fn(raw) }));
}

export interface IgFuzzResult {
  total: number;
  byKind: Record<Kind, number>;
  fiveXX: number;
  /** Valid payloads not answered 200, unsigned/tampered ones not answered 401. */
  wrong: number;
  byStatus: Record<number, number>;
  samples: string[];
  /** Every 5xx case: what was done, the answer, the exact body (to replay or report). */
  failures: { note: string; status: number; answer: string; body: string; signature?: string }[];
  /** The direct-message mids of valid payloads answered 200 (each must be stored once). */
  acknowledgedMids: Set<string>;
}

export async function fuzzInstagram(
  url: string,
  ig: IgAccount,
  other: IgAccount,
  totalRequests: number,
  seed = 20261126,
): Promise<IgFuzzResult> {
  const arb = fc.oneof(
    { weight: 15, arbitrary: validArb(ig, other) },
    { weight: 75, arbitrary: malformedArb(ig, other) },
    { weight: 10, arbitrary: unsignedArb(ig) },
  );
  const cases = fc.sample(arb, { numRuns: totalRequests, seed });
  const r: IgFuzzResult = {
    total: 0,
    byKind: { valid: 0, malformed: 0, unsigned: 0 },
    fiveXX: 0,
    wrong: 0,
    byStatus: {},
    samples: [],
    failures: [],
    acknowledgedMids: new Set(),
  };
  const batch = 16;
  for (let i = 0; i < cases.length; i += batch) {
    await Promise.all(cases.slice(i, i + batch).map((c) => send(url, c, r)));
  }
  return r;
}

async function send(url: string, c: IgCase, r: IgFuzzResult): Promise<void> {
  const headers: Record<string, string> = {};
  if (c.contentType) headers['content-type'] = c.contentType;
  if (c.signature !== undefined) headers['x-hub-signature-256'] = c.signature;
  let status = 0;
  let answer = '';
  try {
    const res = await fetch(`${url}/channels/instagram/webhook`, { method: 'POST', headers, body: c.raw });
    answer = (await res.text()).slice(0, 120);
    status = res.status;
  } catch (err) {
    answer = String(err);
  }
  r.total++;
  r.byKind[c.kind]++;
  r.byStatus[status] = (r.byStatus[status] ?? 0) + 1;
  const expected = c.kind === 'valid' ? 200 : c.kind === 'unsigned' ? 401 : null;
  const fiveXX = status >= 500 || status === 0;
  if (fiveXX) {
    r.fiveXX++;
    r.failures.push({ note: c.note, status, answer, body: c.raw.toString('utf8'), signature: c.signature });
  } else if (expected !== null && status !== expected) r.wrong++;
  if (c.kind === 'valid' && status === 200) for (const mid of c.mids) r.acknowledgedMids.add(mid);
  // One sample per place and kind of fault (the note without its value); the bodies are in `failures`.
  const sample = `${c.kind} ${c.note.replace(/ = .*/s, ' = …').slice(0, 70)} → ${status}`;
  if ((fiveXX || (expected !== null && status !== expected)) && r.samples.length < 10 && !r.samples.includes(sample))
    r.samples.push(sample);
}
