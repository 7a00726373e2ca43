// Idempotency-Key on POST /contacts and POST /messages (decisions.md "Endpoints").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDEMPOTENCY_TTL_MS, RUNNING_LEASE_MS, requestFingerprint } from '../../src/http/idempotency.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp, testNumber } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

let seq = 0;
const newKey = () => `clave-${Date.now()}-${++seq}`;
const withKey = (key: string) => ({ 'idempotency-key': key });

const createdEvents = async (accountId: string) =>
  (
    await app.rt.services.db
      .selectFrom('events')
      .select('id')
      .where('account_id', '=', accountId)
      .where('kind', '=', 'contact.created')
      .execute()
  ).length;

describe('Idempotency-Key on POST /contacts (decisions.md "Endpoints")', () => {
  let acc: TestAccount;
  beforeAll(async () => {
    acc = await app.createAccount();
  });

  it('"the same key with the same body within 24 hours replays the first response (status and body, plus Idempotent-Replayed: true) without acting again"', async () => {
    const key = newKey();
    const body = { phone: freshPhone({ spelling: 'spaced' }), name: 'Ana', attributes: { plan: 'oro' } };
    const first = await acc.call('POST', '/contacts', body, withKey(key));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // The contact changes in between: a replay must return the first answer and not apply again.
    await acc.call('POST', '/contacts', { phone: body.phone, name: 'Ana María', attributes: { plan: 'plata' } });
    const again = await acc.call('POST', '/contacts', body, withKey(key));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const now = await acc.call('GET', `/contacts/${first.body.id}`);
    expect(now.body).toMatchObject({ name: 'Ana María', attributes: { plan: 'plata' } });
    expect(await createdEvents(acc.id)).toBe(1);
  });

  it('a 200 (update) is replayed as a 200; the same body in another key order is the same request', async () => {
    const phone = freshPhone({ spelling: 'spaced' });
    await acc.call('POST', '/contacts', { phone });
    const key = newKey();
    const first = await acc.call('POST', '/contacts', { phone, name: 'Beto', attributes: { a: '1', b: '2' } }, withKey(key));
    expect(first.status).toBe(200);
    const again = await acc.call('POST', '/contacts', { attributes: { b: '2', a: '1' }, name: 'Beto', phone }, withKey(key));
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
  });

  it('"the same key with a different body → 422"', async () => {
    const key = newKey();
    const phone = freshPhone({ spelling: 'spaced' });
    expect((await acc.call('POST', '/contacts', { phone, name: 'Caro' }, withKey(key))).status).toBe(201);
    const other = await acc.call('POST', '/contacts', { phone, name: 'Carolina' }, withKey(key));
    expect(other.status).toBe(422);
    expect(other.body).toEqual({ error: expect.stringMatching(/Idempotency-Key/), cause: null });
    expect(other.headers.get('idempotent-replayed')).toBeNull();
    expect(
      (await acc.call('GET', '/contacts?limit=200')).body.data.find((c: { phone: string }) => c.phone === other.body.phone),
    ).toBeUndefined();
  });

  it('the same key on another route is a different request → 422', async () => {
    const key = newKey();
    expect((await acc.call('POST', '/contacts', { phone: freshPhone({ spelling: 'spaced' }) }, withKey(key))).status).toBe(201);
    const send = await acc.call('POST', '/messages', { to: freshPhone({ spelling: 'spaced' }), text: 'hola' }, withKey(key));
    expect(send.status).toBe(422);
  });

  it('"scoped to the account": another account may use the same key for its own request', async () => {
    const key = newKey();
    const other = await app.createAccount();
    const phone = freshPhone({ spelling: 'spaced' });
    const a = await acc.call('POST', '/contacts', { phone }, withKey(key));
    const b = await other.call('POST', '/contacts', { phone }, withKey(key));
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(b.body.id).not.toBe(a.body.id);
  });

  it('"while the first request is still running → 409"; a running key of a dead process is taken over after its lease', async () => {
    const key = newKey();
    const body = { phone: freshPhone({ spelling: 'spaced' }), name: 'En curso' };
    // A request with this key and body is running (its row is the lock, as another process would hold it).
    await app.rt.services.db
      .insertInto('idempotency_keys')
      .values({
        account_id: acc.id,
        key,
        route: 'POST /api/v1/contacts',
        request_hash: requestFingerprint('POST /api/v1/contacts', body),
        state: 'running',
        created_at: app.clock.now(),
      })
      .execute();
    const busy = await acc.call('POST', '/contacts', body, withKey(key));
    expect(busy.status).toBe(409);
    expect(busy.body).toEqual({ error: expect.stringMatching(/procesando/), cause: null });
    expect((await acc.call('POST', '/contacts', { ...body, name: 'Otro' }, withKey(key))).status).toBe(422);
    app.clock.advance(RUNNING_LEASE_MS + 1);
    const taken = await acc.call('POST', '/contacts', body, withKey(key));
    expect(taken.status).toBe(201);
    expect((await acc.call('POST', '/contacts', body, withKey(key))).headers.get('idempotent-replayed')).toBe('true');
  });

  it.runIf(!!process.env.DATABASE_URL)(
    '→ 409 while the first request really is still running (PostgreSQL: the first one waits on a lock)',
    async () => {
      const own = await app.createAccount({ limits: { contacts: 1000 } });
      const key = newKey();
      const body = { phone: freshPhone({ spelling: 'spaced' }) };
      let release!: () => void;
      const held = new Promise<void>((r) => {
        release = r;
      });
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => {
        locked = r;
      });
      // Hold the account row: the contact-limit check of the first request waits for it.
      const tx = app.rt.services.db.transaction().execute(async (trx) => {
        await trx.selectFrom('accounts').select('id').where('id', '=', own.id).forNoKeyUpdate().execute();
        locked();
        await held;
      });
      await isLocked;
      const first = own.call('POST', '/contacts', body, withKey(key));
      try {
        // The first request has claimed the key (and now waits on the lock) before the second goes.
        const claimed = () =>
          app.rt.services.db
            .selectFrom('idempotency_keys')
            .select('state')
            .where('account_id', '=', own.id)
            .where('key', '=', key)
            .executeTakeFirst();
        for (let i = 0; i < 200 && !(await claimed()); i++) await new Promise((r) => setTimeout(r, 10));
        expect((await claimed())?.state).toBe('running');
        const second = await own.call('POST', '/contacts', body, withKey(key));
        expect(second.status).toBe(409);
      } finally {
        release();
        await tx;
      }
      expect((await first).status).toBe(201);
      const third = await own.call('POST', '/contacts', body, withKey(key));
      expect(third.status).toBe(201);
      expect(third.headers.get('idempotent-replayed')).toBe('true');
    },
  );

  it('"a request rejected before it acted (validation, limits) stores nothing": the key works afterwards', async () => {
    const key = newKey();
    const bad = await acc.call('POST', '/contacts', { phone: '12' }, withKey(key));
    expect(bad.status).toBe(400);
    const good = await acc.call('POST', '/contacts', { phone: freshPhone({ spelling: 'spaced' }) }, withKey(key));
    expect(good.status).toBe(201);
    expect(good.headers.get('idempotent-replayed')).toBeNull();

    // The contact limit (402) refuses before creating: after the operator raises it, the same key acts.
    const full = await app.createAccount({ limits: { contacts: 0 } });
    const key2 = newKey();
    const body = { phone: freshPhone({ spelling: 'spaced' }), name: 'Dani' };
    const refused = await full.call('POST', '/contacts', body, withKey(key2));
    expect(refused.status).toBe(402);
    expect((await app.admin('PATCH', `/accounts/${full.id}`, { limits: { contacts: 10 } })).status).toBe(200);
    const accepted = await full.call('POST', '/contacts', body, withKey(key2));
    expect(accepted.status).toBe(201);
    expect(accepted.headers.get('idempotent-replayed')).toBeNull();
  });

  it('expired keys (24 h) are ignored: the same key acts again, even with another body', async () => {
    const key = newKey();
    const phone = freshPhone({ spelling: 'spaced' });
    expect((await acc.call('POST', '/contacts', { phone, name: 'Eva' }, withKey(key))).status).toBe(201);
    app.clock.advance(IDEMPOTENCY_TTL_MS - 60_000);
    expect((await acc.call('POST', '/contacts', { phone, name: 'Eva' }, withKey(key))).headers.get('idempotent-replayed')).toBe('true');
    app.clock.advance(60_001);
    const later = await acc.call('POST', '/contacts', { phone, name: 'Eva Luna' }, withKey(key));
    expect(later.status).toBe(200);
    expect(later.body.name).toBe('Eva Luna');
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    const replay = await acc.call('POST', '/contacts', { phone, name: 'Eva Luna' }, withKey(key));
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
  });

  it('keys past their 24 hours are purged by the idempotency-keys job (POST /admin/v1/jobs/{name}/run)', async () => {
    const own = await app.createAccount();
    const key = newKey();
    await own.call('POST', '/contacts', { phone: freshPhone({ spelling: 'spaced' }) }, withKey(key));
    const rows = () => app.rt.services.db.selectFrom('idempotency_keys').select('key').where('account_id', '=', own.id).execute();
    expect(await rows()).toHaveLength(1);
    app.clock.advance(IDEMPOTENCY_TTL_MS + 1);
    const run = await app.admin('POST', '/jobs/idempotency-keys/run');
    expect(run.status).toBe(200);
    expect(run.body.changed).toBeGreaterThanOrEqual(1);
    expect(await rows()).toEqual([]);
  });

  it('the header is "1–255 characters": an empty or longer one → 400', async () => {
    for (const key of ['', 'k'.repeat(256)]) {
      const res = await acc.call('POST', '/contacts', { phone: freshPhone({ spelling: 'spaced' }) }, withKey(key));
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body.error.message)[0].path).toEqual(['Idempotency-Key']);
    }
    expect((await acc.call('POST', '/contacts', { phone: freshPhone({ spelling: 'spaced' }) }, withKey('k'.repeat(255)))).status).toBe(201);
  });

  it('two simultaneous requests with one key act once: one answer, the other 409 or the replay', async () => {
    const own = await app.createAccount();
    for (let round = 0; round < 5; round++) {
      const key = newKey();
      const body = { phone: freshPhone({ spelling: 'spaced' }), name: `R${round}` };
      const rs = await Promise.all([1, 2, 3].map(() => own.call('POST', '/contacts', body, withKey(key))));
      const acted = rs.filter((r) => r.status === 201 && r.headers.get('idempotent-replayed') === null);
      expect(acted).toHaveLength(1);
      // Every other answer is one of the two the rule allows, checked in full.
      const busy = { status: 409, replayed: null, body: { error: expect.stringMatching(/procesando/), cause: null } };
      const replay = { status: 201, replayed: 'true', body: acted[0]!.body };
      for (const r of rs.filter((x) => x !== acted[0])) {
        const seen = { status: r.status, replayed: r.headers.get('idempotent-replayed'), body: r.body };
        expect(seen).toEqual(r.status === 409 ? busy : replay);
      }
    }
    expect(await createdEvents(own.id)).toBe(5);
  });

  it.runIf(!!process.env.DATABASE_URL)('"works across two processes": a key used on one process is replayed by the other', async () => {
    const second = await startTestApp({ sameDataAs: app, clock: app.clock });
    try {
      const own = await app.createAccount();
      const key = newKey();
      const body = { phone: freshPhone({ spelling: 'spaced' }), name: 'Dos procesos' };
      const a = await own.call('POST', '/contacts', body, withKey(key));
      const b = await second.api(own.key, 'POST', '/contacts', body, withKey(key));
      expect(a.status).toBe(201);
      expect(b.status).toBe(201);
      expect(b.headers.get('idempotent-replayed')).toBe('true');
      expect(b.body).toEqual(a.body);
      // Simultaneous on both processes: exactly one acts.
      for (let round = 0; round < 5; round++) {
        const k = newKey();
        const bd = { phone: freshPhone({ spelling: 'spaced' }) };
        const rs = await Promise.all([
          own.call('POST', '/contacts', bd, withKey(k)),
          second.api(own.key, 'POST', '/contacts', bd, withKey(k)),
        ]);
        expect(rs.filter((r) => r.status === 201 && r.headers.get('idempotent-replayed') === null)).toHaveLength(1);
      }
      expect(await createdEvents(own.id)).toBe(6);
    } finally {
      await second.close();
    }
  });
});

