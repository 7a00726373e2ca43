// The audit trail (docs/privacy.md "Audit trail"; spec privacy-security.md): one line per
// security-relevant action, written in the action's transaction, with actor, request id and IP;
// GET /admin/v1/accounts/{id}/audit by cursor pages; retention; append-only. "One helper, no
// forgotten door": the app's own routes of the audited families are listed and each must be in
// ROUTES below, and a scripted session through the operator API and the console calls them all.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, cookieOf, login, PASSWORD, signIn } from '../console-session.js';
import { ADMIN_TOKEN, freshPhone, type Res, request, startTestApp, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ workers: false });
});
afterAll(() => app?.close());

/**
 * Every state-changing route of the audited families, as Fastify names it: the action its line
 * says, or why it writes none.
 */
const ROUTES: Record<string, string[] | { none: string }> = {
  'POST /admin/v1/accounts': { none: 'an account is created: its trail starts with what is done to it' },
  'PATCH /admin/v1/accounts/:id': ['account.plan_changed', 'account.limits_changed'],
  'POST /admin/v1/accounts/:id/keys': ['api_key.created'],
  'DELETE /admin/v1/accounts/:id/keys/:keyId': ['api_key.revoked'],
  'POST /admin/v1/accounts/:id/ai-apps': ['ai_app.connected'],
  'DELETE /admin/v1/accounts/:id/ai-apps/:appId': ['ai_app.disconnected'],
  'POST /console/conectar/:uid/decision': ['ai_app.connected'],
  'POST /admin/v1/accounts/:id/webhooks': ['webhook.created'],
  'PATCH /admin/v1/accounts/:id/webhooks/:wid': ['webhook.updated'],
  'DELETE /admin/v1/accounts/:id/webhooks/:wid': ['webhook.deleted'],
  'POST /admin/v1/accounts/:id/webhooks/:wid/rotate-secret': ['webhook.secret_rotated'],
  'POST /admin/v1/accounts/:id/webhooks/:wid/test': { none: 'a test event changes no configuration' },
  'POST /admin/v1/accounts/:id/webhooks/:wid/deliveries/:did/redeliver': { none: 'a delivery sent again changes no configuration' },
  'POST /admin/v1/accounts/:id/phone-numbers': ['phone_number.connected'],
  'PATCH /admin/v1/accounts/:id/phone-numbers/:pnId': ['phone_number.updated'],
  'POST /admin/v1/accounts/:id/social-accounts': ['social_account.connected'],
  'PATCH /admin/v1/accounts/:id/social-accounts/:socialId': ['social_account.updated'],
  'DELETE /admin/v1/accounts/:id/social-accounts/:socialId': ['social_account.deleted'],
  'POST /admin/v1/accounts/:id/members': ['member.added', 'member.invited'],
  'PATCH /admin/v1/accounts/:id/members/:memberId': ['member.updated', 'member.disabled'],
  'DELETE /admin/v1/accounts/:id/members/:memberId': ['member.removed'],
  'POST /console/api/login': ['login.succeeded', 'login.failed'],
  'POST /console/api/logout': { none: 'a member ends their own session' },
  'POST /console/api/invites/:token': ['member.updated'],
  'POST /admin/v1/dead-letters/:id/retry': ['dead_letter.retried'],
  'DELETE /admin/v1/dead-letters/:id': ['dead_letter.discarded'],
  'DELETE /admin/v1/accounts/:id/contacts/:contactId': ['contact.erased'],
  'POST /admin/v1/secrets/rotate': ['secrets.rotated'],
  'PATCH /admin/v1/accounts/:id/contacts/:contactId': {
    none: "editing a contact's attributes is the business's own data, not a security action",
  },
};

/** Reads that are audited too: a person's data taken out of the system. */
const READS: Record<string, string[]> = {
  'GET /admin/v1/accounts/:id/contacts/:contactId/export': ['contact.exported'],
};

