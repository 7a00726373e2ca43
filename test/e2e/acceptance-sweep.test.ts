// Acceptance sweep: calls the endpoints exactly as api.md, decisions.md and operator.md write
// them. Each test is a defect the sweep found (named after the rule it proves), or a contract
// shape an external suite will check field by field.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, freshPhone, request, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const DAY = 24 * 60 * 60 * 1000;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
let seq = 0;

const events = async (accountId: string, kind: string) => (await app.events(accountId, kind)).map((e) => e.data);

async function approvedTemplate(acc: TestAccount, category = 'UTILITY') {
  seq += 1;
  const res = await app.admin('POST', `/accounts/${acc.id}/templates`, {
    name: `sweep_${seq}`,
    category,
    body: 'Hola {{nombre}}',
    variables: [{ name: 'nombre', label: 'Nombre', example: 'Ana' }],
    status: 'APPROVED',
  });
  expect(res.status).toBe(201);
  return res.body as { id: string };
}

/** An operator POST with `Content-Type: application/json` and an empty body, as many HTTP clients send it. */
const emptyJsonPost = (path: string) =>
  request(`${app.url}/admin/v1${path}`, 'POST', undefined, {
    authorization: `Bearer ${ADMIN_TOKEN}`,
    'content-type': 'application/json',
  });

/** An operator POST with no body and no Content-Type at all. */
const barePost = (path: string) => request(`${app.url}/admin/v1${path}`, 'POST', undefined, { authorization: `Bearer ${ADMIN_TOKEN}` });

async function openCase(acc: TestAccount): Promise<string> {
  const p = await app.admin('POST', `/accounts/${acc.id}/pipelines`, {
    name: 'Ventas',
    stages: [
      { name: 'Nuevo', kind: 'open' },
      { name: 'Ganado', kind: 'won' },
    ],
  });
  expect(p.status).toBe(201);
  const wrote = await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'Hola' });
  expect(wrote.status).toBe(201);
  const list = await acc.call('GET', `/pipelines/${p.body.id}/cases`);
  expect(list.body.data).toHaveLength(1);
  return list.body.data[0].id as string;
}