describe('Idempotency-Key on POST /messages ("This is how we make POST /messages safe to retry")', () => {
  it('a template send retried with the same key is replayed: one message, the same id and wamid', async () => {
    const acc = await app.createAccount();
    const t = await app.admin('POST', `/accounts/${acc.id}/templates`, {
      name: 'aviso',
      category: 'UTILITY',
      body: 'Hola {{nombre}}',
      variables: [{ name: 'nombre', label: 'Nombre', example: 'Ana' }],
      status: 'APPROVED',
    });
    expect(t.status).toBe(201);
    const key = newKey();
    const body = { to: freshPhone({ spelling: 'spaced' }), template: { id: t.body.id, variables: { nombre: 'Ana' } } };
    const first = await acc.call('POST', '/messages', body, withKey(key));
    expect(first.status).toBe(201);
    expect(first.body.status).toBe('sent');
    const again = await acc.call('POST', '/messages', body, withKey(key));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const rows = await app.rt.services.db.selectFrom('messages').select(['id', 'wamid']).where('account_id', '=', acc.id).execute();
    expect(rows).toEqual([{ id: first.body.id, wamid: first.body.wamid }]);
    // Without the key, a retry sends again (api.md §4: "Not idempotent").
    expect((await acc.call('POST', '/messages', body)).body.id).not.toBe(first.body.id);
  });
  it('a send the provider refused (502) acted: it is stored and replayed, not sent again', async () => {
    const acc = await app.createAccount();
    const t = await app.admin('POST', `/accounts/${acc.id}/templates`, {
      name: 'aviso',
      category: 'UTILITY',
      body: 'Hola',
      status: 'APPROVED',
    });
    const key = newKey();
    // Sandbox test number ending in 0002: rejected at send (operator.md).
    const body = { to: testNumber('0002', { spelling: 'spaced' }), template: { id: t.body.id } };
    const first = await acc.call('POST', '/messages', body, withKey(key));
    expect(first.status).toBe(502);
    const again = await acc.call('POST', '/messages', body, withKey(key));
    expect(again.status).toBe(502);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await app.rt.services.db.selectFrom('messages').select('id').where('account_id', '=', acc.id).execute()).toHaveLength(1);
  });

  it('a send refused before acting (409 window closed) stores nothing: once the contact writes, the same key sends', async () => {
    const acc = await app.createAccount();
    const key = newKey();
    const to = freshPhone({ spelling: 'spaced' });
    const body = { to, text: '¿Seguís interesado?' };
    const closed = await acc.call('POST', '/messages', body, withKey(key));
    expect(closed.status).toBe(409);
    expect((await acc.call('POST', '/messages', body, withKey(key))).headers.get('idempotent-replayed')).toBeNull();
    expect((await app.inbound({ accountId: acc.id, from: to, text: 'hola' })).status).toBe(201);
    const sent = await acc.call('POST', '/messages', body, withKey(key));
    expect(sent.status).toBe(201);
    expect(sent.headers.get('idempotent-replayed')).toBeNull();
  });
});
