// Console sessions (docs/console.md): login, the cookie, /me, and the session door on the
// operator account routes — own account only, CSRF on state changes, the role table.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textFor } from '../../src/http/messages.es-AR.js';
import { newId } from '../../src/lib/ids.js';
import { addMember, cookieOf, freshEmail, login, PASSWORD, signIn } from '../console-session.js';
import { freshPhone, request, startTestApp, type TestApp } from '../harness.js';

/** The app's log lines (LOG_LEVEL info), to check what a member's action logs and what is never logged. */
const logs: string[] = [];
const logStream = new Writable({
  write(chunk, _enc, done) {
    logs.push(String(chunk));
    done();
  },
});

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { LOG_LEVEL: 'info' }, logDestination: logStream });
});
afterAll(async () => {
  await app?.close();
});

describe('"POST /console/api/login → 204 + cookie chasqui_session"', () => {
  it('"random, stored hashed, HttpOnly, SameSite=Lax, Path=/": the cookie works on /me and the account routes; its value is not in the database', async () => {
    const acc = await app.createAccount();
    const owner = await addMember(app, acc.id, 'owner');
    const res = await login(app, owner.email.toUpperCase(), owner.password);
    expect(res.status).toBe(204);
    const setCookie = res.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^chasqui_session=[A-Za-z0-9_-]{40,};/);
    expect(setCookie).toMatch(/; HttpOnly/);
    expect(setCookie).toMatch(/; SameSite=Lax/);
    expect(setCookie).toMatch(/; Path=\//);
    expect(setCookie).not.toMatch(/; Secure/);
    const cookie = cookieOf(res);
    const me = await request(`${app.url}/console/api/me`, 'GET', undefined, { cookie });
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      member: { id: owner.id, email: owner.email.toLowerCase(), name: 'Persona owner', role: 'owner' },
      account: { id: acc.id, name: expect.any(String), plan: expect.any(String) },
      csrf: expect.stringMatching(/^[A-Za-z0-9_-]{40,}$/),
    });
    const account = await request(`${app.url}/admin/v1/accounts/${acc.id}`, 'GET', undefined, { cookie });
    expect(account.status).toBe(200);
    expect(account.body.id).toBe(acc.id);
    const value = cookie.split('=')[1];
    const rows = await app.rt.services.db.selectFrom('member_sessions').selectAll().where('member_id', '=', owner.id).execute();
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(value);
    const members = await app.rt.services.db
      .selectFrom('members')
      .select('password_hash')
      .where('id', '=', owner.id)
      .executeTakeFirstOrThrow();
    expect(members.password_hash).toMatch(/^scrypt\$/);
    expect(members.password_hash).not.toContain(PASSWORD);
  });

  it('"failure → 401 with the Spanish text `Email o contraseña incorrectos.`": the same for an unknown email; no session → /me 401', async () => {
    const acc = await app.createAccount();
    const m = await addMember(app, acc.id, 'owner');
    const wrong = await login(app, m.email, 'otra-clave-larga-999');
    const unknown = await login(app, freshEmail('nadie'), 'otra-clave-larga-999');
    expect({ status: wrong.status, body: wrong.body }).toEqual({
      status: 401,
      body: { error: 'Email o contraseña incorrectos.', cause: null },
    });
    expect({ status: unknown.status, body: unknown.body }).toEqual({
      status: 401,
      body: { error: 'Email o contraseña incorrectos.', cause: null },
    });
    expect(wrong.headers.get('set-cookie')).toBeNull();
    expect((await request(`${app.url}/console/api/me`, 'GET')).status).toBe(401);
    expect((await request(`${app.url}/console/api/me`, 'GET', undefined, { cookie: 'chasqui_session=nope' })).status).toBe(401);
  });

  it('"POST /console/api/logout ends it" (with the CSRF header)', async () => {
    const acc = await app.createAccount();
    const c = await signIn(app, await addMember(app, acc.id, 'admin'));
    const noCsrf = await request(`${app.url}/console/api/logout`, 'POST', undefined, { cookie: c.cookie });
    expect(noCsrf.status).toBe(403);
    expect((await c.me()).status).toBe(200);
    const out = await request(`${app.url}/console/api/logout`, 'POST', undefined, { cookie: c.cookie, 'x-chasqui-csrf': c.csrf });
    expect(out.status).toBe(204);
    expect((await c.me()).status).toBe(401);
    expect((await c.call('GET', `/accounts/${acc.id}`)).status).toBe(401);
  });
});

