// /mcp answers from a pool of MCP servers shared by every app (src/mcp/exchange.ts): judged from
// outside, many apps calling at once over plain HTTP, each answer must be its own caller's — the
// account it reads, the app its changes are marked with — and the stateless transport's answers
// (one object, an array for a batch, 202 for notifications, 400 for an unknown protocol version)
// are what they were with a server per request. The calls interleave inside the server on
// PostgreSQL (on PGlite a query answers within the same turn, so run this file on both).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPhone, request, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const HEADERS = { accept: 'application/json, text/event-stream' };

/** Connects an AI app to the account; a raw POST /mcp with its token. */
async function connect(acc: TestAccount, name: string) {
  const res = await app.admin('POST', `/accounts/${acc.id}/ai-apps`, { name });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const headers = { ...HEADERS, authorization: `Bearer ${res.body.token}` };
  return {
    id: res.body.id as string,
    name,
    post: (body: unknown, extra: Record<string, string> = {}) => request(`${app.url}/mcp`, 'POST', body, { ...headers, ...extra }),
  };
}

const call = (id: number | string, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

describe('callers never mixed (mcp.md: "every request stands alone"; the tools read the caller of their own request)', () => {
  it('two apps of different accounts calling at once: every answer reads its own account, every contact lands in its own account', async () => {
    const accounts = await Promise.all(
      ['Zapatería Ana', 'Ferretería Beto'].map((name) => app.createAccount({ name, limits: { mcpCallsPerMinute: 1000 } })),
    );
    const apps = await Promise.all(accounts.map((acc, i) => connect(acc, `Asistente ${i}`)));
    const rounds = 12;
    const phones: string[][] = [[], []];
    const answers = await Promise.all(
      Array.from({ length: rounds * 2 }, async (_, n) => {
        const who = n % 2;
        const phone = freshPhone();
        phones[who]!.push(phone);
        // One call alone, and a batch of two, from each app, all in flight together, with the
        // same JSON-RPC ids (clients number their own requests: ids say nothing of who calls).
        const [one, batch] = await Promise.all([
          apps[who]!.post(call(1, 'get_account')),
          apps[who]!.post([call('a', 'get_account'), call('b', 'upsert_contact', { phone, name: `Cliente ${n}` })]),
        ]);
        return { who, n, one, batch };
      }),
    );
    for (const { who, one, batch } of answers) {
      const name = who === 0 ? 'Zapatería Ana' : 'Ferretería Beto';
      expect(one.status, JSON.stringify(one.body)).toBe(200);
      expect(one.body).toMatchObject({ jsonrpc: '2.0', id: 1, result: { structuredContent: { id: accounts[who]!.id, name } } });
      expect(batch.status, JSON.stringify(batch.body)).toBe(200);
      expect(batch.body.map((a: any) => a.id)).toEqual(['a', 'b']);
      expect(batch.body[0].result.structuredContent).toMatchObject({ id: accounts[who]!.id, name });
      expect(batch.body[1].result.isError ?? false, JSON.stringify(batch.body[1])).toBe(false);
    }
    for (const who of [0, 1]) {
      const listed = await accounts[who]!.call('GET', '/contacts?limit=200');
      expect(listed.status).toBe(200);
      const names = listed.body.data.map((c: any) => c.name).filter((n: string) => n.startsWith('Cliente '));
      expect(names).toHaveLength(rounds);
      const mine = answers.filter((a) => a.who === who).map((a) => `Cliente ${a.n}`);
      expect(names.sort()).toEqual(mine.sort());
    }
  });

  it('"Who did it": two apps of one account marking outcomes at once, each case\'s outcomeBy is the app that called', async () => {
    const acc = await app.createAccount({ limits: { mcpCallsPerMinute: 1000 } });
    const pipeline = await app.admin('POST', `/accounts/${acc.id}/pipelines`, {
      name: 'Ventas',
      stages: [
        { name: 'Nuevo', kind: 'open' },
        { name: 'Ganado', kind: 'won' },
      ],
    });
    expect(pipeline.status, JSON.stringify(pipeline.body)).toBe(201);
    for (let i = 0; i < 10; i++) {
      const inbound = await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'Hola, quiero saber precios' });
      expect(inbound.status).toBe(201);
    }
    const cases = await acc.call('GET', `/pipelines/${pipeline.body.id}/cases?limit=200`);
    const caseIds: string[] = cases.body.data.map((c: any) => c.id);
    expect(caseIds).toHaveLength(10);
    const apps = [await connect(acc, 'Claude de Ana'), await connect(acc, 'Cursor de Beto')];
    const answers = await Promise.all(
      caseIds.map((caseId, i) => apps[i % 2]!.post(call(i, 'set_case_outcome', { caseId, result: 'won', amount: 100 + i }))),
    );
    for (const [i, a] of answers.entries()) {
      const by = { type: 'ai_app', id: apps[i % 2]!.id, name: apps[i % 2]!.name };
      expect(a.status, JSON.stringify(a.body)).toBe(200);
      expect(a.body.result.structuredContent).toMatchObject({ id: caseIds[i], outcomeAmount: 100 + i, outcomeBy: by });
      expect((await acc.call('GET', `/cases/${caseIds[i]}`)).body.outcomeBy).toEqual(by);
    }
  });
});

describe('the stateless transport\'s answers (mcp.md "Any client, or plain HTTP")', () => {
  it('one JSON object for a request, an array in order for a batch, 202 with no body for notifications only, 400 for an unknown MCP-Protocol-Version', async () => {
    const acc = await app.createAccount({ limits: { mcpCallsPerMinute: 1000 } });
    const mcp = await connect(acc, 'Inspector');
    const one = await mcp.post({ jsonrpc: '2.0', id: 'x', method: 'tools/list' });
    expect(one.status).toBe(200);
    expect(one.headers.get('content-type')).toContain('application/json');
    expect(one.body).toMatchObject({ jsonrpc: '2.0', id: 'x', result: { tools: expect.any(Array) } });
    const batch = await mcp.post([call(2, 'list_templates'), { jsonrpc: '2.0', method: 'notifications/initialized' }, call(1, 'nope')]);
    expect(batch.status).toBe(200);
    expect(batch.body.map((a: any) => a.id)).toEqual([2, 1]);
    expect(batch.body[0].result.structuredContent).toEqual({ data: [] });
    const notified = await mcp.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(notified.status).toBe(202);
    expect(notified.body).toBeNull();
    const future = await mcp.post(call(3, 'get_account'), { 'mcp-protocol-version': '1999-01-01' });
    expect(future.status).toBe(400);
    expect(future.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
    expect(future.body.error.message).toContain('Unsupported protocol version: 1999-01-01');
    // initialize answers once and leaves nothing behind: another app's call is answered as before it.
    const other = await connect(await app.createAccount({ limits: { mcpCallsPerMinute: 1000 } }), 'Otro');
    const before = await other.post(call(5, 'list_templates'));
    const init = await mcp.post({
      jsonrpc: '2.0',
      id: 4,
      method: 'initialize',
      params: { protocolVersion: '2024-11-05', capabilities: { sampling: {} }, clientInfo: { name: 'viejo', version: '0' } },
    });
    expect(init.status).toBe(200);
    expect(init.body.result).toMatchObject({ protocolVersion: '2024-11-05', serverInfo: { name: 'chasqui' } });
    const after = await other.post(call(5, 'list_templates'));
    expect(after.body).toEqual(before.body);
  });
});
