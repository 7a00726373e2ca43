// Issue 25 item 5, "Doors outside the guard pipeline": one guard pipeline (IP block → credential →
// plan → caps) for every authenticated door — /api/v1 (API key), /mcp (AI app token) and
// /hooks/automations/{token} (hook token). Failed app tokens and wrong hook tokens count toward the
// IP block like invalid keys, and a blocked IP is refused on every door; /mcp answers malformed
// JSON, oversized bodies and bodies that are no JSON-RPC request with JSON-RPC errors; a flow with
// a literal private URL is refused at save when the private-address guard is on.
// TRUST_PROXY is on, so each test is a caller of its own (the first X-Forwarded-For hop).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFlow } from '../automations.js';
import { request, startTestApp, type TestAccount, type TestApp } from '../harness.js';

const MINUTE = Date.parse('2026-05-12T15:04:00.000Z');

let app: TestApp;
let acct: TestAccount;
let appToken: string;
beforeAll(async () => {
  // The private-address guard on (production's default), as for webhooks.
  app = await startTestApp({ env: { TRUST_PROXY: '1', ALLOW_PRIVATE_WEBHOOKS: 'off' } });
  app.clock.set(MINUTE);
  acct = await app.createAccount();
  const connected = await app.admin('POST', `/accounts/${acct.id}/ai-apps`, { name: 'Claude de Laura' });
  expect(connected.status).toBe(201);
  appToken = connected.body.token;
});
afterAll(async () => {
  await app?.close();
});

let ipCounter = 0;
/** A caller of its own: an address no other test uses. */
const freshIp = () => ({ 'x-forwarded-for': `203.0.113.${++ipCounter}` });

const MCP_HEADERS = { accept: 'application/json, text/event-stream' };

/** A raw POST /mcp: the body text as given (malformed JSON included). */
const mcpRaw = (token: string | null, body: string, headers: Record<string, string> = {}) =>
  request(`${app.url}/mcp`, 'POST', body, {
    ...MCP_HEADERS,
    'content-type': 'application/json',
    ...(token ? { authorization: `Bearer ${token}` } : {}),
    ...headers,
  });

const toolCall = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_account', arguments: {} } });
const hook = (token: string, body: unknown, headers: Record<string, string>) =>
  request(`${app.url}/hooks/automations/${token}`, 'POST', body, headers);

describe('"failed app tokens and wrong hook tokens count toward the IP block, and a blocked IP is refused on /mcp"', () => {
  it('21 wrong app tokens on /mcp from one IP, then a valid one → 429 ip_blocked (a JSON-RPC error; the 401s keep their WWW-Authenticate)', async () => {
    const ip = freshIp();
    for (let i = 0; i < 20; i++) {
      const r = await mcpRaw(i % 2 ? `etk_app_${'x'.repeat(40)}` : null, JSON.stringify(toolCall(i)), ip);
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata="/);
    }
    const blocking = await mcpRaw(`etk_app_${'y'.repeat(40)}`, JSON.stringify(toolCall(20)), ip);
    expect(blocking.status).toBe(429);
    const valid = await mcpRaw(appToken, JSON.stringify(toolCall(21)), ip);
    expect(valid.status).toBe(429);
    expect(valid.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32000, message: expect.stringMatching(/claves inválidas/) } });
    // The same IP is blocked on /api/v1 too (one counter for every door).
    const api = await acct.call('GET', '/me', undefined, ip);
    expect(api.status).toBe(429);
    expect(api.body.error).toMatch(/claves inválidas/);
    // Another caller is not.
    expect((await mcpRaw(appToken, JSON.stringify(toolCall(22)), freshIp())).status).toBe(200);
  });

  it('wrong hook tokens count likewise: the 21st blocks the IP, on the hook door and on /api/v1 and /mcp', async () => {
    const flow = await createFlow(app, acct, {
      name: 'Pedido',
      trigger: { type: 'webhook' },
      steps: [{ id: 'fin', type: 'end' }],
    });
    const token = (flow.webhookUrl as string).split('/').pop() as string;
    const ip = freshIp();
    for (let i = 0; i < 20; i++) expect((await hook(`${'A'.repeat(42)}${i % 10}`, { phone: '+5491155550000' }, ip)).status).toBe(404);
    expect((await hook('B'.repeat(43), { phone: '+5491155550000' }, ip)).status).toBe(429);
    const blocked = await hook(token, { phone: '+5491155550000' }, ip);
    expect(blocked.status).toBe(429);
    expect(blocked.body).toEqual({ error: expect.stringMatching(/claves inválidas/), cause: null });
    expect((await acct.call('GET', '/me', undefined, ip)).status).toBe(429);
    expect((await mcpRaw(appToken, JSON.stringify(toolCall(1)), ip)).status).toBe(429);
  });

  it('invalid API keys on /api/v1 block the IP on /mcp and on the hook door', async () => {
    const ip = freshIp();
    for (let i = 0; i < 21; i++) await app.api(null, 'GET', '/me', undefined, ip);
    const mcp = await mcpRaw(appToken, JSON.stringify(toolCall(1)), ip);
    expect(mcp.status).toBe(429);
    expect(mcp.body.error.code).toBe(-32000);
    expect((await hook('C'.repeat(43), { phone: '+5491155550000' }, ip)).status).toBe(429);
  });
});

