import { Agent, request as httpRequest } from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestApp, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('the service (api.md §5, §7)', () => {
  it('GET /healthz answers while the process is up and /readyz checks the database', async () => {
    expect((await request(`${app.url}/healthz`, 'GET')).status).toBe(200);
    const ready = await request(`${app.url}/readyz`, 'GET');
    expect(ready.status).toBe(200);
    expect(ready.body.database).toBe('ok');
  });

  it('missing, misspelled or revoked key → 401 with the error body and X-Request-Id (api.md §5)', async () => {
    const acc = await app.createAccount();
    const missing = await app.api(null, 'GET', '/me');
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ error: expect.stringMatching(/clave/i), cause: null });
    expect(missing.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect((await app.api(`${acc.key}x`, 'GET', '/me')).status).toBe(401);
    expect((await acc.call('GET', '/me')).status).toBe(200);
    expect((await app.admin('DELETE', `/accounts/${acc.id}/keys/${acc.keyId}`)).status).toBe(204);
    expect((await acc.call('GET', '/me')).status).toBe(401);
  });

  it('plans other than escala/enterprise → 402 with the upgrade cause on every call (api.md §1)', async () => {
    const acc = await app.createAccount({ plan: 'crecimiento' });
    const res = await acc.call('GET', '/me');
    expect(res.status).toBe(402);
    expect(res.body.cause).toMatchObject({ type: 'upgrade', plan: 'crecimiento', suggested: 'escala' });
  });

  it('"revoked keys stop working" at once, also on the keep-alive connection that used the key, as does a plan change', async () => {
    const acc = await app.createAccount();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const url = new URL(app.url);
    const onOneConnection = (path: string, key: string) =>
      new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
        const req = httpRequest(
          { agent, host: url.hostname, port: url.port, path: `/api/v1${path}`, headers: { authorization: `Bearer ${key}` } },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
          },
        );
        req.on('error', reject);
        req.end();
      });
    try {
      expect((await onOneConnection('/me', acc.key)).status).toBe(200);
      expect(await onOneConnection('/me', acc.key)).toEqual({ status: 200, reused: true });
      // A second key of the account stays valid while the first is revoked.
      const other = await app.admin('POST', `/accounts/${acc.id}/keys`, { name: 'otra' });
      expect(await onOneConnection('/me', other.body.key)).toEqual({ status: 200, reused: true });
      expect(await onOneConnection('/me', acc.key)).toEqual({ status: 200, reused: true });
      expect((await app.admin('DELETE', `/accounts/${acc.id}/keys/${acc.keyId}`)).status).toBe(204);
      expect(await onOneConnection('/me', acc.key)).toEqual({ status: 401, reused: true });
      expect(await onOneConnection('/contacts', acc.key)).toEqual({ status: 401, reused: true });
      expect(await onOneConnection('/me', other.body.key)).toEqual({ status: 200, reused: true });
      expect((await app.admin('PATCH', `/accounts/${acc.id}`, { plan: 'crecimiento' })).status).toBe(200);
      expect(await onOneConnection('/me', other.body.key)).toEqual({ status: 402, reused: true });
    } finally {
      agent.destroy();
    }
  });

  it('GET /me returns account, limits, usage and phone numbers (decisions.md "GET /me")', async () => {
    const acc = await app.createAccount({ limits: { contacts: 5 } });
    const me = await acc.call('GET', '/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      id: acc.id,
      plan: 'escala',
      limits: { requestsPerMinute: 300, contacts: 5, apiCallsPerMonth: 300000 },
    });
    expect(me.body.usage.period.start).toMatch(/T03:00:00\.000Z$/);
  });

  it('GET /me: "An API call is every request … with a valid key", each counted once, before its answer; the view may lag ("The usage counter may lag up to half a minute": here 2 s) and is the same on every path spelling (api.md §8)', async () => {
    const acc = await app.createAccount({ name: 'Panadería Ñandú — “La Única” 🥐' });
    const calls = [];
    for (const path of ['/me', '/me', '/me/', '/me?x=1', '/me']) calls.push(await acc.call('GET', path));
    for (const r of calls) {
      expect(r.status).toBe(200);
      expect(r.body.name).toBe('Panadería Ñandú — “La Única” 🥐');
      expect(Number(r.headers.get('content-length'))).toBe(Buffer.byteLength(JSON.stringify(r.body)));
      expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(r.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      expect(r.body).toEqual(calls[0]!.body);
    }
    // The first call is in the view it built; the rate headers count every call.
    expect(calls[0]!.body.usage.apiCalls).toBe(1);
    expect(calls.map((r) => r.headers.get('x-ratelimit-remaining'))).toEqual(['299', '298', '297', '296', '295']);
    app.clock.advance(2_000);
    expect((await acc.call('GET', '/me')).body.usage.apiCalls).toBe(6);
  });

  it('unknown route → 404 in the same body shape (api.md §7)', async () => {
    const acc = await app.createAccount();
    const res = await acc.call('GET', '/nope');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), cause: null });
  });

  it('"Every answer the server writes, including 404 for a malformed URL … and 414, has the error body and an X-Request-Id" (decisions.md "Naming and shapes")', async () => {
    const acc = await app.createAccount();
    for (const path of ['/messages/%ED%A0%80', '/contacts/%ff', '/contacts/%']) {
      const res = await acc.call('GET', path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: expect.stringMatching(/ruta/), cause: null });
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
    // An id longer than any id is not one of the account's: 404, like any id that is not a UUID.
    const long = await acc.call('GET', `/contacts/${'a'.repeat(150)}`);
    expect(long.status).toBe(404);
    expect(long.body).toEqual({ error: expect.any(String), cause: null });
    const longer = await acc.call('GET', `/contacts/${'a'.repeat(600)}`);
    expect(longer.status).toBe(414);
    expect(longer.body).toEqual({ error: expect.stringMatching(/demasiado larga/), cause: null });
    expect(longer.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('the operator API needs its token (operator.md)', async () => {
    const res = await request(`${app.url}/admin/v1/accounts`, 'GET');
    expect(res.status).toBe(401);
    expect(res.body.cause).toBeNull();
  });

  it('serves the OpenAPI 3.1 document and the docs page', async () => {
    const doc = await request(`${app.url}/api/v1/openapi.json`, 'GET');
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
    expect(doc.body.paths['/api/v1/me']).toBeDefined();
    expect((await request(`${app.url}/docs`, 'GET')).status).toBe(200);
  });
});

describe('HTTP-level errors keep the one body shape (api.md §7, decisions.md "Endpoints")', () => {
  it('a body over 1 MiB → 413', async () => {
    const big = { name: 'x'.repeat(1024 * 1024 + 10), plan: 'escala' };
    const res = await app.admin('POST', '/accounts', big);
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ error: expect.stringMatching(/1 MiB/), cause: null });
  });

  it('malformed JSON → 400', async () => {
    const res = await app.admin('POST', '/accounts', '{"name": "a", ');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringMatching(/JSON/), cause: null });
  });

  it('wrong Content-Type → 415', async () => {
    const res = await request(`${app.url}/admin/v1/accounts`, 'POST', 'name=a', {
      authorization: 'Bearer test-admin-token-0123456789abcdef',
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(res.status).toBe(415);
    expect(res.body.cause).toBeNull();
  });

  it('validation 400: error.message is the JSON text of [{path, message}] in Spanish', async () => {
    const res = await app.admin('POST', '/accounts', { plan: 'oro' });
    expect(res.status).toBe(400);
    expect(res.body.cause).toBeNull();
    const problems = JSON.parse(res.body.error.message);
    expect(problems).toEqual(
      expect.arrayContaining([
        { path: ['name'], message: 'Falta este campo obligatorio.' },
        { path: ['plan'], message: expect.stringContaining('escala') },
      ]),
    );
  });

  it('"500 bodies carry it [X-Request-Id] as requestId" (decisions.md); "Unexpected error | Details: not shown" (api.md §7)', async () => {
    const other = await startTestApp();
    try {
      const acc = await other.createAccount();
      // A table the key check reads disappears under the running app: an unexpected failure.
      await sql`ALTER TABLE api_keys RENAME TO api_keys_gone`.execute(other.rt.services.db);
      const res = await acc.call('GET', '/me');
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: expect.any(String), cause: null, requestId: res.headers.get('x-request-id') });
      expect(res.body.requestId).toMatch(/^[0-9a-f-]{36}$/);
      expect(JSON.stringify(res.body)).not.toMatch(/at .*\.ts|stack|PGlite|SELECT|api_keys|relation/i);
    } finally {
      await other.close();
    }
  });
});
