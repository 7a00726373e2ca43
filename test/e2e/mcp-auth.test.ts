// MCP: who may call /mcp and how much (mcp.md "Connected AI apps", "Per-app minute cap"; api.md §8
// "Automations and AI-app connection"; docs/mcp.md). The SDK's own client is the outside judge;
// plain HTTP where the exact status, headers or body are the rule. Time is the injected clock.
import {
  Client,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
  SdkHttpError,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request, startTestApp, type TestAccount, type TestApp } from '../harness.js';

// A fixed minute start: the calls of one test never straddle a window by accident.
const MINUTE = Date.parse('2026-05-12T15:04:00.000Z');

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
  app.clock.set(MINUTE);
});
afterAll(async () => {
  await app?.close();
});

/** The next minute of the injected clock starts (a fresh window). */
const nextMinute = (a: TestApp) => a.clock.set(Math.floor(a.clock.now().getTime() / 60_000 + 1) * 60_000);

/** Connects an AI app to the account through the operator API; its token is shown only here. */
async function connectApp(a: TestApp, accountId: string, name = 'Claude de Laura'): Promise<{ id: string; token: string }> {
  const r = await a.admin('POST', `/accounts/${accountId}/ai-apps`, { name });
  expect(r.status).toBe(201);
  return r.body;
}

/** The SDK's client over Streamable HTTP with the app's token (null: no Authorization header). */
async function mcpClient(a: TestApp, token: string | null): Promise<Client> {
  const client = new Client({ name: 'chasqui-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
  });
  await client.connect(transport);
  return client;
}

/** One JSON-RPC request as plain HTTP (the exact status, headers and body). */
const rpc = (a: TestApp, token: string | null, body: unknown) =>
  request(`${a.url}/mcp`, 'POST', body, {
    accept: 'application/json, text/event-stream',
    ...(token ? { authorization: `Bearer ${token}` } : {}),
  });

const toolCall = (id: number, name = 'get_account', args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

/** The SDK client's outcome of a connection or call: 'ok', or the HTTP status of its refusal. */
async function statusOf(p: Promise<unknown>): Promise<number | 'ok'> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    // Without an auth provider the transport throws SdkHttpError(401); with one, UnauthorizedError.
    if (err instanceof UnauthorizedError) return 401;
    if (err instanceof SdkHttpError) return err.status;
    throw err;
  }
}

