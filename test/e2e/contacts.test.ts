// POST /contacts, GET /contacts, GET /contacts/{id} (api.md §4; decisions.md "Naming and shapes", "Endpoints").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

const apiEvents = (accountId: string) =>
  app.rt.services.db
    .selectFrom('events')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('kind', '=', 'contact.created')
    .orderBy('created_at')
    .execute();

describe('POST /contacts (api.md §4)', () => {
  let acc: TestAccount;
  beforeAll(async () => {
    acc = await app.createAccount();
  });

  it('"If the phone is new in the account, the contact is created and the response is 201; if it exists, it is updated and the response is 200. Body: a Contact"', async () => {
    const created = await acc.call('POST', '/contacts', { phone: '+54 9 341 555-0101', name: 'Ana', attributes: { ciudad: 'Rosario' } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      phone: '5493415550101',
      name: 'Ana',
      attributes: { ciudad: 'Rosario' },
      optedOut: false,
      marketingOptOut: false,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updatedAt: expect.any(String),
      // social.md "Contact view": "Contacts gain socialchat: {id, username} or null"
      socialchat: null,
    });
    const updated = await acc.call('POST', '/contacts', { phone: '5493415550101' });
    expect(updated.status).toBe(200);
    expect(updated.body.id).toBe(created.body.id);
    expect(updated.body.createdAt).toBe(created.body.createdAt);
  });

  it('"Two spellings of one number never make two contacts" (Argentina 54 9, Mexico 52 1)', async () => {
    const ar = ['+54 11 5555-0202', '54 9 11 5555 0202', '5491155550202', '+54 (11) 5555.0202'];
    const ids = new Set<string>();
    for (const [i, phone] of ar.entries()) {
      const res = await acc.call('POST', '/contacts', { phone });
      expect(res.status).toBe(i === 0 ? 201 : 200);
      expect(res.body.phone).toBe('5491155550202');
      ids.add(res.body.id);
    }
    expect(ids.size).toBe(1);
    const mx1 = await acc.call('POST', '/contacts', { phone: '+52 1 55 1234 5678' });
    const mx2 = await acc.call('POST', '/contacts', { phone: '+52 55 1234 5678' });
    expect([mx1.status, mx2.status]).toEqual([201, 200]);
    expect(mx2.body.id).toBe(mx1.body.id);
    expect(mx2.body.phone).toBe('525512345678');
  });

  it('attributes are "merged with existing attributes: only the sent keys change"; name is "replaced only when sent"', async () => {
    const phone = freshPhone();
    await acc.call('POST', '/contacts', { phone, name: 'Beto', attributes: { plan: 'oro', ciudad: 'Córdoba' } });
    const a = await acc.call('POST', '/contacts', { phone, attributes: { plan: 'plata', pedido: '77' } });
    expect(a.status).toBe(200);
    expect(a.body.name).toBe('Beto');
    expect(a.body.attributes).toEqual({ plan: 'plata', ciudad: 'Córdoba', pedido: '77' });
    const b = await acc.call('POST', '/contacts', { phone, name: 'Roberto' });
    expect(b.body.name).toBe('Roberto');
    expect(b.body.attributes).toEqual({ plan: 'plata', ciudad: 'Córdoba', pedido: '77' });
    const got = await acc.call('GET', `/contacts/${a.body.id}`);
    expect(got.body).toMatchObject({ name: 'Roberto', attributes: { plan: 'plata', ciudad: 'Córdoba', pedido: '77' } });
  });

  it('"An attribute that does not exist as a field in the account is created as a text field"', async () => {
    const own = await app.createAccount();
    await own.call('POST', '/contacts', { phone: freshPhone(), attributes: { talle: 'M', color_favorito: 'azul' } });
    await own.call('POST', '/contacts', { phone: freshPhone(), attributes: { talle: 'L' } });
    const fields = await app.rt.services.db
      .selectFrom('contact_fields')
      .select(['key', 'type'])
      .where('account_id', '=', own.id)
      .orderBy('key')
      .execute();
    expect(fields).toEqual([
      { key: 'color_favorito', type: 'text' },
      { key: 'talle', type: 'text' },
    ]);
  });

  it('400 on a missing or invalid phone (api.md §7), with path ["phone"]', async () => {
    for (const body of [
      {},
      { phone: '12345' },
      { phone: '1'.repeat(33) },
      { phone: 'llamame-ya-123' },
      { phone: '+54 9 11 5555' },
      { phone: 5491155550000 },
    ]) {
      const res = await acc.call('POST', '/contacts', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.cause).toBeNull();
      expect(problems(res.body).map((p) => p.path)).toContainEqual(['phone']);
    }
    const res = await acc.call('POST', '/contacts', { phone: 'llamame-ya-123' });
    expect(problems(res.body)[0]?.message).toMatch(/formato internacional/);
  });

  it('"name on POST /contacts is at most 120 characters"', async () => {
    const phone = freshPhone();
    expect((await acc.call('POST', '/contacts', { phone, name: 'n'.repeat(120) })).status).toBe(201);
    const res = await acc.call('POST', '/contacts', { phone, name: 'n'.repeat(121) });
    expect(res.status).toBe(400);
    expect(problems(res.body)[0]?.path).toEqual(['name']);
  });

  it('"Attribute keys: 1 to 64 characters of letters, digits and _; values are strings of at most 1,000 characters; a non-string value is a 400"', async () => {
    const phone = freshPhone();
    const cases: [Record<string, unknown>, (string | number)[]][] = [
      [{ 'mal-clave': 'x' }, ['attributes', 'mal-clave']],
      [{ '': 'x' }, ['attributes', '']],
      [{ [`k${'x'.repeat(64)}`]: 'x' }, ['attributes', `k${'x'.repeat(64)}`]],
      [{ edad: 30 }, ['attributes', 'edad']],
      [{ vip: true }, ['attributes', 'vip']],
      [{ nota: 'x'.repeat(1001) }, ['attributes', 'nota']],
    ];
    for (const [attributes, path] of cases) {
      const res = await acc.call('POST', '/contacts', { phone, attributes });
      expect(res.status, JSON.stringify(attributes).slice(0, 80)).toBe(400);
      expect(problems(res.body).map((p) => p.path)).toContainEqual(path);
    }
    expect((await acc.call('POST', '/contacts', { phone, attributes: { ['k'.repeat(64)]: 'x'.repeat(1000), Campo_2: '' } })).status).toBe(
      201,
    );
  });

  it('"When the contact is new, webhook contact.created is emitted with source api" (only when new; data {source, contact})', async () => {
    const own = await app.createAccount();
    const phone = freshPhone();
    const first = await own.call('POST', '/contacts', { phone, name: 'Caro' });
    await own.call('POST', '/contacts', { phone, name: 'Carolina' });
    const events = await apiEvents(own.id);
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toEqual({ source: 'api', contact: first.body });
  });

  it('"402 contact limit of the plan reached (applies only when creating new contacts)" with the upgrade cause', async () => {
    const own = await app.createAccount({ limits: { contacts: 2 } });
    expect((await own.call('POST', '/contacts', { phone: '+54 9 11 5555-0901' })).status).toBe(201);
    expect((await own.call('POST', '/contacts', { phone: '+54 9 11 5555-0902' })).status).toBe(201);
    const over = await own.call('POST', '/contacts', { phone: '+54 9 11 5555-0903' });
    expect(over.status).toBe(402);
    expect(over.body.cause).toEqual({
      type: 'upgrade',
      reason: 'limit',
      resource: 'contacts',
      plan: 'escala',
      limit: 2,
      used: 2,
      suggested: 'enterprise',
    });
    expect(typeof over.body.error).toBe('string');
    // Updating an existing contact at the limit is fine.
    const update = await own.call('POST', '/contacts', { phone: '54 9 11 5555 0901', attributes: { a: 'b' } });
    expect(update.status).toBe(200);
    expect((await apiEvents(own.id)).length).toBe(2);
  });

  it('concurrency: two simultaneous POSTs of one new phone make one contact, one 201 and one 200, one contact.created', async () => {
    const own = await app.createAccount();
    for (let round = 0; round < 5; round++) {
      const phone = `+54 9 11 5556-10${round}0`;
      const [a, b] = await Promise.all([
        own.call('POST', '/contacts', { phone, attributes: { a: '1' } }),
        own.call('POST', '/contacts', { phone: phone.replace(' 9 ', ' '), attributes: { b: '2' } }),
      ]);
      expect([a.status, b.status].sort()).toEqual([200, 201]);
      expect(a.body.id).toBe(b.body.id);
    }
    const contacts = await own.call('GET', '/contacts?limit=200');
    expect(contacts.body.data).toHaveLength(5);
    for (const c of contacts.body.data) expect(c.attributes).toEqual({ a: '1', b: '2' });
    expect(await apiEvents(own.id)).toHaveLength(5);
  });

  it('concurrency at the contact limit: the second POST of the same new phone is an update (200), not a 402', async () => {
    const own = await app.createAccount({ limits: { contacts: 1 } });
    const phone = freshPhone();
    const [a, b] = await Promise.all([own.call('POST', '/contacts', { phone }), own.call('POST', '/contacts', { phone })]);
    expect([a.status, b.status].sort()).toEqual([200, 201]);
  });
});