describe('operator.md: bodies written as optional are optional', () => {
  it('"POST /admin/v1/accounts/{id}/cases/{caseId}/close {by?: {id, name}} → closeReason manual" with no body at all', async () => {
    const acc = await app.createAccount();
    const caseId = await openCase(acc);
    const res = await barePost(`/accounts/${acc.id}/cases/${caseId}/close`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: caseId, status: 'closed', closeReason: 'manual', closedBy: null });
    expect(res.body.closedAt).toMatch(ISO_MS);
  });

  it('an empty body sent as application/json is no body: jobs/{name}/run, cases/{caseId}/close, campaigns/{cid}/cancel', async () => {
    const job = await emptyJsonPost('/jobs/case-timeouts/run');
    expect(job.status).toBe(200);
    expect(job.body).toEqual({ ran: 'case-timeouts', changed: expect.any(Number) });

    const acc = await app.createAccount();
    const caseId = await openCase(acc);
    const closed = await emptyJsonPost(`/accounts/${acc.id}/cases/${caseId}/close`);
    expect(closed.status).toBe(200);
    expect(closed.body).toMatchObject({ status: 'closed', closeReason: 'manual' });

    const t = await approvedTemplate(acc);
    const later = new Date(app.clock.now().getTime() + DAY).toISOString();
    const c = await app.admin('POST', `/accounts/${acc.id}/campaigns`, { name: 'Mañana', templateId: t.id, scheduledAt: later });
    expect(c.status).toBe(201);
    const cancelled = await emptyJsonPost(`/accounts/${acc.id}/campaigns/${c.body.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
  });

  it('a DELETE with `Content-Type: application/json` and no body (curl -X DELETE -H … without -d) is no body, not malformed JSON', async () => {
    const acc = await app.createAccount();
    const key = await app.admin('POST', `/accounts/${acc.id}/keys`, { name: 'ERP' });
    // Sent as curl sends it: no Content-Length and no Transfer-Encoding (node:http's default for DELETE).
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${app.url}/admin/v1/accounts/${acc.id}/keys/${key.body.id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(204);
  });

  it('a body that is really malformed JSON still answers 400 (decisions.md "malformed JSON → 400")', async () => {
    const res = await request(`${app.url}/admin/v1/jobs/case-timeouts/run`, 'POST', '{"x": ', {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      'content-type': 'application/json',
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringMatching(/JSON/), cause: null });
  });
});

describe('POST /messages phoneNumberId (api.md §4, §7)', () => {
  it('"409 — no connected number with the given phoneNumberId" for any id the account does not have, UUID or not', async () => {
    const acc = await app.createAccount();
    const t = await approvedTemplate(acc);
    for (const phoneNumberId of ['123456789012345', 'principal', '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e']) {
      const res = await acc.call('POST', '/messages', { to: freshPhone(), template: { id: t.id }, phoneNumberId });
      expect(res.status, phoneNumberId).toBe(409);
      expect(res.body).toEqual({ error: expect.stringMatching(/phoneNumberId/), cause: null });
    }
    // The account's own id still sends; a non-string is a validation error.
    expect(
      (await acc.call('POST', '/messages', { to: freshPhone(), template: { id: t.id }, phoneNumberId: acc.phoneNumberId })).status,
    ).toBe(201);
    const bad = await acc.call('POST', '/messages', { to: freshPhone(), template: { id: t.id }, phoneNumberId: 42 });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body.error.message)[0].path).toEqual(['phoneNumberId']);
  });
});

describe('phone numbers (operator.md "the first one is the default"; decisions.md GET /me phoneNumbers)', () => {
  it('an account with numbers always has exactly one default: PATCH {default: false} on the default → 400, it stays default', async () => {
    const acc = await app.createAccount();
    const res = await app.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${acc.phoneNumberId}`, { default: false });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body.error.message)[0].path).toEqual(['default']);
    const me = await acc.call('GET', '/me');
    expect(me.body.phoneNumbers.filter((p: any) => p.default)).toHaveLength(1);
    // {default: false} on a number that is not the default changes nothing and is fine.
    const second = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone: freshPhone() });
    const ok = await app.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${second.body.id}`, { default: false });
    expect(ok.status).toBe(200);
    expect(ok.body.default).toBe(false);
  });
});

describe('sandbox inbound (operator.md "timestamp defaults to now and may be in the past")', () => {
  it('timestamp as unix seconds (the channel’s own form) or milliseconds is accepted like the ISO form', async () => {
    const acc = await app.createAccount();
    const now = app.clock.now().getTime();
    const secs = Math.floor((now - 2 * 3600_000) / 1000);
    const a = await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'hola', timestamp: secs });
    expect(a.status).toBe(201);
    const b = await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'hola', timestamp: now - 3600_000 });
    expect(b.status).toBe(201);
    const received = await events(acc.id, 'message.received');
    expect(received.map((e) => e.timestamp)).toEqual([new Date(secs * 1000).toISOString(), new Date(now - 3600_000).toISOString()]);
    expect((await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'hola', timestamp: 'ayer' })).status).toBe(400);
    expect((await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'hola', timestamp: now + 3600_000 })).status).toBe(400);
  });
});

describe('sandbox inbound wamid (operator.md "It runs the real inbound path")', () => {
  it('a wamid another account already used answers 409 in the error body, never 500; the same account gets the duplicate', async () => {
    const a = await app.createAccount();
    const b = await app.createAccount();
    const wamid = `wamid.SWEEPSHARED${Date.now()}`;
    const first = await app.inbound({ accountId: a.id, from: freshPhone(), text: 'hola', wamid });
    expect(first.status).toBe(201);
    const again = await app.inbound({ accountId: a.id, from: freshPhone(), text: 'hola', wamid });
    expect(again.body).toMatchObject({ messageId: first.body.messageId, duplicate: true });
    const other = await app.inbound({ accountId: b.id, from: freshPhone(), text: 'hola', wamid });
    expect(other.status).toBe(409);
    expect(other.body).toEqual({ error: expect.stringMatching(/wamid/), cause: null });
    // An outbound message's wamid is not a customer's message either.
    const t = await approvedTemplate(a);
    const sent = await a.call('POST', '/messages', { to: freshPhone(), template: { id: t.id } });
    expect(sent.status).toBe(201);
    const clash = await app.inbound({ accountId: a.id, from: freshPhone(), text: 'hola', wamid: sent.body.wamid });
    expect(clash.status).toBe(409);
    expect(await events(b.id, 'message.received')).toEqual([]);
  });
});

describe('Campaign (api.md §2: "scheduledAt, startedAt, completedAt — timestamps")', () => {
  it('a campaign that starts at once is scheduled for its creation time, so a completed one has all three timestamps', async () => {
    const acc = await app.createAccount();
    const t = await approvedTemplate(acc);
    expect((await acc.call('POST', '/contacts', { phone: freshPhone(), attributes: { sweep: 'si' } })).status).toBe(201);
    const c = await app.admin('POST', `/accounts/${acc.id}/campaigns`, {
      name: 'Ya',
      templateId: t.id,
      audience: { attributes: { sweep: 'si' } },
    });
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({
      status: 'sending',
      scheduledAt: app.clock.now().toISOString(),
      startedAt: app.clock.now().toISOString(),
    });
    expect((await app.admin('POST', '/jobs/campaigns/run')).status).toBe(200);
    const done = (await acc.call('GET', '/campaigns')).body.data.find((x: any) => x.id === c.body.id);
    expect(done.status).toBe('completed');
    for (const k of ['scheduledAt', 'startedAt', 'completedAt']) expect(done[k], k).toMatch(ISO_MS);
    const [ev] = await events(acc.id, 'campaign.completed');
    expect(ev).toEqual(done);
  });
});

describe('early status reports are not kept forever (docs/decisions.md "Messages and channel")', () => {
  it('the case-timeouts job deletes early_statuses older than 7 days; younger ones stay; `changed` counts only cases', async () => {
    const db = app.rt.services.db;
    const old = `wamid.SWEEPOLD${Date.now()}`;
    const young = `wamid.SWEEPYOUNG${Date.now()}`;
    expect((await app.admin('POST', '/sandbox/status', { wamid: old, status: 'delivered' })).body).toMatchObject({ early: true });
    app.clock.advance(6 * DAY);
    expect((await app.admin('POST', '/sandbox/status', { wamid: young, status: 'read' })).body).toMatchObject({ early: true });
    app.clock.advance(DAY + 1);
    // Nothing else is due for this app's cases at this instant except what other tests left: run once to settle.
    await app.admin('POST', '/jobs/case-timeouts/run');
    const left = (await db.selectFrom('early_statuses').select('wamid').where('wamid', 'in', [old, young]).execute()).map((r) => r.wamid);
    expect(left).toEqual([young]);
    app.clock.advance(6 * DAY);
    const run = await app.admin('POST', '/jobs/case-timeouts/run');
    expect(run.body).toEqual({ ran: 'case-timeouts', changed: 0 });
    expect(await db.selectFrom('early_statuses').select('wamid').where('wamid', 'in', [old, young]).execute()).toEqual([]);
  });
});

describe('contract shapes an external suite checks key by key', () => {
  it('GET /me: {id, name, plan, createdAt, limits, usage, phoneNumbers} with every limits and usage key (decisions.md "GET /me")', async () => {
    const acc = await app.createAccount({ name: 'Forma' });
    const me = await acc.call('GET', '/me');
    expect(me.status).toBe(200);
    expect(Object.keys(me.body).sort()).toEqual(['createdAt', 'id', 'limits', 'name', 'phoneNumbers', 'plan', 'usage']);
    expect(me.body).toMatchObject({ id: acc.id, name: 'Forma', plan: 'escala' });
    expect(me.body.createdAt).toMatch(ISO_MS);
    expect(Object.keys(me.body.limits).sort()).toEqual(
      [
        'requestsPerMinute',
        'messagesPerMinute',
        'apiCallsPerMonth',
        'webhookDeliveriesPerMonth',
        'apiKeys',
        'webhookUrls',
        'contacts',
        'automationStepsPerMonth',
        'automationHttpRequestsPerMonth',
        'aiApps',
        'mcpCallsPerMinute',
      ].sort(),
    );
    expect(Object.keys(me.body.usage).sort()).toEqual(
      // aiApps: the AI apps connected now (mcp.md "`GET /me` `usage` shows `aiApps` connected").
      ['period', 'apiCalls', 'webhookDeliveries', 'contacts', 'automationSteps', 'automationHttpRequests', 'aiApps'].sort(),
    );
    expect(me.body.usage.period.start).toMatch(ISO_MS);
    expect(me.body.usage.period.end).toMatch(ISO_MS);
    expect(me.body.phoneNumbers).toEqual([
      // throughputPerSecond: the number's tier (docs/decisions.md "Throughput tier in GET /me").
      {
        id: acc.phoneNumberId,
        phone: acc.phone,
        name: 'Principal',
        provider: 'sandbox',
        status: 'connected',
        default: true,
        throughputPerSecond: 80,
      },
    ]);
    const enterprise = await app.createAccount({ plan: 'enterprise' });
    const unlimited = (await enterprise.call('GET', '/me')).body.limits;
    expect(unlimited).toMatchObject({ apiCallsPerMonth: null, webhookDeliveriesPerMonth: null, contacts: null, requestsPerMinute: 1200 });
  });

  it('the Message record of decisions.md on POST /messages 201 and GET /messages/{id}', async () => {
    const acc = await app.createAccount();
    const to = freshPhone();
    expect((await app.inbound({ accountId: acc.id, from: to, text: 'hola' })).status).toBe(201);
    const res = await acc.call('POST', '/messages', { to, text: 'Hola, ¿en qué te ayudo?' });
    expect(res.status).toBe(201);
    for (const k of [
      'id',
      'wamid',
      'status',
      'to',
      'contactId',
      'conversationId',
      'phoneNumberId',
      'type',
      'text',
      'campaignId',
      'code',
      'error',
      'createdAt',
      'updatedAt',
      'statusTimes',
    ]) {
      expect(res.body, k).toHaveProperty(k);
    }
    expect(res.body.to).toBe(to.replace(/\D/g, ''));
    expect(res.body.createdAt).toMatch(ISO_MS);
    expect(res.body.updatedAt).toMatch(ISO_MS);
    expect(res.body.statusTimes.sent).toMatch(ISO_MS);
    expect(Object.keys(res.body.statusTimes).sort()).toEqual(['delivered', 'failed', 'read', 'sent']);
  });
});