describe('authentication (mcp.md "Connected AI apps")', () => {
  it('"Missing/unknown/revoked → HTTP 401 with WWW-Authenticate: Bearer resource_metadata=…, scope" and that document served (RFC 9728: resource, authorization_servers = this server, scopes_supported, bearer_methods_supported)', async () => {
    const missing = await rpc(app, null, toolCall(1));
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ error: expect.any(String), cause: null });
    const challenge = missing.headers.get('www-authenticate');
    expect(challenge).toBe(`Bearer resource_metadata="${app.url}/.well-known/oauth-protected-resource/mcp", scope="mcp"`);
    const unknown = await rpc(app, `etk_app_${'x'.repeat(40)}`, toolCall(2));
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get('www-authenticate')).toBe(challenge);

    // The SDK's client sees the same: refused, and it finds the metadata from the challenge alone.
    expect(await statusOf(mcpClient(app, null))).toBe(401);
    const res = await fetch(`${app.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(res);
    expect(resourceMetadataUrl?.href).toBe(`${app.url}/.well-known/oauth-protected-resource/mcp`);
    const metadata = await discoverOAuthProtectedResourceMetadata(`${app.url}/mcp`, { resourceMetadataUrl: resourceMetadataUrl! });
    expect(metadata).toMatchObject({
      resource: `${app.url}/mcp`,
      authorization_servers: [app.url],
      scopes_supported: ['mcp'],
      bearer_methods_supported: ['header'],
    });
    // The document needs no token and is plain JSON.
    const doc = await request(`${app.url}/.well-known/oauth-protected-resource`, 'GET');
    expect(doc.status).toBe(200);
    expect(doc.body).toEqual(metadata);
  });

  it('"An etk_live_ key is not an app token (401)", nor an app token an API key; with the app\'s token the same account is served', async () => {
    const acc = await app.createAccount();
    const live = await rpc(app, acc.key, toolCall(1));
    expect(live.status).toBe(401);
    expect(live.body.error).toMatch(/^Esa es una clave de API \(etk_live_/);
    expect(live.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata="/);
    expect(await statusOf(mcpClient(app, acc.key))).toBe(401);

    const { token } = await connectApp(app, acc.id);
    expect(token).toMatch(/^etk_app_[A-Za-z0-9_-]{32,}$/);
    // …and the other way round: an app token is not an API key.
    const asKey = await app.api(token, 'GET', '/me');
    expect(asKey.status).toBe(401);
    expect(asKey.body.error).toMatch(/^Ese es el token de una app de IA/);
    const client = await mcpClient(app, token);
    try {
      const me = await client.callTool({ name: 'get_account', arguments: {} });
      expect(me.isError).toBeFalsy();
      expect(me.structuredContent).toMatchObject({ id: acc.id });
    } finally {
      await client.close();
    }
  });

  it('a client that does not accept both application/json and text/event-stream gets 406 in Spanish (Streamable HTTP)', async () => {
    const acc = await app.createAccount();
    const { token } = await connectApp(app, acc.id);
    const r = await request(`${app.url}/mcp`, 'POST', toolCall(1), { accept: 'application/json', authorization: `Bearer ${token}` });
    expect(r.status).toBe(406);
    expect(r.body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message: expect.stringMatching(/^El cliente MCP tiene que aceptar/) },
    });
  });

  it('"DELETE …/ai-apps/{appId} disconnects (the token stops at once)": the next request of a connected client is 401', async () => {
    const acc = await app.createAccount();
    const connected = await connectApp(app, acc.id);
    const other = await connectApp(app, acc.id, 'Cursor');
    const client = await mcpClient(app, connected.token);
    try {
      expect((await client.callTool({ name: 'get_account', arguments: {} })).isError).toBeFalsy();
      expect((await app.admin('DELETE', `/accounts/${acc.id}/ai-apps/${connected.id}`)).status).toBe(204);
      // No clock move, no wait: the very next call is refused.
      expect(await statusOf(client.callTool({ name: 'get_account', arguments: {} }))).toBe(401);
      expect((await rpc(app, connected.token, toolCall(3))).status).toBe(401);
      // The account's other app keeps working.
      expect((await rpc(app, other.token, toolCall(4))).status).toBe(200);
    } finally {
      await client.close();
    }
    const list = await app.admin('GET', `/accounts/${acc.id}/ai-apps`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((a: { id: string }) => a.id)).toEqual([other.id]);
    // "GET …/ai-apps lists (no tokens)": only the prefix that tells tokens apart.
    expect(JSON.stringify(list.body)).not.toContain(other.token);
    expect(list.body.data[0].prefix).toBe(other.token.slice(0, 12));
  });
});

describe('the connected-apps maximum (api.md §8 "Connected AI apps": 3 / 10 / 25 / unlimited)', () => {
  it('"At the plan\'s maximum of connected apps: 402 with the upgrade cause (resource: "aiApps")"; disconnecting one makes room', async () => {
    const acc = await app.createAccount({ plan: 'free_trial' });
    const apps = [];
    for (const name of ['uno', 'dos', 'tres']) apps.push(await connectApp(app, acc.id, name));
    const fourth = await app.admin('POST', `/accounts/${acc.id}/ai-apps`, { name: 'cuatro' });
    expect(fourth.status).toBe(402);
    expect(fourth.body).toEqual({
      error: expect.stringMatching(/3/),
      cause: { type: 'upgrade', reason: 'limit', resource: 'aiApps', plan: 'free_trial', limit: 3, used: 3, suggested: expect.any(String) },
    });
    expect((await app.admin('DELETE', `/accounts/${acc.id}/ai-apps/${apps[0]!.id}`)).status).toBe(204);
    expect((await app.admin('POST', `/accounts/${acc.id}/ai-apps`, { name: 'cuatro' })).status).toBe(201);
  });

  it('"GET /me usage shows aiApps connected": connecting adds one, disconnecting takes it away', async () => {
    const acc = await app.createAccount();
    const usage = async () => {
      const me = await acc.call('GET', '/me');
      expect(me.status).toBe(200);
      return me.body.usage.aiApps;
    };
    expect(await usage()).toBe(0);
    const a = await connectApp(app, acc.id, 'uno');
    await connectApp(app, acc.id, 'dos');
    expect(await usage()).toBe(2);
    expect((await app.admin('DELETE', `/accounts/${acc.id}/ai-apps/${a.id}`)).status).toBe(204);
    expect(await usage()).toBe(1);
    const me = await acc.call('GET', '/me');
    expect(me.body.limits).toMatchObject({ aiApps: 25, mcpCallsPerMinute: 60 });
  });
});

describe('the per-app minute cap (mcp.md "Per-app minute cap")', () => {
  it('"The N+1st call of an app inside one minute window answers HTTP 429, Retry-After: 60, body {jsonrpc, id, error: {code: -32000, message}}"; the next window admits again', async () => {
    nextMinute(app);
    const acc = await app.createAccount({ limits: { mcpCallsPerMinute: 3 } });
    const { token } = await connectApp(app, acc.id);
    for (let i = 1; i <= 3; i++) expect((await rpc(app, token, toolCall(i))).status).toBe(200);
    const over = await rpc(app, token, toolCall(42));
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('60');
    expect(over.body).toEqual({ jsonrpc: '2.0', id: 42, error: { code: -32000, message: expect.stringMatching(/3/) } });
    // The SDK's client gets the 429 as an error, not a tool result.
    const client = await mcpClient(app, token);
    try {
      expect(await statusOf(client.callTool({ name: 'get_account', arguments: {} }))).toBe(429);
      nextMinute(app);
      expect((await client.callTool({ name: 'get_account', arguments: {} })).isError).toBeFalsy();
    } finally {
      await client.close();
    }
  });

  it('"Only tools/call counts": initialize and tools/list do not; each app has its own window', async () => {
    nextMinute(app);
    const acc = await app.createAccount({ limits: { mcpCallsPerMinute: 2 } });
    const one = await connectApp(app, acc.id, 'uno');
    const two = await connectApp(app, acc.id, 'dos');
    const client = await mcpClient(app, one.token); // initialize + initialized
    try {
      for (let i = 0; i < 5; i++) expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      for (let i = 0; i < 2; i++) expect((await client.callTool({ name: 'list_templates', arguments: {} })).isError).toBeFalsy();
      expect(await statusOf(client.callTool({ name: 'list_templates', arguments: {} }))).toBe(429);
      // Listing is still served over the cap: it never counted.
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
    expect((await rpc(app, two.token, toolCall(1))).status).toBe(200);
  });

  it('"Tool calls are not REST API calls": they do not count against the request minute cap or the monthly API quota, and work on plans without the API', async () => {
    nextMinute(app);
    const acc = await app.createAccount({ limits: { requestsPerMinute: 2, apiCallsPerMonth: 3 } });
    const { token } = await connectApp(app, acc.id);
    for (let i = 1; i <= 5; i++) expect((await rpc(app, token, toolCall(i))).status).toBe(200);
    const me = await acc.call('GET', '/me');
    expect(me.status).toBe(200);
    expect(me.headers.get('x-ratelimit-remaining')).toBe('1');
    await app.rt.services.usage.flush();
    expect((await app.admin('GET', `/accounts/${acc.id}`)).body.usage.apiCalls).toBe(1);

    // "Available on every plan (free_trial included), unlike the REST API."
    const trial: TestAccount = await app.createAccount({ plan: 'free_trial' });
    expect((await trial.call('GET', '/me')).status).toBe(402);
    const trialApp = await connectApp(app, trial.id);
    const client = await mcpClient(app, trialApp.token);
    try {
      const r = await client.callTool({ name: 'get_account', arguments: {} });
      expect(r.isError).toBeFalsy();
      expect(r.structuredContent).toMatchObject({ id: trial.id, plan: 'free_trial' });
    } finally {
      await client.close();
    }
  });
});

describe('shared state (mcp.md: "Counters are shared across processes (Redis when configured)")', () => {
  const shared = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL);
  it.skipIf(!shared)(
    "two processes on one PostgreSQL + Redis share one app's minute cap, and a disconnection stops the token at both",
    async () => {
      const a1 = await startTestApp();
      const a2 = await startTestApp({ sameDataAs: a1, clock: a1.clock });
      try {
        a1.clock.set(MINUTE);
        const acc = await a1.createAccount({ limits: { mcpCallsPerMinute: 4 } });
        const connected = await connectApp(a1, acc.id);
        for (let i = 0; i < 2; i++) {
          expect((await rpc(a1, connected.token, toolCall(i))).status).toBe(200);
          expect((await rpc(a2, connected.token, toolCall(i))).status).toBe(200);
        }
        expect((await rpc(a2, connected.token, toolCall(5))).status).toBe(429);
        expect((await rpc(a1, connected.token, toolCall(6))).status).toBe(429);
        a1.clock.advance(60_000);
        expect((await rpc(a2, connected.token, toolCall(7))).status).toBe(200);

        expect((await a1.admin('DELETE', `/accounts/${acc.id}/ai-apps/${connected.id}`)).status).toBe(204);
        expect((await rpc(a1, connected.token, toolCall(8))).status).toBe(401);
        expect((await rpc(a2, connected.token, toolCall(9))).status).toBe(401);
      } finally {
        await a2.close();
        await a1.close();
      }
    },
  );
});
