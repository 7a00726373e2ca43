// Members of an account through the operator API (docs/console.md "Members", operator.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textFor } from '../../src/http/messages.es-AR.js';
import { newId } from '../../src/lib/ids.js';
import { addMember, freshEmail, login, PASSWORD, signIn } from '../console-session.js';
import { request, startTestApp, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('"POST /admin/v1/accounts/{id}/members {email, name, role, password?} → 201 {member, inviteUrl}"', () => {
  it('"With password (12–256 characters) the member is active at once"; listed, changed, removed', async () => {
    const acc = await app.createAccount();
    const email = freshEmail('ana');
    const made = await app.admin('POST', `/accounts/${acc.id}/members`, { email, name: 'Ana', role: 'owner', password: PASSWORD });
    expect(made.status).toBe(201);
    expect(made.body).toEqual({
      member: {
        id: expect.any(String),
        email: email.toLowerCase(),
        name: 'Ana',
        role: 'owner',
        status: 'active',
        createdAt: expect.any(String),
        lastSeenAt: null,
      },
      inviteUrl: null,
    });
    const agent = await addMember(app, acc.id, 'agent');
    const list = await app.admin('GET', `/accounts/${acc.id}/members`);
    expect(list.body.data.map((m: { id: string }) => m.id)).toEqual([made.body.member.id, agent.id]);
    const changed = await app.admin('PATCH', `/accounts/${acc.id}/members/${agent.id}`, { name: 'Beto', role: 'admin' });
    expect(changed.body).toMatchObject({ id: agent.id, name: 'Beto', role: 'admin', status: 'active' });
    expect((await app.admin('GET', `/accounts/${acc.id}/members/${agent.id}`)).body.name).toBe('Beto');
    expect((await app.admin('DELETE', `/accounts/${acc.id}/members/${agent.id}`)).status).toBe(204);
    expect((await app.admin('GET', `/accounts/${acc.id}/members/${agent.id}`)).status).toBe(404);
    expect((await app.admin('DELETE', `/accounts/${acc.id}/members/${newId()}`)).status).toBe(404);
  });

  it('"Email unique across the server (lower-cased); one account per email" → 409; a short password → 400', async () => {
    const acc = await app.createAccount();
    const other = await app.createAccount();
    const email = freshEmail('dup');
    await addMember(app, acc.id, 'owner', email);
    const again = await app.admin('POST', `/accounts/${other.id}/members`, { email: email.toUpperCase(), role: 'owner' });
    expect({ status: again.status, body: again.body }).toEqual({
      status: 409,
      body: { error: textFor('member_email_taken'), cause: null },
    });
    const short = await app.admin('POST', `/accounts/${acc.id}/members`, { email: freshEmail(), role: 'agent', password: 'corta' });
    expect(short.status).toBe(400);
    expect((await app.admin('POST', `/accounts/${acc.id}/members`, { email: 'no-es-email', role: 'agent' })).status).toBe(400);
    expect((await app.admin('POST', `/accounts/${acc.id}/members`, { email: freshEmail(), role: 'jefe' })).status).toBe(400);
  });
});

describe('"An account always keeps at least one active owner (removing or demoting the last → 409)"', () => {
  it('the last owner cannot be demoted, disabled or removed; with a second owner it can', async () => {
    const acc = await app.createAccount();
    const owner = await addMember(app, acc.id, 'owner');
    const last = { status: 409, body: { error: textFor('last_owner'), cause: null } };
    for (const [method, body] of [
      ['PATCH', { role: 'admin' }],
      ['PATCH', { status: 'disabled' }],
      ['DELETE', undefined],
    ] as const) {
      const res = await app.admin(method, `/accounts/${acc.id}/members/${owner.id}`, body);
      expect({ status: res.status, body: res.body }).toEqual(last);
    }
    await addMember(app, acc.id, 'owner');
    expect((await app.admin('PATCH', `/accounts/${acc.id}/members/${owner.id}`, { role: 'agent' })).status).toBe(200);
  });
});

describe('"disabling ends their sessions at once"', () => {
  it("a disabled member's cookie answers 401 on the next request, and the member cannot log in", async () => {
    const acc = await app.createAccount();
    await addMember(app, acc.id, 'owner');
    const m = await addMember(app, acc.id, 'admin');
    const c = await signIn(app, m);
    expect((await c.call('GET', `/accounts/${acc.id}/keys`)).status).toBe(200);
    expect((await app.admin('PATCH', `/accounts/${acc.id}/members/${m.id}`, { status: 'disabled' })).body.status).toBe('disabled');
    expect((await c.call('GET', `/accounts/${acc.id}/keys`)).status).toBe(401);
    expect((await c.me()).status).toBe(401);
    expect((await login(app, m.email, m.password)).status).toBe(401);
    const rows = await app.rt.services.db.selectFrom('member_sessions').select('token_hash').where('member_id', '=', m.id).execute();
    expect(rows).toEqual([]);
  });

  it('lastSeenAt: set at login, written again at most once a minute', async () => {
    const acc = await app.createAccount();
    const m = await addMember(app, acc.id, 'owner');
    const c = await signIn(app, m);
    const seen = async () => (await app.admin('GET', `/accounts/${acc.id}/members/${m.id}`)).body.lastSeenAt as string;
    const atLogin = await seen();
    expect(atLogin).toBe(app.clock.now().toISOString());
    app.clock.advance(30_000);
    expect((await c.me()).status).toBe(200);
    expect(await seen()).toBe(atLogin);
    app.clock.advance(31_000);
    expect((await c.me()).status).toBe(200);
    expect(await seen()).toBe(app.clock.now().toISOString());
  });

  it('"12 h idle / 14 days absolute": a session unused for 12 hours ends', async () => {
    const acc = await app.createAccount();
    const c = await signIn(app, await addMember(app, acc.id, 'owner'));
    app.clock.advance(11 * 3600_000);
    expect((await c.me()).status).toBe(200);
    app.clock.advance(12 * 3600_000 + 1000);
    expect((await c.me()).status).toBe(401);
  });
});

describe('"without, invited, and inviteUrl ({PUBLIC_URL}/console/invite/<token>, one use, 7 days) lets them choose one"', () => {
  it('the invite sets the password once; the member logs in; the link then answers 404', async () => {
    const acc = await app.createAccount();
    const email = freshEmail('invitada');
    const made = await app.admin('POST', `/accounts/${acc.id}/members`, { email, name: 'Inés', role: 'owner' });
    expect(made.status).toBe(201);
    expect(made.body.member.status).toBe('invited');
    expect(made.body.inviteUrl).toMatch(/\/console\/invite\/[A-Za-z0-9_-]{40,}$/);
    const token = (made.body.inviteUrl as string).split('/').at(-1);
    const stored = await app.rt.services.db.selectFrom('member_invites').selectAll().execute();
    expect(JSON.stringify(stored)).not.toContain(token);
    expect((await login(app, email, PASSWORD)).status).toBe(401);
    const invite = (body: unknown) => request(`${app.url}/console/api/invites/${token}`, 'POST', body);
    expect((await invite({ password: 'corta' })).status).toBe(400);
    expect((await invite({ password: PASSWORD })).status).toBe(204);
    const twice = await invite({ password: `${PASSWORD}-otra` });
    expect({ status: twice.status, body: twice.body }).toEqual({ status: 404, body: { error: textFor('invite_not_found'), cause: null } });
    expect((await app.admin('GET', `/accounts/${acc.id}/members/${made.body.member.id}`)).body.status).toBe('active');
    expect((await login(app, email, PASSWORD)).status).toBe(204);
  });

  it('an invite older than 7 days answers 404', async () => {
    const acc = await app.createAccount();
    const made = await app.admin('POST', `/accounts/${acc.id}/members`, { email: freshEmail('tarde'), role: 'agent' });
    app.clock.advance(7 * 24 * 3600_000 + 1000);
    const token = (made.body.inviteUrl as string).split('/').at(-1);
    expect((await request(`${app.url}/console/api/invites/${token}`, 'POST', { password: PASSWORD })).status).toBe(404);
  });
});

describe('"Owners and admins do the same from the console (admins cannot touch owners)"', () => {
  const ownerOnly = { status: 403, body: { error: textFor('owner_only'), cause: null } };

  it('an admin invites, re-roles, disables and removes members, but never changes, disables or removes an owner nor names one (403 owner_only); nothing changed', async () => {
    const acc = await app.createAccount();
    const owner = await addMember(app, acc.id, 'owner');
    const admin = await signIn(app, await addMember(app, acc.id, 'admin'));
    const invitedOwner = (await app.admin('POST', `/accounts/${acc.id}/members`, { email: freshEmail('duena'), role: 'owner' })).body
      .member;
    const base = `/accounts/${acc.id}/members`;

    expect((await admin.call('GET', base)).body.data).toHaveLength(3);
    const made = await admin.call('POST', base, { email: freshEmail('nuevo'), name: 'Nuevo', role: 'agent' });
    expect(made.status).toBe(201);
    expect(made.body.inviteUrl).toMatch(/\/console\/invite\//);
    const agentId = made.body.member.id as string;
    expect((await admin.call('PATCH', `${base}/${agentId}`, { role: 'admin' })).body.role).toBe('admin');
    expect((await admin.call('PATCH', `${base}/${agentId}`, { status: 'disabled' })).body.status).toBe('disabled');

    const refused: [string, string, unknown][] = [
      ['POST', base, { email: freshEmail('jefa'), role: 'owner' }],
      ['PATCH', `${base}/${agentId}`, { role: 'owner' }],
      ['PATCH', `${base}/${owner.id}`, { name: 'Otro nombre' }],
      ['PATCH', `${base}/${owner.id}`, { role: 'agent' }],
      ['PATCH', `${base}/${owner.id}`, { status: 'disabled' }],
      ['DELETE', `${base}/${owner.id}`, undefined],
      ['PATCH', `${base}/${invitedOwner.id}`, { role: 'admin' }],
      ['DELETE', `${base}/${invitedOwner.id}`, undefined],
    ];
    for (const [method, path, body] of refused) {
      const res = await admin.call(method, path, body);
      expect({ call: `${method} ${path}`, status: res.status, body: res.body }).toEqual({ call: `${method} ${path}`, ...ownerOnly });
    }
    const after = (await app.admin('GET', base)).body.data as { id: string; name: string; role: string; status: string }[];
    expect(after.map((m) => [m.role, m.status])).toEqual([
      ['owner', 'active'],
      ['admin', 'active'],
      ['owner', 'invited'],
      ['admin', 'disabled'],
    ]);
    expect(after[0]?.name).toBe('Persona owner');
    expect((await admin.call('DELETE', `${base}/${agentId}`)).status).toBe(204);
  });

  it('an owner does it all through the session (names an owner, demotes one); the last active owner still answers 409; the operator token is unaffected', async () => {
    const acc = await app.createAccount();
    const ownerM = await addMember(app, acc.id, 'owner');
    const owner = await signIn(app, ownerM);
    const other = await addMember(app, acc.id, 'admin');
    const base = `/accounts/${acc.id}/members`;
    const last = await owner.call('PATCH', `${base}/${ownerM.id}`, { role: 'admin' });
    expect({ status: last.status, body: last.body }).toEqual({ status: 409, body: { error: textFor('last_owner'), cause: null } });
    expect((await owner.call('PATCH', `${base}/${other.id}`, { role: 'owner' })).body.role).toBe('owner');
    expect((await owner.call('PATCH', `${base}/${other.id}`, { role: 'agent' })).body.role).toBe('agent');
    expect((await owner.call('POST', base, { email: freshEmail('socia'), role: 'owner' })).status).toBe(201);
    // The operator token names and changes owners as before.
    expect((await app.admin('PATCH', `${base}/${other.id}`, { role: 'owner' })).body.role).toBe('owner');
    expect((await app.admin('PATCH', `${base}/${other.id}`, { role: 'admin' })).body.role).toBe('admin');
  });

  it('"an agent" still gets 403 role_forbidden on members; activating a disabled member who never chose a password leaves them invited', async () => {
    const acc = await app.createAccount();
    await addMember(app, acc.id, 'owner');
    const agent = await signIn(app, await addMember(app, acc.id, 'agent'));
    const res = await agent.call('GET', `/accounts/${acc.id}/members`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 403, body: { error: textFor('role_forbidden'), cause: null } });
    const made = (await app.admin('POST', `/accounts/${acc.id}/members`, { email: freshEmail('sin-clave'), role: 'agent' })).body.member;
    const path = `/accounts/${acc.id}/members/${made.id}`;
    expect((await app.admin('PATCH', path, { status: 'disabled' })).body.status).toBe('disabled');
    expect((await app.admin('PATCH', path, { status: 'active' })).body.status).toBe('invited');
  });
});