describe('GET /contacts and GET /contacts/{id} (decisions.md "Endpoints": cursor pagination)', () => {
  it('pages with limit and after (the last id of the previous page), oldest first, only the own account', async () => {
    const own = await app.createAccount();
    const other = await app.createAccount();
    await other.call('POST', '/contacts', { phone: freshPhone() });
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) ids.push((await own.call('POST', '/contacts', { phone: `+54 9 11 5558-000${i}` })).body.id);
    const p1 = await own.call('GET', '/contacts?limit=2');
    expect(p1.status).toBe(200);
    expect(p1.body.data.map((c: { id: string }) => c.id)).toEqual(ids.slice(0, 2));
    expect(p1.body).toMatchObject({ hasMore: true, nextCursor: ids[1] });
    const p2 = await own.call('GET', `/contacts?limit=2&after=${p1.body.nextCursor}`);
    expect(p2.body.data.map((c: { id: string }) => c.id)).toEqual(ids.slice(2, 4));
    const p3 = await own.call('GET', `/contacts?limit=2&after=${p2.body.nextCursor}`);
    expect(p3.body.data.map((c: { id: string }) => c.id)).toEqual(ids.slice(4));
    expect(p3.body).toMatchObject({ hasMore: false, nextCursor: null });
    const all = await own.call('GET', '/contacts');
    expect(all.body.data).toHaveLength(5);
    expect(all.body.data[0]).toMatchObject({ phone: '5491155580001', optedOut: false, marketingOptOut: false });
  });

  it('"limit outside 1 to 200; after not a UUID" → 400 with the path', async () => {
    const own = await app.createAccount();
    for (const [qs, path] of [
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['limit=abc', 'limit'],
      ['after=12', 'after'],
    ] as const) {
      const res = await own.call('GET', `/contacts?${qs}`);
      expect(res.status, qs).toBe(400);
      expect(problems(res.body)[0]?.path).toEqual([path]);
    }
    expect((await own.call('GET', '/contacts?limit=200')).status).toBe(200);
  });

  it('GET /contacts/{id}: "ids of another account answer 404"', async () => {
    const own = await app.createAccount();
    const other = await app.createAccount();
    const c = await other.call('POST', '/contacts', { phone: freshPhone(), name: 'Otra' });
    expect((await other.call('GET', `/contacts/${c.body.id}`)).body).toEqual(c.body);
    const res = await own.call('GET', `/contacts/${c.body.id}`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), cause: null });
    expect((await own.call('GET', '/contacts/not-a-uuid')).status).toBe(404);
  });

  it('the OpenAPI document describes the contact routes', async () => {
    const own = await app.createAccount();
    const doc = await app.api(own.key, 'GET', '/openapi.json');
    expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining(['/api/v1/contacts', '/api/v1/contacts/{id}']));
  });
});
