// The MCP tools (mcp.md "Tools"), judged from outside by the SDK's own client over Streamable
// HTTP against the running app: the tools listed, each result equal to its REST endpoint's JSON,
// isolation between accounts, refusals as isError results with the Spanish text.
import { request as httpRequest } from 'node:http';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textFor } from '../../src/http/messages.es-AR.js';
import { freshPhone, request, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
const clients: Client[] = [];
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await app?.close();
});

const TOOL_NAMES = [
  'get_account',
  'get_case',
  'get_contact',
  'get_conversation_messages',
  'get_message',
  'list_automations',
  'list_campaigns',
  'list_cases',
  'list_contacts',
  'list_conversations',
  'list_pipelines',
  'list_templates',
  'move_case_stage',
  'send_message',
  'set_case_outcome',
  'start_automation',
  'upsert_contact',
];

interface Connected {
  client: Client;
  appId: string;
  appName: string;
  /** Calls a tool; the result as the client got it. */
  call(name: string, args?: Record<string, unknown>): Promise<any>;
}

/** Connects an AI app to the account (operator API) and opens an SDK client with its token. */
async function connectApp(acc: TestAccount, name = 'Asistente de ventas'): Promise<Connected> {
  const res = await app.admin('POST', `/accounts/${acc.id}/ai-apps`, { name });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const client = new Client({ name: 'chasqui-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${res.body.token}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return {
    client,
    appId: res.body.id,
    appName: res.body.name,
    call: (tool, args = {}) => client.callTool({ name: tool, arguments: args }),
  };
}

/** The structured content of a successful call (fails the test with the text of a refusal). */
function ok(r: any): any {
  expect(r.isError ?? false, JSON.stringify(r.content)).toBe(false);
  expect(r.content[0]).toMatchObject({ type: 'text', text: expect.any(String) });
  return r.structuredContent;
}

/** The Spanish text of a refused call. */
function refused(r: any): string {
  expect(r.isError).toBe(true);
  return r.content[0].text;
}

async function rest(acc: TestAccount, method: string, path: string, body?: unknown, status = 200) {
  const r = await acc.call(method, path, body);
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
}

/** A POST through node:http, which sends the Host header it is given (fetch sets its own). */
function rawPost(url: string, body: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const SALES = {
  name: 'Ventas',
  stages: [
    { name: 'Nuevo', kind: 'open' },
    { name: 'Cotizado', kind: 'open' },
    { name: 'Ganado', kind: 'won' },
  ],
};

let templateSeq = 0;
async function template(acc: TestAccount, status = 'APPROVED') {
  templateSeq += 1;
  const res = await app.admin('POST', `/accounts/${acc.id}/templates`, {
    name: `aviso_${templateSeq}`,
    category: 'UTILITY',
    body: 'Hola {{nombre}}, tu pedido está listo.',
    variables: [{ name: 'nombre', label: 'Nombre', example: 'cliente' }],
    status,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** An account with something of everything: a pipeline, a template, a customer who wrote (case, conversation), an automation. */
async function seeded(limits: Record<string, number | null> = {}) {
  // Enough tool calls for a whole test inside one minute window.
  const acc = await app.createAccount({ limits: { mcpCallsPerMinute: 500, ...limits } });
  const pipeline = (await app.admin('POST', `/accounts/${acc.id}/pipelines`, SALES)).body;
  const tpl = await template(acc);
  const phone = freshPhone();
  const inbound = await app.inbound({ accountId: acc.id, from: phone, text: 'Hola, quiero saber precios', name: 'Ana Pérez' });
  expect(inbound.status).toBe(201);
  const cases = await rest(acc, 'GET', `/pipelines/${pipeline.id}/cases`);
  const automation = await app.admin('POST', `/accounts/${acc.id}/automations`, {
    name: 'Aviso',
    status: 'active',
    trigger: { type: 'api' },
    steps: [{ id: 's', type: 'send', text: 'Hola {{nombre}}' }],
  });
  expect(automation.status, JSON.stringify(automation.body)).toBe(201);
  return {
    acc,
    pipeline,
    template: tpl,
    phone,
    contactId: inbound.body.contactId as string,
    conversationId: inbound.body.conversationId as string,
    caseId: cases.data[0].id as string,
    automationId: automation.body.id as string,
  };
}

describe('tools listed (mcp.md "Tools": names in snake_case, descriptions, input schemas from zod)', () => {
  it("tools/list names every tool of mcp.md's table, each with a Spanish description and an object input schema", async () => {
    const acc = await app.createAccount();
    const { client } = await connectApp(acc);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES);
    for (const t of tools) {
      expect(t.description, t.name).toMatch(/[áéíóúñ]|\b(la|los|las|un|una|de)\b/);
      expect(t.inputSchema.type, t.name).toBe('object');
    }
    const send = tools.find((t) => t.name === 'send_message')!;
    expect(Object.keys(send.inputSchema.properties ?? {}).sort()).toEqual(['phoneNumberId', 'template', 'text', 'to']);
    expect(send.inputSchema.required).toEqual(['to']);
    expect(send.annotations?.readOnlyHint).toBe(false);
    expect(tools.find((t) => t.name === 'list_templates')!.annotations?.readOnlyHint).toBe(true);
  });
});

describe('plans (mcp.md: "Available on every plan (free_trial included), unlike the REST API")', () => {
  it('a free_trial account, refused by the REST API (402), reads and sends through its AI app', async () => {
    const acc = await app.createAccount({ plan: 'free_trial' });
    expect((await acc.call('GET', '/templates')).status).toBe(402);
    const mcp = await connectApp(acc);
    expect(ok(await mcp.call('list_templates'))).toEqual({ data: [] });
    const contact = ok(await mcp.call('upsert_contact', { phone: freshPhone(), name: 'Caro' }));
    expect(ok(await mcp.call('get_contact', { id: contact.id }))).toEqual(contact);
  });
});

describe('results equal to REST ("every result carries structuredContent (the same JSON as the REST endpoint)")', () => {
  it('each reading tool gives the JSON of its GET for the same account', async () => {
    const d = await seeded();
    const mcp = await connectApp(d.acc);
    // GET /me first: it counts as an API call; the tool call after it does not.
    const me = await rest(d.acc, 'GET', '/me');
    expect(ok(await mcp.call('get_account'))).toEqual(me);
    expect(ok(await mcp.call('list_templates'))).toEqual(await rest(d.acc, 'GET', '/templates'));
    expect(ok(await mcp.call('list_templates', { status: 'APPROVED' }))).toEqual(await rest(d.acc, 'GET', '/templates?status=APPROVED'));
    expect(ok(await mcp.call('list_contacts', { limit: 1 }))).toEqual(await rest(d.acc, 'GET', '/contacts?limit=1'));
    expect(ok(await mcp.call('get_contact', { id: d.contactId }))).toEqual(await rest(d.acc, 'GET', `/contacts/${d.contactId}`));
    expect(ok(await mcp.call('list_conversations', { contactId: d.contactId }))).toEqual(
      await rest(d.acc, 'GET', `/conversations?contactId=${d.contactId}`),
    );
    const msgs = ok(await mcp.call('get_conversation_messages', { conversationId: d.conversationId }));
    expect(msgs.data).toHaveLength(1);
    expect(msgs).toEqual(await rest(d.acc, 'GET', `/conversations/${d.conversationId}/messages`));
    expect(ok(await mcp.call('get_message', { id: msgs.data[0].id }))).toEqual(await rest(d.acc, 'GET', `/messages/${msgs.data[0].id}`));
    expect(ok(await mcp.call('list_campaigns'))).toEqual(await rest(d.acc, 'GET', '/campaigns'));
    expect(ok(await mcp.call('list_pipelines'))).toEqual(await rest(d.acc, 'GET', '/pipelines'));
    const cases = ok(await mcp.call('list_cases', { pipelineId: d.pipeline.id, status: 'open', limit: 10 }));
    expect(cases.data).toHaveLength(1);
    expect(cases).toEqual(await rest(d.acc, 'GET', `/pipelines/${d.pipeline.id}/cases?status=open&limit=10`));
    expect(ok(await mcp.call('get_case', { id: d.caseId }))).toEqual(await rest(d.acc, 'GET', `/cases/${d.caseId}`));
    expect(ok(await mcp.call('list_automations'))).toEqual(await rest(d.acc, 'GET', '/automations'));
  });

  it('each changing tool answers what its endpoint would, and the change is marked by the app ({type: "ai_app", id, name}, outcomeSource "api")', async () => {
    const d = await seeded();
    const mcp = await connectApp(d.acc, 'Claude de Ana');
    const by = { type: 'ai_app', id: mcp.appId, name: 'Claude de Ana' };

    const created = ok(
      await mcp.call('upsert_contact', { phone: freshPhone({ spelling: 'spaced' }), name: 'Beto', attributes: { ciudad: 'Rosario' } }),
    );
    expect(created).toMatchObject({ name: 'Beto', attributes: { ciudad: 'Rosario' } });
    expect(created).toEqual(await rest(d.acc, 'GET', `/contacts/${created.id}`));
    const [event] = (await app.events(d.acc.id, 'contact.created')).filter((e) => e.data.contact.id === created.id);
    expect(event?.data.source).toBe('api');
    const updated = ok(await mcp.call('upsert_contact', { phone: created.phone, attributes: { plan: 'oro' } }));
    expect(updated.attributes).toEqual({ ciudad: 'Rosario', plan: 'oro' });

    const text = ok(await mcp.call('send_message', { to: d.phone, text: 'Hola Ana, te paso los precios.' }));
    expect(text).toMatchObject({ status: 'sent', direction: 'outbound', type: 'text', text: 'Hola Ana, te paso los precios.' });
    expect(text).toEqual(await rest(d.acc, 'GET', `/messages/${text.id}`));
    // In its conversation the message says which app sent it.
    const inConversation = (await rest(d.acc, 'GET', `/conversations/${text.conversationId}/messages?limit=100`)).data.find(
      (m: any) => m.id === text.id,
    );
    expect(inConversation).toMatchObject({ from: 'api', by: { type: 'ai_app', id: expect.any(String), name: expect.any(String) } });
    const byTemplate = ok(
      await mcp.call('send_message', { to: created.phone, template: { id: d.template.id, variables: { nombre: 'Beto' } } }),
    );
    expect(byTemplate).toMatchObject({ status: 'sent', type: 'template', template: { id: d.template.id, variables: { nombre: 'Beto' } } });
    expect(byTemplate).toEqual(await rest(d.acc, 'GET', `/messages/${byTemplate.id}`));

    const quoted = d.pipeline.stages.find((s: any) => s.name === 'Cotizado');
    const moved = ok(await mcp.call('move_case_stage', { caseId: d.caseId, stageId: quoted.id }));
    expect(moved.stage.stage).toMatchObject({ id: quoted.id, name: 'Cotizado' });
    expect(moved).toEqual(await rest(d.acc, 'GET', `/cases/${d.caseId}`));

    const outcome = ok(
      await mcp.call('set_case_outcome', { caseId: d.caseId, result: 'won', amount: 1500, currency: 'ars', externalId: 'P-77' }),
    );
    expect(outcome).toMatchObject({ outcome: 'won', outcomeAmount: 1500, outcomeCurrency: 'ARS', outcomeSource: 'api', outcomeBy: by });
    expect(outcome).toEqual(await rest(d.acc, 'GET', `/cases/${d.caseId}`));
    const [outcomeEvent] = await app.events(d.acc.id, 'case.outcome');
    expect(JSON.stringify(outcomeEvent?.data)).toContain(mcp.appId);

    const won = d.pipeline.stages.find((s: any) => s.kind === 'won');
    const closed = ok(await mcp.call('move_case_stage', { caseId: d.caseId, stageId: won.id, amount: 1500 }));
    expect(closed).toMatchObject({ status: 'closed', closeReason: 'stage', closedBy: by });

    const started = ok(await mcp.call('start_automation', { automationId: d.automationId, to: d.phone, variables: { nombre: 'Ana' } }));
    expect(started).toMatchObject({ automationId: d.automationId, status: 'completed' });
    expect(started).toEqual(await rest(d.acc, 'GET', `/automations/${d.automationId}/executions/${started.id}`));
  });
});

describe('isolation between accounts ("Same rules as the REST endpoints (… 404 across accounts)")', () => {
  it("another account's ids answer isError with the Spanish not-found text, and its lists show nothing of it", async () => {
    const theirs = await seeded();
    const mine = await app.createAccount({ limits: { mcpCallsPerMinute: 500 } });
    const mcp = await connectApp(mine);
    const theirMessage = (await rest(theirs.acc, 'GET', `/conversations/${theirs.conversationId}/messages`)).data[0];
    const stage = theirs.pipeline.stages[1];
    const cases: [string, Record<string, unknown>, string][] = [
      ['get_contact', { id: theirs.contactId }, textFor('contact_not_found')],
      ['get_message', { id: theirMessage.id }, textFor('message_not_found')],
      ['get_conversation_messages', { conversationId: theirs.conversationId }, textFor('conversation_not_found')],
      ['list_cases', { pipelineId: theirs.pipeline.id }, textFor('pipeline_not_found')],
      ['get_case', { id: theirs.caseId }, textFor('case_not_found')],
      ['set_case_outcome', { caseId: theirs.caseId, result: 'lost' }, textFor('case_not_found')],
      ['move_case_stage', { caseId: theirs.caseId, stageId: stage.id }, textFor('case_not_found')],
      ['start_automation', { automationId: theirs.automationId, to: theirs.phone }, textFor('automation_not_found')],
      ['send_message', { to: freshPhone(), template: { id: theirs.template.id } }, textFor('template_not_found')],
    ];
    for (const [tool, args, text] of cases) expect(refused(await mcp.call(tool, args)), tool).toBe(text);
    for (const tool of ['list_templates', 'list_pipelines', 'list_automations', 'list_conversations', 'list_contacts']) {
      expect(ok(await mcp.call(tool)).data, tool).toEqual([]);
    }
    // Nothing of theirs changed.
    expect((await rest(theirs.acc, 'GET', `/cases/${theirs.caseId}`)).outcome).toBeNull();
  });
});

describe('refusals as isError ("A refused call is a tool result with isError: true and the Spanish error text, never a JSON-RPC error")', () => {
  it('free text outside the 24-hour window: the window_closed text', async () => {
    const acc = await app.createAccount();
    const mcp = await connectApp(acc);
    const r = await mcp.call('send_message', { to: freshPhone(), text: 'Hola' });
    expect(refused(r)).toBe(textFor('window_closed'));
    expect(r.structuredContent).toEqual({ error: textFor('window_closed'), cause: null });
  });

  it('a template that is not approved: the template_not_approved text', async () => {
    const acc = await app.createAccount();
    const pending = await template(acc, 'PENDING');
    const mcp = await connectApp(acc);
    const r = await mcp.call('send_message', { to: freshPhone(), template: { id: pending.id } });
    expect(refused(r)).toBe(textFor('template_not_approved', { name: pending.name, status: 'PENDING' }));
  });

  it("the plan's contact limit: the contact_limit text with the upgrade cause", async () => {
    const acc = await app.createAccount({ limits: { contacts: 1 } });
    const mcp = await connectApp(acc);
    ok(await mcp.call('upsert_contact', { phone: freshPhone() }));
    const r = await mcp.call('upsert_contact', { phone: freshPhone() });
    expect(refused(r)).toBe(textFor('contact_limit', { limit: 1 }));
    expect(r.structuredContent.cause).toMatchObject({ type: 'upgrade', reason: 'limit', resource: 'contacts', limit: 1 });
    expect((await rest(acc, 'GET', '/contacts')).data).toHaveLength(1);
  });

  it('arguments that break the input schema: a Spanish text naming the field, as a REST 400 does', async () => {
    const acc = await app.createAccount();
    const mcp = await connectApp(acc);
    const r = await mcp.call('get_case', { id: 'no-es-un-id' });
    expect(refused(r)).toBe(textFor('mcp_invalid_arguments', { problems: 'id: Tiene que ser un UUID.' }));
    const both = await mcp.call('send_message', {
      to: freshPhone(),
      text: 'Hola',
      template: { id: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e' },
    });
    expect(refused(both)).toContain(textFor('send_not_both'));
    expect(refused(await mcp.call('list_contacts', { limit: 500 }))).toContain('limit: Tiene que ser menor o igual a 200.');
  });

  it("send_message and start_automation count against the account's message minute cap (the 429 there is a tool error)", async () => {
    const d = await seeded({ messagesPerMinute: 1 });
    const mcp = await connectApp(d.acc);
    ok(await mcp.call('send_message', { to: d.phone, text: 'Uno' }));
    const capped = textFor('rate_limited_messages', { limit: 1 });
    expect(refused(await mcp.call('send_message', { to: d.phone, text: 'Dos' }))).toBe(capped);
    expect(refused(await mcp.call('start_automation', { automationId: d.automationId, to: d.phone }))).toBe(capped);
    // Reads are not messages.
    ok(await mcp.call('list_templates'));
    const sent = (await rest(d.acc, 'GET', `/conversations/${d.conversationId}/messages`)).data.filter((m: any) => m.from !== 'contact');
    expect(sent).toHaveLength(1);
  });
});

describe('the /mcp route (mcp.md "Transport": POST; GET may answer 405 in stateless mode; DNS rebinding)', () => {
  it('"Only tools/call counts": a JSON-RPC batch\'s calls count together; the one that would pass the cap answers 429 with its id, and nothing is counted', async () => {
    const acc = await app.createAccount({ limits: { mcpCallsPerMinute: 2 } });
    const connected = await app.admin('POST', `/accounts/${acc.id}/ai-apps`, { name: 'Lote' });
    expect(connected.status).toBe(201);
    const headers = {
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${connected.body.token}`,
      'mcp-protocol-version': '2025-06-18',
    };
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_templates', arguments: {} } });
    const batch = await request(
      `${app.url}/mcp`,
      'POST',
      [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }, call(2), call(3), call(4)],
      headers,
    );
    expect(batch.status).toBe(429);
    expect(batch.headers.get('retry-after')).toBe('60');
    expect(batch.body).toEqual({
      jsonrpc: '2.0',
      id: 4,
      error: { code: -32000, message: textFor('mcp_rate_limited', { limit: 2 }) },
    });
    // "A refused call counts nothing": the window still holds two calls; the third is over.
    expect((await request(`${app.url}/mcp`, 'POST', call(5), headers)).status).toBe(200);
    expect((await request(`${app.url}/mcp`, 'POST', call(6), headers)).status).toBe(200);
    expect((await request(`${app.url}/mcp`, 'POST', call(7), headers)).status).toBe(429);
    const list = await request(`${app.url}/mcp`, 'POST', { jsonrpc: '2.0', id: 8, method: 'tools/list' }, headers);
    expect(list.status).toBe(200);
    expect(list.body.result.tools).toHaveLength(TOOL_NAMES.length);
  });

  it('GET and DELETE /mcp answer 405 with Allow: POST in the error shape', async () => {
    for (const method of ['GET', 'DELETE']) {
      const r = await request(`${app.url}/mcp`, method);
      expect(r.status).toBe(405);
      expect(r.headers.get('allow')).toBe('POST');
      expect(r.body).toEqual({ error: textFor('method_not_allowed'), cause: null });
    }
  });

  it('a browser page of another site (Origin) or another host name (Host) is refused with 403 before the token is read', async () => {
    const body = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
    const accept = { accept: 'application/json, text/event-stream' };
    const fromPage = await request(`${app.url}/mcp`, 'POST', body, { ...accept, origin: 'https://evil.example' });
    expect(fromPage.status).toBe(403);
    expect(fromPage.body).toEqual({ error: textFor('mcp_origin_refused'), cause: null });
    const rebound = await rawPost(`${app.url}/mcp`, JSON.stringify(body), {
      ...accept,
      'content-type': 'application/json',
      host: 'attacker.example',
    });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.text)).toEqual({ error: textFor('mcp_host_refused'), cause: null });
  });
});
