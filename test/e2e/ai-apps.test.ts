// Connected AI apps (docs/mcp.md "Connected AI apps"; spec mcp.md): the operator connects an app
// and gets its token once, lists and disconnects; the plan's maximum answers 402; GET /me counts
// them; the RFC 9728 metadata document is served.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('"POST /admin/v1/accounts/{id}/ai-apps {name} → 201 {id, name, token, createdAt}; the token etk_app_ + ≥ 32 random characters is shown once and stored hashed"', () => {
  it('connect, list without tokens, disconnect; GET /me usage.aiApps follows', async () => {
    const acct = await app.createAccount();
    const r = await app.admin('POST', `/accounts/${acct.id}/ai-apps`, { name: 'Claude de Ana' });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toEqual({
      id: expect.any(String),
      name: 'Claude de Ana',
      prefix: r.body.token.slice(0, 12),
      token: expect.stringMatching(/^etk_app_[A-Za-z0-9_-]{32,}$/),
      oauthClientId: null,
      createdAt: expect.any(String),
      lastUsedAt: null,
    });
    const stored = await app.rt.services.db.selectFrom('ai_apps').selectAll().where('id', '=', r.body.id).executeTakeFirstOrThrow();
    expect(stored.token_hash).not.toContain(r.body.token.slice(8));
    const list = await app.admin('GET', `/accounts/${acct.id}/ai-apps`);
    expect(list.body.data).toEqual([
      {
        id: r.body.id,
        name: 'Claude de Ana',
        prefix: r.body.token.slice(0, 12),
        oauthClientId: null,
        createdAt: r.body.createdAt,
        lastUsedAt: null,
      },
    ]);
    app.clock.advance(3_000);
    expect((await acct.call('GET', '/me')).body.usage.aiApps).toBe(1);
    expect((await app.admin('DELETE', `/accounts/${acct.id}/ai-apps/${r.body.id}`)).status).toBe(204);
    expect((await app.admin('DELETE', `/accounts/${acct.id}/ai-apps/${r.body.id}`)).status).toBe(404);
    expect((await app.admin('GET', `/accounts/${acct.id}/ai-apps`)).body.data).toEqual([]);
    app.clock.advance(3_000);
    expect((await acct.call('GET', '/me')).body.usage.aiApps).toBe(0);
  });

  it('"At the plan\'s maximum of connected apps: 402 with the upgrade cause (resource: "aiApps")"', async () => {
    const acct = await app.createAccount({ plan: 'free_trial' });
    for (let i = 0; i < 3; i++) expect((await app.admin('POST', `/accounts/${acct.id}/ai-apps`, { name: `app ${i}` })).status).toBe(201);
    const over = await app.admin('POST', `/accounts/${acct.id}/ai-apps`, { name: 'una más' });
    expect(over.status).toBe(402);
    expect(over.body.error).toContain('3 apps de IA');
    expect(over.body.cause).toMatchObject({ type: 'upgrade', resource: 'aiApps', limit: 3, used: 3 });
  });

  it('strict body: no name, an unknown field → 400', async () => {
    const acct = await app.createAccount();
    expect((await app.admin('POST', `/accounts/${acct.id}/ai-apps`, {})).status).toBe(400);
    expect((await app.admin('POST', `/accounts/${acct.id}/ai-apps`, { name: 'x', scope: 'all' })).status).toBe(400);
  });
});

describe('"/.well-known/oauth-protected-resource (RFC 9728: resource, authorization_servers, bearer_methods_supported)"', () => {
  it('served without a token, at the root and at the path derived from /mcp', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const r = await fetch(`${app.url}${path}`);
      expect(r.status).toBe(200);
      expect(await r.json()).toMatchObject({
        resource: `${app.url}/mcp`,
        authorization_servers: [app.url],
        bearer_methods_supported: ['header'],
      });
    }
  });
});

describe('"DELETE …/ai-apps/{appId} disconnects (the token stops at once)": in every process, not after a cache\'s TTL', () => {
  it.skipIf(!process.env.DATABASE_URL || !process.env.REDIS_URL)(
    'on PostgreSQL + Redis: a token (and an API key) the other process has cached answers 401 there as soon as it is disconnected (revoked) here',
    async () => {
      const two = await startTestApp({ sameDataAs: app, clock: app.clock });
      try {
        const acct = await app.createAccount();
        const token = (await app.admin('POST', `/accounts/${acct.id}/ai-apps`, { name: 'Claude' })).body;
        const list = (url: string) =>
          fetch(`${url}/mcp`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${token.token}`,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              'mcp-protocol-version': '2025-06-18',
            },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
          });
        // The second process looks the token up and caches it (and the key: GET /me).
        expect((await list(two.url)).status).toBe(200);
        expect((await two.api(acct.key, 'GET', '/me')).status).toBe(200);
        expect((await app.admin('DELETE', `/accounts/${acct.id}/ai-apps/${token.id}`)).status).toBe(204);
        expect((await app.admin('DELETE', `/accounts/${acct.id}/keys/${acct.keyId}`)).status).toBe(204);
        // The announcement crosses Redis in milliseconds; the caches' TTL (2 s of the clock) never passes here.
        const deadline = Date.now() + 1_000;
        let mcp = 200;
        let rest = 200;
        while (Date.now() < deadline && (mcp !== 401 || rest !== 401)) {
          mcp = (await list(two.url)).status;
          rest = (await two.api(acct.key, 'GET', '/me')).status;
          if (mcp !== 401 || rest !== 401) await new Promise((r) => setTimeout(r, 20));
        }
        expect({ mcp, rest }).toEqual({ mcp: 401, rest: 401 });
      } finally {
        await two.close();
      }
    },
  );
});
