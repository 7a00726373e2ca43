// Bounded contact attributes (decisions.md "Attribute counts") and bodies no statement or walk can
// choke on: many keys in one body, JSON nested far past 32 levels, with and without Idempotency-Key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rememberFields } from '../../src/contacts/attributes.js';
import { textFor } from '../../src/http/messages.es-AR.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const problems = (body: { error: { message: string } }) =>
  JSON.parse(body.error.message) as { path: (string | number)[]; message: string }[];

/** `n` attributes named `<prefix>0…`, each with a text value. */
const attrs = (prefix: string, n: number, from = 0): Record<string, string> =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${from + i}`, `v${from + i}`]));

const fieldCount = async (accountId: string) =>
  (
    await app.rt.services.db
      .selectFrom('contact_fields')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow()
  ).n;

const contactCount = async (accountId: string) =>
  (await app.rt.services.db.selectFrom('contacts').select('id').where('account_id', '=', accountId).execute()).length;

const TOO_MANY = textFor('attributes_too_many', { max: 100 });
const CONTACT_FULL = textFor('attributes_contact_full', { max: 200 });

describe('attribute counts (decisions.md "Attribute counts")', () => {
  let acc: TestAccount;
  beforeAll(async () => {
    acc = await app.createAccount();
  });

  it('"at most 100 keys in one request (400 naming attributes)": 100 are stored, 101 are refused and nothing is stored', async () => {
    const phone = freshPhone();
    const over = await acc.call('POST', '/contacts', { phone, attributes: attrs('r', 101) });
    expect(over.status).toBe(400);
    expect(problems(over.body)).toEqual([{ path: ['attributes'], message: TOO_MANY }]);
    const ok = await acc.call('POST', '/contacts', { phone, attributes: attrs('r', 100) });
    expect(ok.status).toBe(201);
    expect(Object.keys(ok.body.attributes)).toHaveLength(100);
  });

  it('"at most 200 keys on one contact after the merge (400 naming attributes, nothing stored)"', async () => {
    const phone = freshPhone();
    expect((await acc.call('POST', '/contacts', { phone, name: 'Ana', attributes: attrs('m', 100) })).status).toBe(201);
    const full = await acc.call('POST', '/contacts', { phone, attributes: attrs('m', 100, 100) });
    expect(full.status).toBe(200);
    expect(Object.keys(full.body.attributes)).toHaveLength(200);
    const over = await acc.call('POST', '/contacts', { phone, name: 'Otra', attributes: { m0: 'cambiado', extra: 'x' } });
    expect(over.status).toBe(400);
    expect(problems(over.body)).toEqual([{ path: ['attributes'], message: CONTACT_FULL }]);
    const got = await acc.call('GET', `/contacts/${full.body.id}`);
    expect(got.body).toEqual(full.body);
    // Replacing values, or adding one key while removing another, keeps 200: allowed.
    const swap = await acc.call('POST', '/contacts', { phone, attributes: { m0: 'cambiado', m1: null, extra: 'x' } });
    expect(swap.status).toBe(200);
    expect(Object.keys(swap.body.attributes)).toHaveLength(200);
    expect(swap.body.attributes).toMatchObject({ m0: 'cambiado', extra: 'x' });
    expect(swap.body.attributes).not.toHaveProperty('m1');
  });

  it('"A null value removes that key from the contact (JSON Merge Patch, RFC 7386)"; null makes no field; any other non-string is a 400', async () => {
    const own = await app.createAccount();
    const phone = freshPhone();
    const first = await own.call('POST', '/contacts', { phone, attributes: { ciudad: 'Rosario', plan: 'oro', nunca: null } });
    expect(first.status).toBe(201);
    expect(first.body.attributes).toEqual({ ciudad: 'Rosario', plan: 'oro' });
    const second = await own.call('POST', '/contacts', { phone, attributes: { plan: null, pedido: '77', otra: null } });
    expect(second.status).toBe(200);
    expect(second.body.attributes).toEqual({ ciudad: 'Rosario', pedido: '77' });
    expect((await own.call('GET', `/contacts/${first.body.id}`)).body.attributes).toEqual({ ciudad: 'Rosario', pedido: '77' });
    const fields = await app.rt.services.db
      .selectFrom('contact_fields')
      .select('key')
      .where('account_id', '=', own.id)
      .orderBy('key')
      .execute();
    expect(fields.map((f) => f.key)).toEqual(['ciudad', 'pedido', 'plan']);
    for (const value of [1, true, {}, []]) {
      const res = await own.call('POST', '/contacts', { phone, attributes: { ciudad: value } });
      expect(res.status, JSON.stringify(value)).toBe(400);
      expect(problems(res.body).map((p) => p.path)).toContainEqual(['attributes', 'ciudad']);
    }
  });

  it('"at most 1,000 attribute fields per account (409 …máximo de campos…)": the 1,000th is created, the 1,001st refused, nothing stored', async () => {
    const own = await app.createAccount();
    for (let i = 0; i < 9; i++)
      expect((await own.call('POST', '/contacts', { phone: freshPhone(), attributes: attrs(`f${i}_`, 100) })).status).toBe(201);
    expect((await own.call('POST', '/contacts', { phone: freshPhone(), attributes: attrs('g', 99) })).status).toBe(201);
    const last = await own.call('POST', '/contacts', { phone: freshPhone(), attributes: { g99: 'x', f0_0: 'ya existe' } });
    expect(last.status).toBe(201);
    expect(await fieldCount(own.id)).toBe(1000);
    const contacts = await contactCount(own.id);
    const phone = freshPhone();
    const over = await own.call('POST', '/contacts', { phone, attributes: { f0_1: 'ya existe', nuevo: 'x' } });
    expect(over.status).toBe(409);
    expect(over.body).toEqual({ error: textFor('attribute_fields_limit', { max: 1000, wanted: 1, free: 0 }), cause: null });
    expect(over.body.error).toMatch(/máximo de campos/);
    expect(await contactCount(own.id)).toBe(contacts);
    expect(await fieldCount(own.id)).toBe(1000);
    // Fields the account has are still usable, and removing a key needs no field.
    const reuse = await own.call('POST', '/contacts', { phone, attributes: { f0_1: 'x', g5: 'y', nuevo: null } });
    expect(reuse.status).toBe(201);
    expect(reuse.body.attributes).toEqual({ f0_1: 'x', g5: 'y' });
  });

  it('concurrency: two requests never pass the 200 of one contact, nor the 1,000 of an account, together', async () => {
    const own = await app.createAccount();
    const phone = freshPhone();
    await own.call('POST', '/contacts', { phone, attributes: attrs('a', 100) });
    const merges = await Promise.all([
      own.call('POST', '/contacts', { phone, attributes: attrs('b', 100) }),
      own.call('POST', '/contacts', { phone, attributes: attrs('c', 100) }),
    ]);
    expect(merges.map((r) => r.status).sort()).toEqual([200, 400]);
    const id = merges.find((r) => r.status === 200)!.body.id;
    expect(Object.keys((await own.call('GET', `/contacts/${id}`)).body.attributes)).toHaveLength(200);
    // Another account: 20 racing updates of its contacts, 60 new fields each; 16 fit in the 1,000, 4 are refused.
    const other = await app.createAccount();
    const phones = Array.from({ length: 20 }, () => freshPhone());
    for (const p of phones) await other.call('POST', '/contacts', { phone: p });
    const racing = await Promise.all(phones.map((p, i) => other.call('POST', '/contacts', { phone: p, attributes: attrs(`p${i}_`, 60) })));
    expect(racing.filter((r) => r.status === 200)).toHaveLength(16);
    expect(racing.filter((r) => r.status === 409)).toHaveLength(4);
    expect(await fieldCount(other.id)).toBe(960);
  });

  it('campaign audience filters follow the same count: "at most 100 keys in one request (400 naming attributes)"', async () => {
    const res = await app.admin('POST', `/accounts/${acc.id}/campaigns`, {
      name: 'Filtro enorme',
      templateId: '00000000-0000-7000-8000-000000000000',
      audience: { attributes: attrs('a', 101) },
    });
    expect(res.status).toBe(400);
    expect(problems(res.body)).toEqual([{ path: ['audience', 'attributes'], message: TOO_MANY }]);
  });

  it('"30,000 keys in one body → 400, not 503": one problem naming attributes, with or without Idempotency-Key', async () => {
    const attributes = attrs('k', 30_000);
    for (const headers of [{}, { 'idempotency-key': 'muchas-claves' }] as Record<string, string>[]) {
      const res = await acc.call('POST', '/contacts', { phone: freshPhone(), attributes }, headers);
      expect(res.status).toBe(400);
      expect(problems(res.body)).toEqual([{ path: ['attributes'], message: TOO_MANY }]);
    }
  });

  it('"a statement\'s parameter count never depends on user input": 70,000 keys reach the fields check as one array (409, not a database error)', async () => {
    const own = await app.createAccount();
    const keys = Object.keys(attrs('x', 70_000));
    const db = app.rt.services.db;
    const run = db.transaction().execute((trx) => rememberFields(trx, own.id, keys, app.clock.now()));
    await expect(run).rejects.toMatchObject({ code: 'attribute_fields_limit', statusCode: 409 });
    await db.transaction().execute((trx) => rememberFields(trx, own.id, keys.slice(0, 1000), app.clock.now()));
    expect(await fieldCount(own.id)).toBe(1000);
  });
});

describe('"JSON nesting deeper than 32 levels is a 400, whatever the route or headers" (decisions.md "Naming and shapes")', () => {
  it('10,000-deep JSON with and without Idempotency-Key → 400 on POST /contacts and POST /messages', async () => {
    const acc = await app.createAccount();
    const deep = `{"phone":"${freshPhone()}","attributes":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    const TOO_DEEP = textFor('json_too_deep', { max: 32 });
    for (const path of ['/contacts', '/messages']) {
      for (const headers of [{}, { 'idempotency-key': `profundo-${path}` }] as Record<string, string>[]) {
        const res = await acc.call('POST', path, deep, headers);
        expect(res.status, `${path} ${JSON.stringify(headers)}`).toBe(400);
        expect(problems(res.body)).toEqual([{ path: ['attributes', ...Array.from({ length: 31 }, () => 0)], message: TOO_DEEP }]);
      }
    }
    expect(await contactCount(acc.id)).toBe(0);
  });
});