describe('"Secure when PUBLIC_URL is https"', () => {
  it('behind an https PUBLIC_URL the cookie is Secure, and the invite link starts with PUBLIC_URL', async () => {
    const own = await startTestApp({ env: { PUBLIC_URL: 'https://chasqui.example.com' } });
    try {
      const acc = await own.createAccount();
      const invited = await own.admin('POST', `/accounts/${acc.id}/members`, { email: freshEmail('seg'), role: 'agent' });
      expect(invited.body.inviteUrl).toMatch(/^https:\/\/chasqui\.example\.com\/console\/invite\//);
      const m = await addMember(own, acc.id, 'owner');
      const res = await login(own, m.email, m.password);
      expect(res.status).toBe(204);
      expect(res.headers.get('set-cookie')).toMatch(/; Secure/);
    } finally {
      await own.close();
    }
  });
});

describe('"a member reaches only their own account (another account\'s id → 404, as keys do)"', () => {
  it('another account answers 404 account_not_found; routes that name no account answer 404', async () => {
    const acc = await app.createAccount();
    const other = await app.createAccount();
    const c = await signIn(app, await addMember(app, acc.id, 'owner'));
    const res = await c.call('GET', `/accounts/${other.id}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { error: textFor('account_not_found'), cause: null } });
    expect((await c.call('GET', `/accounts/${newId()}/keys`)).status).toBe(404);
    expect((await c.call('GET', '/accounts')).status).toBe(404);
    expect((await c.call('GET', '/openapi.json')).status).toBe(404);
    expect((await c.call('POST', '/jobs/outbox/run')).status).toBe(404);
  });
});

describe('"State-changing requests with a session cookie must carry the header X-Chasqui-CSRF … missing or wrong → 403"', () => {
  it('missing or wrong CSRF, or a foreign Origin → 403; with it the change is made; the operator token is unaffected', async () => {
    const acc = await app.createAccount();
    const c = await signIn(app, await addMember(app, acc.id, 'owner'));
    const body = { email: freshEmail('agente'), role: 'agent' };
    const missing = await c.call('POST', `/accounts/${acc.id}/members`, body, { csrf: false });
    expect({ status: missing.status, body: missing.body }).toEqual({ status: 403, body: { error: textFor('csrf_failed'), cause: null } });
    expect((await c.call('POST', `/accounts/${acc.id}/members`, body, { csrf: 'x'.repeat(43) })).status).toBe(403);
    expect((await c.call('POST', `/accounts/${acc.id}/members`, body, { headers: { origin: 'https://evil.example' } })).status).toBe(403);
    expect((await c.call('GET', `/accounts/${acc.id}/members`, undefined, { csrf: false })).body.data).toHaveLength(1);
    const made = await c.call('POST', `/accounts/${acc.id}/members`, body, { headers: { origin: app.url } });
    expect(made.status).toBe(201);
    expect((await app.admin('GET', `/accounts/${acc.id}/members`)).body.data).toHaveLength(2);
  });
});

describe('"only what their role allows (403 with a Spanish text otherwise)"', () => {
  it('an agent gets 403 on keys, webhooks, numbers, automations, agents and members routes of the operator document, and not on conversations', async () => {
    const acc = await app.createAccount();
    const agent = await signIn(app, await addMember(app, acc.id, 'agent'));
    const doc = await app.admin('GET', '/openapi.json');
    const routes = Object.entries(doc.body.paths as Record<string, Record<string, unknown>>)
      .filter(([path]) => path.startsWith('/admin/v1/accounts/{id}/'))
      .flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path })));
    const closed = /^\/admin\/v1\/accounts\/\{id\}\/(keys|webhooks|phone-numbers|social-accounts|automations|agents|ai-apps|members)(\/|$)/;
    const open = /^\/admin\/v1\/accounts\/\{id\}\/conversations\//;
    expect(routes.filter((r) => closed.test(r.path)).length).toBeGreaterThan(15);
    for (const r of routes) {
      if (!closed.test(r.path) && !open.test(r.path)) continue;
      const path = r.path.replace('/admin/v1', '').replace(/\{[^}]+\}/g, (p) => (p === '{id}' ? acc.id : newId()));
      const res = await agent.call(r.method, path, r.method === 'GET' || r.method === 'DELETE' ? undefined : {});
      const route = `${r.method} ${r.path}`;
      if (closed.test(r.path))
        expect({ route, status: res.status, body: res.body }).toEqual({
          route,
          status: 403,
          body: { error: textFor('role_forbidden'), cause: null },
        });
      else expect({ route, status: res.status }).not.toEqual({ route, status: 403 });
    }
    // A real conversation: the agent reads its notes and replies; the reply is attributed to the member.
    const w = await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'Hola' });
    expect(w.status).toBe(201);
    expect((await agent.call('GET', `/accounts/${acc.id}/conversations/${w.body.conversationId}/notes`)).status).toBe(200);
    const me = (await agent.me()).body.member;
    const reply = await agent.call('POST', `/accounts/${acc.id}/conversations/${w.body.conversationId}/messages`, { text: 'Te ayudo' });
    expect(reply.status).toBe(201);
    const items = (await acc.call('GET', `/conversations/${w.body.conversationId}/messages`)).body.data;
    expect(items.at(-1)).toMatchObject({ id: reply.body.id, from: 'team', by: { type: 'member', id: me.id, name: me.name } });
    // A case closed through the session: closedBy is the member.
    const pipeline = await app.admin('POST', `/accounts/${acc.id}/pipelines`, {
      name: 'Ventas',
      stages: [
        { name: 'Abierto', kind: 'open' },
        { name: 'Ganado', kind: 'won' },
      ],
    });
    expect(pipeline.status).toBe(201);
    await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'Quiero comprar' });
    const cases = await acc.call('GET', `/pipelines/${pipeline.body.id}/cases`);
    const closedCase = await agent.call('POST', `/accounts/${acc.id}/cases/${cases.body.data[0].id}/close`, {});
    expect(closedCase.status).toBe(200);
    expect(closedCase.body.closedBy).toEqual({ type: 'member', id: me.id, name: me.name });
    // Reads of templates are an agent's; changing them is not.
    expect((await agent.call('GET', `/accounts/${acc.id}/templates`)).status).not.toBe(403);
    expect((await agent.call('POST', `/accounts/${acc.id}/templates`, {})).status).toBe(403);
  });

  it("an admin does everything, members too but no owner (members.test.ts); the account's plan and limits stay the operator's", async () => {
    const acc = await app.createAccount();
    const owner = await addMember(app, acc.id, 'owner');
    const admin = await signIn(app, await addMember(app, acc.id, 'admin'));
    expect((await admin.call('GET', `/accounts/${acc.id}/keys`)).status).toBe(200);
    expect((await admin.call('GET', `/accounts/${acc.id}/members`)).status).toBe(200);
    expect((await admin.call('DELETE', `/accounts/${acc.id}/members/${owner.id}`)).status).toBe(403);
    expect((await admin.call('PATCH', `/accounts/${acc.id}`, { plan: 'enterprise' })).status).toBe(403);
  });
});

describe('"Login throttled: 10 failures for one email in 15 minutes, or 100 from one IP, → 429 with Retry-After"', () => {
  it('"the failures of one email do not lock another email": the 11th attempt for one email is 429 while another email logs in', async () => {
    const acc = await app.createAccount();
    const target = await addMember(app, acc.id, 'owner');
    const other = await addMember(app, acc.id, 'agent');
    for (let i = 0; i < 10; i++) expect((await login(app, target.email, `mala-clave-larga-${i}`)).status).toBe(401);
    const eleventh = await login(app, target.email, target.password);
    expect(eleventh.status).toBe(429);
    expect(eleventh.body.error).toBe(textFor('login_throttled', { minutes: Math.ceil(Number(eleventh.headers.get('retry-after')) / 60) }));
    expect(Number(eleventh.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(eleventh.headers.get('retry-after'))).toBeLessThanOrEqual(900);
    expect((await login(app, other.email, other.password)).status).toBe(204);
    // The window passes (the injected clock): the email logs in again.
    app.clock.advance(15 * 60_000);
    expect((await login(app, target.email, target.password)).status).toBe(204);
  });
});

describe('"an audit line in the log"; passwords "never logged"', () => {
  it('a change through a session logs `member action` with memberId, method and route pattern, no body; no password nor cookie in any line', async () => {
    const acc = await app.createAccount();
    const owner = await addMember(app, acc.id, 'owner');
    const c = await signIn(app, owner);
    const secretName = `Nombre-${newId()}`;
    expect((await c.call('POST', `/accounts/${acc.id}/members`, { email: freshEmail('x'), name: secretName, role: 'agent' })).status).toBe(
      201,
    );
    const lines = logs.map((l) => JSON.parse(l) as Record<string, unknown>);
    const action = lines.find((l) => l.msg === 'member action' && l.memberId === owner.id);
    expect(action).toMatchObject({
      level: 30,
      memberId: owner.id,
      accountId: acc.id,
      method: 'POST',
      route: '/admin/v1/accounts/:id/members',
      status: 201,
    });
    const all = logs.join('');
    expect(all).not.toContain(secretName);
    expect(all).not.toContain(PASSWORD);
    expect(all).not.toContain(c.cookie.split('=')[1]);
  });
});

describe('"100 from one IP → 429" and "shared across processes"', () => {
  it('100 failures from one IP (many emails) refuse the next login from it, even a right one', async () => {
    const own = await startTestApp();
    try {
      const acc = await own.createAccount();
      const m = await addMember(own, acc.id, 'owner');
      for (let i = 0; i < 100; i++) expect((await login(own, `nadie-${i}@example.com`, 'mala-clave-larga')).status).toBe(401);
      const refused = await login(own, m.email, m.password);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await own.close();
    }
  }, 120_000);

  it.skipIf(!process.env.REDIS_URL)(
    'with Redis, the failures of one email made on two processes add up',
    async () => {
      const two = await startTestApp({ sameDataAs: app, clock: app.clock });
      try {
        const acc = await app.createAccount();
        const m = await addMember(app, acc.id, 'owner');
        for (let i = 0; i < 10; i++) expect((await login(i % 2 ? two : app, m.email, `mala-clave-larga-${i}`)).status).toBe(401);
        expect((await login(two, m.email, m.password)).status).toBe(429);
        expect((await login(app, m.email, m.password)).status).toBe(429);
      } finally {
        await two.close();
      }
    },
    60_000,
  );
});