describe('"malformed JSON, oversized bodies and empty batches on /mcp answer JSON-RPC errors (-32700, -32600)"', () => {
  const rpcError = (code: number) => ({ jsonrpc: '2.0', id: null, error: { code, message: expect.any(String) } });

  it('malformed JSON (or none) → HTTP 400, JSON-RPC -32700 (Parse error)', async () => {
    for (const text of ['{"jsonrpc": "2.0", "id": 1, "method": ', '{', 'nope']) {
      const r = await mcpRaw(appToken, text, freshIp());
      expect(r.status, text).toBe(400);
      expect(r.body).toEqual(rpcError(-32700));
    }
    // A body-less POST (Content-Length: 0) holds no JSON either.
    const empty = await request(`${app.url}/mcp`, 'POST', undefined, { ...MCP_HEADERS, authorization: `Bearer ${appToken}`, ...freshIp() });
    expect(empty.status).toBe(400);
    expect(empty.body).toEqual(rpcError(-32700));
  });

  it('an empty batch [] → HTTP 400, JSON-RPC -32600 (Invalid Request)', async () => {
    const r = await mcpRaw(appToken, '[]', freshIp());
    expect(r.status).toBe(400);
    expect(r.body).toEqual(rpcError(-32600));
  });

  it('a body that is no JSON-RPC request or batch → HTTP 400, JSON-RPC -32600', async () => {
    for (const body of [
      '{}',
      '42',
      '"hola"',
      'null',
      '{"jsonrpc":"1.0","id":1,"method":"tools/list"}',
      '[1, 2]',
      `[${JSON.stringify(toolCall(1))}, {"x": 1}]`,
    ]) {
      const r = await mcpRaw(appToken, body, freshIp());
      expect(r.status, body).toBe(400);
      expect(r.body, body).toEqual(rpcError(-32600));
    }
  });

  it('JSON with text that cannot be stored (a NUL) → HTTP 400, JSON-RPC -32600 naming the field', async () => {
    const body = JSON.stringify({ ...toolCall(1), params: { name: 'get_account', arguments: { x: 'a\u0000b' } } });
    const r = await mcpRaw(appToken, body, freshIp());
    expect(r.status).toBe(400);
    expect(r.body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: expect.stringMatching(/^params\.arguments\.x: /) },
    });
  });

  it('an oversized body (over 1 MiB) → HTTP 413 with a JSON-RPC error, never the REST shape or a 500', async () => {
    const big = JSON.stringify({ ...toolCall(1), params: { name: 'get_account', arguments: { x: 'a'.repeat(1024 * 1024 + 10) } } });
    const r = await mcpRaw(appToken, big, freshIp());
    expect(r.status).toBe(413);
    expect(r.body).toEqual(rpcError(-32000));
  });

  it('a body that is not JSON (text/plain) → HTTP 415 with a JSON-RPC error', async () => {
    const r = await mcpRaw(appToken, JSON.stringify(toolCall(1)), { ...freshIp(), 'content-type': 'text/plain' });
    expect(r.status).toBe(415);
    expect(r.body).toEqual(rpcError(-32000));
  });

  it('authentication comes before the body: a malformed body without a token is a 401', async () => {
    const r = await mcpRaw(null, '{', freshIp());
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata="/);
  });

  it('a valid batch still works', async () => {
    const r = await mcpRaw(appToken, JSON.stringify([toolCall(1), toolCall(2)]), freshIp());
    expect(r.status).toBe(200);
    expect((r.body as { id: number }[]).map((m) => m.id).sort()).toEqual([1, 2]);
  });
});

describe('"with the private-address guard on, a flow saved with a literal private URL is refused at save, as a webhook URL is"', () => {
  const httpFlow = (url: string) => ({
    name: 'Consulta',
    trigger: { type: 'api' },
    steps: [
      { id: 'saludo', type: 'send', text: 'Hola' },
      { id: 'consulta', type: 'http', method: 'GET', url },
    ],
  });

  it('loopback, private and link-local literals (IPv4 and IPv6) → 400 at steps.1.url', async () => {
    for (const url of [
      'http://127.0.0.1/',
      'http://[::1]/',
      'http://10.0.0.5/pedidos/{{pedido}}',
      'http://169.254.169.254/latest/meta-data',
      'https://192.168.1.10:8443/x',
      'http://[fe80::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://0x7f.0.0.1/',
    ]) {
      const r = await app.admin('POST', `/accounts/${acct.id}/automations`, httpFlow(url));
      expect(r.status, url).toBe(400);
      const problems = JSON.parse(r.body.error.message);
      expect(problems, url).toEqual([{ path: ['steps', 1, 'url'], message: expect.stringMatching(/dirección privada o local/) }]);
    }
  });

  it('a PATCH that puts one in is refused too; public hosts and URLs starting with {{{var}}} are saved (checked when the step runs)', async () => {
    const ok = await app.admin('POST', `/accounts/${acct.id}/automations`, httpFlow('https://93.184.216.34/x'));
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    const patched = await app.admin('PATCH', `/accounts/${acct.id}/automations/${ok.body.id}`, {
      steps: httpFlow('http://[::1]:8080/').steps,
    });
    expect(patched.status).toBe(400);
    expect(JSON.parse(patched.body.error.message)[0].path).toEqual(['steps', 1, 'url']);
    const templated = await app.admin('POST', `/accounts/${acct.id}/automations`, httpFlow('{{{base}}}/api'));
    expect(templated.status).toBe(201);
  });
});