const AUDITED_FAMILIES =
  /^\/admin\/v1\/accounts(\/:id(\/(keys|ai-apps|webhooks|phone-numbers|social-accounts|members)(\/.*)?|\/contacts\/:contactId)?)?$|^\/admin\/v1\/dead-letters\/|^\/admin\/v1\/secrets\/|^\/console\/api\/(login|logout|invites)|^\/console\/conectar\//;

/** The app's routes, from the router's tree (printRoutes draws it 4 characters a level). */
function servedRoutes(): string[] {
  const stack: string[] = [];
  const out: string[] = [];
  for (const line of app.rt.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = line.match(/^([\s│]*)[├└]── (\S+)(?: \(([^)]*)\))?/);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    const path = (stack[depth - 1] ?? '') + m[2];
    stack.push(path);
    for (const method of m[3]?.split(', ') ?? []) out.push(`${method} ${path}`);
  }
  return out;
}

interface Line {
  id: string;
  at: string;
  actor: { type: string; id: string | null; name: string | null };
  action: string;
  target: { type: string; id: string } | null;
  requestId: string | null;
  ip: string | null;
  changes: Record<string, any>;
}

/** Every line of the account (null: the installation's own), newest first, following the cursor pages of `limit`. */
async function allLines(accountId: string | null, limit = 200, query = ''): Promise<Line[]> {
  const out: Line[] = [];
  let after = '';
  for (;;) {
    const path = accountId === null ? '/audit' : `/accounts/${accountId}/audit`;
    const r = await app.admin('GET', `${path}?limit=${limit}${after}${query}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    out.push(...r.body.data);
    if (!r.body.hasMore) return out;
    after = `&after=${r.body.nextCursor}`;
  }
}

const LOCAL_IP = /^(127\.0\.0\.1|::1|::ffff:127\.0\.0\.1)$/;

/** One step of the scripted session: the route it calls (ROUTES' name), its answer and the line it must write. */
interface Step {
  route: string;
  res: Res;
  action: string | null;
  actor: { type: string; id: string | null; name: string | null };
}

describe('"One append-only table of security-relevant actions … one line per action" (privacy-security.md "Audit trail")', () => {
  it('every state-changing route of the audited families is in the table of calls: no forgotten door', () => {
    const served = servedRoutes().filter(
      (r) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(r.split(' ')[0]!) && AUDITED_FAMILIES.test(r.split(' ')[1]!),
    );
    expect(served.length).toBeGreaterThan(20);
    expect(
      served.filter((r) => !(r in ROUTES)),
      'served routes missing from ROUTES',
    ).toEqual([]);
    expect(
      Object.keys(ROUTES).filter((r) => !served.includes(r)),
      'ROUTES names routes the app does not serve',
    ).toEqual([]);
  });

  it('a scripted session through the operator API and the console writes exactly one line per action, with actor, request id and IP', async () => {
    const steps: Step[] = [];
    const OPERATOR = { type: 'operator', id: null, name: null };
    const op = async (route: string, action: string | null, method: string, path: string, body?: unknown, status = [200, 201, 204]) => {
      const res = await app.admin(method, path, body);
      expect(status, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`).toContain(res.status);
      steps.push({ route, res, action, actor: OPERATOR });
      return res;
    };

    // The operator: an account, its plan and limits, keys, an AI app, webhooks, numbers, social accounts.
    const created = await op('POST /admin/v1/accounts', null, 'POST', '/accounts', { name: 'Óptica Auditada', plan: 'crecimiento' });
    const id = created.body.id as string;
    const a = `/accounts/${id}`;
    await op('PATCH /admin/v1/accounts/:id', 'account.plan_changed', 'PATCH', a, { plan: 'escala' });
    await op('PATCH /admin/v1/accounts/:id', 'account.limits_changed', 'PATCH', a, { limits: { apiKeys: 7 } });
    const key = await op('POST /admin/v1/accounts/:id/keys', 'api_key.created', 'POST', `${a}/keys`, { name: 'ERP' });
    await op('DELETE /admin/v1/accounts/:id/keys/:keyId', 'api_key.revoked', 'DELETE', `${a}/keys/${key.body.id}`);
    const aiApp = await op('POST /admin/v1/accounts/:id/ai-apps', 'ai_app.connected', 'POST', `${a}/ai-apps`, { name: 'Claude de Ana' });
    await op('DELETE /admin/v1/accounts/:id/ai-apps/:appId', 'ai_app.disconnected', 'DELETE', `${a}/ai-apps/${aiApp.body.id}`);
    const hook = await op('POST /admin/v1/accounts/:id/webhooks', 'webhook.created', 'POST', `${a}/webhooks`, {
      url: 'http://127.0.0.1:9/hooks/chasqui?token=nunca-en-el-registro',
      events: ['message.received'],
    });
    const w = `${a}/webhooks/${hook.body.id}`;
    await op('PATCH /admin/v1/accounts/:id/webhooks/:wid', 'webhook.updated', 'PATCH', w, {
      events: ['message.received', 'message.status'],
    });
    const rotated = await op(
      'POST /admin/v1/accounts/:id/webhooks/:wid/rotate-secret',
      'webhook.secret_rotated',
      'POST',
      `${w}/rotate-secret`,
    );
    await op('POST /admin/v1/accounts/:id/webhooks/:wid/test', null, 'POST', `${w}/test`, undefined, [202]);
    const [delivery] = (await app.admin('GET', `${w}/deliveries`)).body.data;
    await op(
      'POST /admin/v1/accounts/:id/webhooks/:wid/deliveries/:did/redeliver',
      null,
      'POST',
      `${w}/deliveries/${delivery.id}/redeliver`,
      undefined,
      [202],
    );
    const pn = await op('POST /admin/v1/accounts/:id/phone-numbers', 'phone_number.connected', 'POST', `${a}/phone-numbers`, {
      phone: freshPhone(),
      provider: 'sandbox',
    });
    await op('PATCH /admin/v1/accounts/:id/phone-numbers/:pnId', 'phone_number.updated', 'PATCH', `${a}/phone-numbers/${pn.body.id}`, {
      throughputPerSecond: 200,
    });
    const social = await op('POST /admin/v1/accounts/:id/social-accounts', 'social_account.connected', 'POST', `${a}/social-accounts`, {
      name: 'Instagram de la óptica',
      provider: 'sandbox',
    });
    const sa = `${a}/social-accounts/${social.body.id}`;
    await op('PATCH /admin/v1/accounts/:id/social-accounts/:socialId', 'social_account.updated', 'PATCH', sa, { status: 'disconnected' });
    await op('DELETE /admin/v1/accounts/:id/social-accounts/:socialId', 'social_account.deleted', 'DELETE', sa);

    // Dead letters: the delivery parked as the dispatcher parks one (dead-letters.test.ts proves the dying).
    const db = app.rt.services.db;
    const park = async () => {
      await sql`UPDATE webhook_deliveries SET status = 'dead' WHERE id = ${delivery.id}`.execute(db);
      const dl = randomUUID7();
      await sql`INSERT INTO dead_letters (id, queue, item_id, account_id, first_failed_at, attempts, last_error, died_at)
        VALUES (${dl}, 'webhook_deliveries', ${delivery.id}, ${id}, now(), 4, 'prueba', now())`.execute(db);
      return dl;
    };
    await op('POST /admin/v1/dead-letters/:id/retry', 'dead_letter.retried', 'POST', `/dead-letters/${await park()}/retry`);
    await op('DELETE /admin/v1/dead-letters/:id', 'dead_letter.discarded', 'DELETE', `/dead-letters/${await park()}`);

    // Members: added with a password, invited (who then chooses one), changed, disabled, removed.
    const ownerEmail = `duena-${randomBytes(3).toString('hex')}@example.com`;
    const owner = await op('POST /admin/v1/accounts/:id/members', 'member.added', 'POST', `${a}/members`, {
      email: ownerEmail,
      name: 'Ana Dueña',
      role: 'owner',
      password: PASSWORD,
    });
    const invited = await op('POST /admin/v1/accounts/:id/members', 'member.invited', 'POST', `${a}/members`, {
      email: `invitado-${randomBytes(3).toString('hex')}@example.com`,
      name: 'Beto Invitado',
      role: 'agent',
    });
    const token = String(invited.body.inviteUrl).split('/').pop();
    const accepted = await request(`${app.url}/console/api/invites/${token}`, 'POST', { password: PASSWORD });
    expect(accepted.status).toBe(204);
    steps.push({
      route: 'POST /console/api/invites/:token',
      res: accepted,
      action: 'member.updated',
      actor: { type: 'member', id: invited.body.member.id, name: 'Beto Invitado' },
    });

    // The console: a failed login of a known member, a login, then the owner acts with the session.
    const failed = await login(app, ownerEmail, 'no-es-la-clave-123');
    expect(failed.status).toBe(401);
    const ana = { type: 'member', id: owner.body.member.id as string, name: 'Ana Dueña' };
    steps.push({ route: 'POST /console/api/login', res: failed, action: 'login.failed', actor: ana });
    const unknown = await login(app, `nadie-${randomBytes(3).toString('hex')}@example.com`, 'no-es-la-clave-123');
    expect(unknown.status).toBe(401);
    const logged = await login(app, ownerEmail, PASSWORD);
    expect(logged.status).toBe(204);
    steps.push({ route: 'POST /console/api/login', res: logged, action: 'login.succeeded', actor: ana });
    const cookie = cookieOf(logged);
    const c = { cookie, csrf: (await request(`${app.url}/console/api/me`, 'GET', undefined, { cookie })).body.csrf as string };
    const mine = async (route: string, action: string | null, method: string, path: string, body?: unknown) => {
      const res = await request(`${app.url}/admin/v1${path}`, method, body, { cookie, 'x-chasqui-csrf': c.csrf });
      expect([200, 201, 204], `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`).toContain(res.status);
      steps.push({ route, res, action, actor: ana });
      return res;
    };
    const m = `${a}/members/${invited.body.member.id}`;
    await mine('PATCH /admin/v1/accounts/:id/members/:memberId', 'member.updated', 'PATCH', m, { role: 'admin' });
    await mine('PATCH /admin/v1/accounts/:id/members/:memberId', 'member.disabled', 'PATCH', m, { status: 'disabled' });
    await mine('DELETE /admin/v1/accounts/:id/members/:memberId', 'member.removed', 'DELETE', m);
    const hook2 = await mine('POST /admin/v1/accounts/:id/webhooks', 'webhook.created', 'POST', `${a}/webhooks`, {
      url: 'http://127.0.0.1:9/otro',
    });
    await mine('DELETE /admin/v1/accounts/:id/webhooks/:wid', 'webhook.deleted', 'DELETE', `${a}/webhooks/${hook2.body.id}`);
    await consent(c, steps, ana);
    // A customer's data, exported and erased by the owner.
    const customer = await app.inbound({ accountId: id, from: freshPhone(), text: 'Hola, quiero mis datos', name: 'Clara Cliente' });
    expect(customer.status).toBe(201);
    const person = `${a}/contacts/${customer.body.contactId}`;
    await mine('PATCH /admin/v1/accounts/:id/contacts/:contactId', null, 'PATCH', person, { attributes: { ciudad: 'Rosario' } });
    await mine('GET /admin/v1/accounts/:id/contacts/:contactId/export', 'contact.exported', 'GET', `${person}/export`);
    await mine('DELETE /admin/v1/accounts/:id/contacts/:contactId', 'contact.erased', 'DELETE', person);
    const out = await request(`${app.url}/console/api/logout`, 'POST', undefined, { cookie: c.cookie, 'x-chasqui-csrf': c.csrf });
    expect(out.status).toBe(204);
    steps.push({ route: 'POST /console/api/logout', res: out, action: null, actor: ana });

    // The installation's own action: the secrets key rotated, a line on no account.
    await op('POST /admin/v1/secrets/rotate', 'secrets.rotated', 'POST', '/secrets/rotate');

    // Every route of the table was called, and every call wrote exactly what the table says.
    expect(Object.keys(ROUTES).filter((r) => !steps.some((s) => s.route === r))).toEqual([]);
    const lines = await allLines(id, 7);
    const installation = await allLines(null, 7);
    expect(installation.map((l) => [l.action, l.actor.type])).toEqual([['secrets.rotated', 'operator']]);
    for (const s of steps) {
      const requestId = s.res.headers.get('x-request-id');
      expect(requestId, s.route).toBeTruthy();
      const mineLines = [...lines, ...installation].filter((l) => l.requestId === requestId);
      if (s.action === null) {
        expect(mineLines, `${s.route} writes no line`).toEqual([]);
        continue;
      }
      expect(ROUTES[s.route] ?? READS[s.route]).toContain(s.action);
      expect(mineLines, `${s.route} → one ${s.action}`).toHaveLength(1);
      expect(mineLines[0]).toMatchObject({ action: s.action, actor: s.actor, requestId });
      expect(mineLines[0]!.ip).toMatch(LOCAL_IP);
    }
    // No line came from anywhere else, and the lines are newest first.
    expect(lines.length + installation.length).toBe(steps.filter((s) => s.action !== null).length);
    const ats = lines.map((l) => l.at);
    expect([...ats].sort().reverse()).toEqual(ats);

    // "never a secret, never message text": the keys, tokens, secrets and passwords of the session.
    const text = JSON.stringify(lines);
    for (const secret of [key.body.key, aiApp.body.token, hook.body.secret, rotated.body.secret, PASSWORD, 'nunca-en-el-registro'])
      expect(text).not.toContain(secret);
    // What changed, small: a plan from → to, a webhook's host and events, a role from → to.
    const one = (action: string) => lines.find((l) => l.action === action)!;
    expect(one('account.plan_changed').changes).toEqual({ plan: { from: 'crecimiento', to: 'escala' } });
    expect(one('webhook.updated').changes).toEqual({
      events: { from: ['message.received'], to: ['message.received', 'message.status'] },
    });
    expect(lines.filter((l) => l.action === 'webhook.created').map((l) => l.changes.host)).toEqual(['127.0.0.1:9', '127.0.0.1:9']);
    expect(one('member.disabled').changes).toEqual({ status: { from: 'active', to: 'disabled' } });
    expect(one('login.failed')).toMatchObject({ target: { type: 'member', id: ana.id }, changes: { reason: 'wrong_password' } });
  });
});

/** UUIDv7-shaped id for a row the test writes itself. */
function randomUUID7(): string {
  const h = randomBytes(16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-7${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** An AI app's OAuth consent in the console (mcp-oauth.test.ts walks the whole flow): one ai_app.connected by the member. */
async function consent(member: { cookie: string; csrf: string }, steps: Step[], actor: Step['actor']): Promise<void> {
  const REDIRECT = 'http://127.0.0.1:33418/callback';
  const reg = await request(`${app.url}/oauth/reg`, 'POST', {
    client_name: 'Claude',
    redirect_uris: [REDIRECT],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  });
  expect(reg.status).toBe(201);
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: reg.body.client_id,
    redirect_uri: REDIRECT,
    code_challenge: createHash('sha256').update(randomBytes(32)).digest('base64url'),
    code_challenge_method: 'S256',
    resource: `${app.url}/mcp`,
    scope: 'mcp',
  });
  const start = await fetch(`${app.url}/oauth/auth?${q}`, { redirect: 'manual', headers: { cookie: member.cookie } });
  const cookies = [member.cookie, ...start.headers.getSetCookie().map((c) => c.split(';')[0])].join('; ');
  const path = new URL(start.headers.get('location')!, app.url).pathname;
  const decided = await request(`${app.url}${path}/decision`, 'POST', { allow: true }, { cookie: cookies, 'x-chasqui-csrf': member.csrf });
  expect(decided.status, JSON.stringify(decided.body)).toBe(200);
  steps.push({ route: 'POST /console/conectar/:uid/decision', res: decided, action: 'ai_app.connected', actor });
}

describe('"GET /admin/v1/accounts/{id}/audit?limit&after&action" (operator; owners in the console), newest first, by cursor pages', () => {
  it('pages newest first with `after`, filters by action, answers Spanish 400s and 404 for an unknown account', async () => {
    const acc = await app.createAccount();
    for (const name of ['uno', 'dos', 'tres']) {
      app.clock.advance(1_000);
      expect((await app.admin('POST', `/accounts/${acc.id}/keys`, { name })).status).toBe(201);
    }
    const first = await app.admin('GET', `/accounts/${acc.id}/audit?limit=2&action=api_key.created`);
    expect(first.status).toBe(200);
    expect(first.body.data.map((l: Line) => l.changes.name)).toEqual(['tres', 'dos']);
    expect(first.body).toMatchObject({ hasMore: true, nextCursor: first.body.data[1].id });
    const next = await app.admin('GET', `/accounts/${acc.id}/audit?limit=2&action=api_key.created&after=${first.body.nextCursor}`);
    // The harness's own key ("test") is the oldest line of the account.
    expect(next.body.data.map((l: Line) => l.changes.name)).toEqual(['uno', 'test']);
    expect(next.body).toMatchObject({ hasMore: false, nextCursor: null });
    const numbers = await app.admin('GET', `/accounts/${acc.id}/audit?action=phone_number.connected`);
    expect(numbers.body.data).toEqual([
      expect.objectContaining({ action: 'phone_number.connected', target: { type: 'phone_number', id: acc.phoneNumberId } }),
    ]);

    for (const q of ['action=key.stolen', 'limit=0', 'limit=201', 'after=ayer']) {
      const bad = await app.admin('GET', `/accounts/${acc.id}/audit?${q}`);
      expect(bad.status, q).toBe(400);
      const [problem] = JSON.parse(bad.body.error.message);
      expect(problem.path, q).toEqual([q.split('=')[0]]);
      expect(problem.message, q).toMatch(/^Tiene que ser /);
    }
    expect((await app.admin('GET', `/accounts/${randomUUID7()}/audit`)).status).toBe(404);
    // Another account's cursor gives nothing of this one.
    const other = await app.createAccount();
    const mixed = await app.admin('GET', `/accounts/${other.id}/audit?after=${first.body.data[0].id}`);
    expect(mixed.body.data).toEqual([]);
  });

  it('"owners in the console": an owner reads it; admins and agents are refused (403)', async () => {
    const acc = await app.createAccount();
    const owner = await signIn(app, await addMember(app, acc.id, 'owner'));
    const admin = await signIn(app, await addMember(app, acc.id, 'admin'));
    const agent = await signIn(app, await addMember(app, acc.id, 'agent'));
    const read = await owner.call('GET', `/accounts/${acc.id}/audit`);
    expect(read.status).toBe(200);
    expect(read.body.data.filter((l: Line) => l.action === 'login.succeeded')).toHaveLength(3);
    expect((await admin.call('GET', `/accounts/${acc.id}/audit`)).status).toBe(403);
    expect((await agent.call('GET', `/accounts/${acc.id}/audit`)).status).toBe(403);
  });
});

describe('written in the transaction of the action', () => {
  it('an action refused writes no line: an unknown key, the plan’s maximum of keys (402), a member’s taken email (409)', async () => {
    const acc = await app.createAccount({ plan: 'escala', limits: { apiKeys: 1 } });
    const count = async () => (await allLines(acc.id)).length;
    const n = await count();
    expect((await app.admin('DELETE', `/accounts/${acc.id}/keys/${randomUUID7()}`)).status).toBe(404);
    expect((await app.admin('POST', `/accounts/${acc.id}/keys`, { name: 'otra' })).status).toBe(402);
    const m = await addMember(app, acc.id, 'owner');
    expect((await app.admin('POST', `/accounts/${acc.id}/members`, { email: m.email, role: 'agent' })).status).toBe(409);
    expect(await count()).toBe(n + 1);
  });

  it('the table is append-only: an UPDATE is refused by the database', async () => {
    const acc = await app.createAccount();
    const [line] = await allLines(acc.id);
    await expect(sql`UPDATE audit_log SET action = 'login.succeeded' WHERE id = ${line!.id}`.execute(app.rt.services.db)).rejects.toThrow(
      /append-only/,
    );
  });
});

describe('"logins (success and failure)"', () => {
  it('a known member’s failures are written until the throttle answers 429, which writes nothing; an unknown email writes nothing', async () => {
    const acc = await app.createAccount();
    const m = await addMember(app, acc.id, 'agent');
    const failures = async () => (await allLines(acc.id, 200, '&action=login.failed')).length;
    let refused = 0;
    let throttled: Res | null = null;
    for (let i = 0; i < 12 && !throttled; i++) {
      const r = await login(app, m.email, 'no-es-la-clave-123');
      if (r.status === 429) throttled = r;
      else refused++;
    }
    expect(throttled?.status).toBe(429);
    expect(await failures()).toBe(refused);
    expect((await login(app, m.email, 'otra-clave-mala-1')).status).toBe(429);
    expect(await failures()).toBe(refused);
    // An unknown email: no account to file it under, no line anywhere.
    const unknown = await login(app, `nadie-${randomBytes(3).toString('hex')}@example.com`, 'no-es-la-clave-123');
    expect(unknown.status).toBe(401);
    const db = app.rt.services.db;
    const rows = await db.selectFrom('audit_log').select('id').where('request_id', '=', unknown.headers.get('x-request-id')).execute();
    expect(rows).toEqual([]);
  });
});

describe('"kept 400 days by default (AUDIT_RETENTION_DAYS)"', () => {
  it('the audit job deletes the lines older than 400 days, in batches, and keeps the newer ones (POST /admin/v1/jobs/audit/run)', async () => {
    const acc = await app.createAccount();
    const old = await allLines(acc.id);
    expect(old.length).toBeGreaterThan(0);
    app.clock.advance(200 * 86_400_000);
    expect((await app.admin('POST', `/accounts/${acc.id}/keys`, { name: 'nueva' })).status).toBe(201);
    // 2,500 more old lines, more than two of the job's batches of 1,000.
    const longAgo = new Date(app.clock.ms() - 300 * 86_400_000);
    await sql`INSERT INTO audit_log (id, account_id, at, actor_type, action, changes)
      SELECT gen_random_uuid()::text, ${acc.id}, ${longAgo}, 'system', 'api_key.created', '{}'::jsonb
      FROM generate_series(1, 2500)`.execute(app.rt.services.db);
    app.clock.advance(201 * 86_400_000);
    const run = await app.admin('POST', '/jobs/audit/run');
    expect(run.status).toBe(200);
    expect(run.body.ran).toBe('audit');
    expect(run.body.changed).toBeGreaterThanOrEqual(old.length + 2500);
    const kept = await allLines(acc.id);
    expect(kept.map((l) => l.changes.name)).toEqual(['nueva']);
    expect((await app.admin('POST', '/jobs/audit/run')).body.changed).toBe(0);
  });
});

describe('the CLI (operator.md "CLI")', () => {
  it('`npx chasqui audit <accountId> --action api_key.created` prints the page of GET …/audit', async () => {
    const acc = await app.createAccount();
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const env = { ...process.env, CHASQUI_URL: app.url, ADMIN_TOKEN };
    const args = ['--import', 'tsx', join(root, 'src/cli/main.ts'), 'audit', acc.id, '--action', 'api_key.created', '--limit', '5'];
    const { stdout } = await promisify(execFile)(process.execPath, args, { env, cwd: root });
    const page = JSON.parse(stdout);
    expect(page).toMatchObject({ hasMore: false, nextCursor: null });
    expect(page.data).toEqual([expect.objectContaining({ action: 'api_key.created', target: { type: 'api_key', id: acc.keyId } })]);
  });
});
