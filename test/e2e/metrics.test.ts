// GET /metrics (docs/operating.md "Metrics"): Prometheus text read with a parser after real
// traffic; every count moves by exactly what happened; no label names a person, an id or a URL.
import { randomBytes, randomUUID } from 'node:crypto';
import parsePrometheusTextFormat, { type PromFamily } from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloudCredentials, startFakeGraph } from '../fakes/graph.js';
import { startFakeLlm } from '../fakes/llm.js';
import { type Receiver, startReceiver } from '../fakes/receiver.js';
import { ADMIN_TOKEN, freshPhone, request, startTestApp, type TestAccount, type TestApp, testNumber } from '../harness.js';

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

let app: TestApp;
const receivers: Receiver[] = [];

beforeAll(async () => {
  app = await startTestApp({ env: { METRICS_TOKEN } });
});
afterAll(async () => {
  for (const r of receivers) await r.close();
  await app?.close();
});

type Families = Map<string, PromFamily>;

async function scrape(on: TestApp = app, token = ADMIN_TOKEN): Promise<{ text: string; families: Families }> {
  const res = await fetch(`${on.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  return { text, families: new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f])) };
}

/** The value of a counter or gauge's sample with exactly these labels (0 when absent). */
function value(families: Families, name: string, labels: Record<string, string> = {}): number {
  const f = families.get(name);
  expect(f, name).toBeDefined();
  const sample = f!.metrics.find((m) => {
    const l = m.labels ?? {};
    return Object.keys(l).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => l[k] === v);
  });
  return sample ? Number(sample.value) : 0;
}

/**
 * How many observations a histogram's sample with these labels holds (0 when absent). The parser
 * folds a labelled histogram's samples into one, so its `_count` lines are read as a counter family.
 */
function observations(scraped: { text: string; families: Families }, name: string, labels: Record<string, string> = {}): number {
  expect(scraped.families.get(name)?.type, name).toBe('HISTOGRAM');
  const lines = scraped.text.split('\n').filter((l) => l.startsWith(`${name}_count`));
  const counts = new Map(parsePrometheusTextFormat(`# TYPE ${name}_count counter\n${lines.join('\n')}\n`).map((f) => [f.name, f]));
  return counts.size === 0 ? 0 : value(counts, `${name}_count`, labels);
}

async function openConversation(acc: TestAccount, from = freshPhone()): Promise<string> {
  const r = await app.inbound({ accountId: acc.id, from, text: 'Hola' });
  expect(r.status).toBe(201);
  return from;
}

describe('GET /metrics: authentication', () => {
  it('"Authenticated by the operator token or METRICS_TOKEN (Bearer); without either → 401 in the error shape"', async () => {
    const none = await request(`${app.url}/metrics`, 'GET');
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ error: expect.stringMatching(/token de métricas o de operador/), cause: null });
    const wrong = await request(`${app.url}/metrics`, 'GET', undefined, { authorization: 'Bearer not-the-token-0123456789' });
    expect(wrong.status).toBe(401);
    const operator = await scrape(app, ADMIN_TOKEN);
    const metricsToken = await scrape(app, METRICS_TOKEN);
    // prom-client's default process and Node.js metrics are on the same registry.
    for (const { families } of [operator, metricsToken]) {
      expect(families.get('process_cpu_user_seconds_total')?.type).toBe('COUNTER');
      expect(families.get('nodejs_eventloop_lag_seconds')?.type).toBe('GAUGE');
    }
  });

  it('"Names (all prefixed chasqui_; units in the name)": each named metric with its type', async () => {
    const { families } = await scrape();
    const types: Record<string, PromFamily['type']> = {
      chasqui_http_requests_total: 'COUNTER',
      chasqui_http_request_duration_seconds: 'HISTOGRAM',
      chasqui_messages_sent_total: 'COUNTER',
      chasqui_messages_failed_total: 'COUNTER',
      chasqui_messages_received_total: 'COUNTER',
      chasqui_queue_depth: 'GAUGE',
      chasqui_queue_oldest_age_seconds: 'GAUGE',
      chasqui_dead_letters: 'GAUGE',
      chasqui_webhook_deliveries_total: 'COUNTER',
      chasqui_provider_request_duration_seconds: 'HISTOGRAM',
      chasqui_pacer_wait_seconds: 'HISTOGRAM',
      chasqui_llm_request_duration_seconds: 'HISTOGRAM',
      chasqui_limit_refusals_total: 'COUNTER',
    };
    for (const [name, type] of Object.entries(types)) expect(families.get(name)?.type, name).toBe(type);
  });
});

describe('GET /metrics: counted where the work happens', () => {
  it('one customer message and one send: received +1 and sent +1 (whatsapp, sandbox), the pacer waited once, the requests by route pattern', async () => {
    const acc = await app.createAccount();
    const first = await scrape();
    const before = first.families;
    const to = await openConversation(acc);
    const sent = await acc.call('POST', '/messages', { to, text: 'Gracias por escribirnos' });
    expect(sent.status).toBe(201);
    const read = await acc.call('GET', `/messages/${sent.body.id}`);
    expect(read.status).toBe(200);
    const last = await scrape();
    const after = last.families;
    const delta = (name: string, labels: Record<string, string>) => value(after, name, labels) - value(before, name, labels);
    expect(delta('chasqui_messages_received_total', { channel: 'whatsapp' })).toBe(1);
    expect(delta('chasqui_messages_sent_total', { channel: 'whatsapp', provider: 'sandbox' })).toBe(1);
    expect(delta('chasqui_messages_failed_total', { channel: 'whatsapp', kind: 'provider' })).toBe(0);
    expect(delta('chasqui_http_requests_total', { method: 'POST', route: '/api/v1/messages', status: '201' })).toBe(1);
    expect(delta('chasqui_http_requests_total', { method: 'GET', route: '/api/v1/messages/:id', status: '200' })).toBe(1);
    expect(delta('chasqui_http_requests_total', { method: 'POST', route: '/admin/v1/sandbox/inbound', status: '201' })).toBe(1);
    expect(observations(last, 'chasqui_pacer_wait_seconds') - observations(first, 'chasqui_pacer_wait_seconds')).toBe(1);
    const durations = (f: typeof first) =>
      observations(f, 'chasqui_http_request_duration_seconds', { method: 'POST', route: '/api/v1/messages' });
    expect(durations(last) - durations(first)).toBe(1);
  });

  it('"kind provider = the provider refused": a send refused by the sandbox (test number 0002) counts failed, not sent', async () => {
    const acc = await app.createAccount();
    const to = await openConversation(acc, testNumber('0002'));
    const before = (await scrape()).families;
    const refused = await acc.call('POST', '/messages', { to, text: 'Hola' });
    expect(refused.status).toBe(502);
    const after = (await scrape()).families;
    const delta = (name: string, labels: Record<string, string>) => value(after, name, labels) - value(before, name, labels);
    expect(delta('chasqui_messages_failed_total', { channel: 'whatsapp', kind: 'provider' })).toBe(1);
    expect(delta('chasqui_messages_sent_total', { channel: 'whatsapp', provider: 'sandbox' })).toBe(0);
  });

  it('"kind ours = throughput busy": sends that found no slot of their number within 2 s (tier 1) count failed ours; those that went out, sent', async () => {
    const acc = await app.createAccount();
    const tier = await app.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${acc.phoneNumberId}`, { throughputPerSecond: 1 });
    expect(tier.status).toBe(200);
    const to = await openConversation(acc);
    const first = await scrape();
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => acc.call('POST', '/messages', { to, text: `Aviso ${i}` })));
    const ok = answers.filter((r) => r.status === 201).length;
    const busy = answers.filter((r) => r.status === 429).length;
    expect(ok + busy).toBe(5);
    expect(busy).toBeGreaterThanOrEqual(1);
    const last = await scrape();
    const delta = (name: string, labels: Record<string, string>) =>
      value(last.families, name, labels) - value(first.families, name, labels);
    expect(delta('chasqui_messages_failed_total', { channel: 'whatsapp', kind: 'ours' })).toBe(busy);
    expect(delta('chasqui_messages_sent_total', { channel: 'whatsapp', provider: 'sandbox' })).toBe(ok);
    // Only the sends that had a slot waited for it (up to ~2 s).
    expect(observations(last, 'chasqui_pacer_wait_seconds') - observations(first, 'chasqui_pacer_wait_seconds')).toBe(ok);
  });

  it("a minute cap's 429 counts one refusal of its limit (requests_per_minute, messages_per_minute)", async () => {
    const acc = await app.createAccount({ limits: { requestsPerMinute: 2, messagesPerMinute: 1 } });
    const to = await openConversation(acc);
    const before = (await scrape()).families;
    expect((await acc.call('POST', '/messages', { to, text: 'Uno' })).status).toBe(201);
    expect((await acc.call('POST', '/messages', { to, text: 'Dos' })).status).toBe(429);
    expect((await acc.call('GET', '/me')).status).toBe(200);
    expect((await acc.call('GET', '/me')).status).toBe(429);
    const after = (await scrape()).families;
    const delta = (limit: string) =>
      value(after, 'chasqui_limit_refusals_total', { limit }) - value(before, 'chasqui_limit_refusals_total', { limit });
    expect(delta('messages_per_minute')).toBe(1);
    expect(delta('requests_per_minute')).toBe(1);
    expect(delta('quota')).toBe(0);
  });

  it("the monthly quota, an AI app's minute cap and the IP block count one refusal each of their limit (quota, mcp_per_app, ip_block)", async () => {
    // Its own app: the IP block holds every request of this address for a minute.
    const own = await startTestApp();
    try {
      const acc = await own.createAccount({ limits: { apiCallsPerMonth: 1 } });
      const capped = await own.createAccount({ limits: { mcpCallsPerMinute: 1 } });
      const ai = await own.admin('POST', `/accounts/${capped.id}/ai-apps`, { name: 'Claude de Laura' });
      expect(ai.status).toBe(201);
      const rpc = (id: number) =>
        request(
          `${own.url}/mcp`,
          'POST',
          { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_account', arguments: {} } },
          {
            accept: 'application/json, text/event-stream',
            authorization: `Bearer ${ai.body.token}`,
          },
        );
      const before = (await scrape(own)).families;
      expect((await acc.call('GET', '/me')).status).toBe(200);
      expect((await acc.call('GET', '/me')).status).toBe(429);
      expect((await rpc(1)).status).toBe(200);
      expect((await rpc(2)).status).toBe(429);
      for (let i = 0; i < 20; i++) expect((await own.api(`etk_live_${'A'.repeat(40)}`, 'GET', '/me')).status).toBe(401);
      // The 21st invalid key blocks the IP; the valid key after it meets the block.
      expect((await own.api(`etk_live_${'A'.repeat(40)}`, 'GET', '/me')).status).toBe(429);
      expect((await capped.call('GET', '/me')).status).toBe(429);
      const after = (await scrape(own)).families;
      const delta = (limit: string) =>
        value(after, 'chasqui_limit_refusals_total', { limit }) - value(before, 'chasqui_limit_refusals_total', { limit });
      expect(delta('quota')).toBe(1);
      expect(delta('mcp_per_app')).toBe(1);
      expect(delta('ip_block')).toBe(2);
      expect(delta('requests_per_minute')).toBe(0);
    } finally {
      await own.close();
    }
  });

  it('"unknown routes are unmatched": a 404 route and a too-long path are labelled unmatched, never by their URL', async () => {
    const acc = await app.createAccount();
    const before = (await scrape()).families;
    const phone = freshPhone();
    expect((await request(`${app.url}/no/existe/${phone}?token=secreto`, 'GET')).status).toBe(404);
    expect((await acc.call('GET', `/no-existe/${randomUUID()}`)).status).toBe(404);
    // A real route with an id nobody has: its pattern, status 404.
    expect((await acc.call('GET', `/messages/${randomUUID()}`)).status).toBe(404);
    // Refused by the router itself (a path part over 500 characters): unmatched too.
    expect((await acc.call('GET', `/messages/${'x'.repeat(600)}`)).status).toBe(414);
    const { text, families: after } = await scrape();
    const delta = (labels: Record<string, string>) =>
      value(after, 'chasqui_http_requests_total', labels) - value(before, 'chasqui_http_requests_total', labels);
    expect(delta({ method: 'GET', route: 'unmatched', status: '404' })).toBe(2);
    expect(delta({ method: 'GET', route: '/api/v1/messages/:id', status: '404' })).toBe(1);
    expect(delta({ method: 'GET', route: 'unmatched', status: '414' })).toBe(1);
    // No label value anywhere holds a UUID, a phone, a query string or a raw path.
    const values = [...after.values()].flatMap((f) => f.metrics.flatMap((m) => Object.values(m.labels ?? {})));
    expect(values.length).toBeGreaterThan(20);
    const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
    expect(
      values.filter((v) => uuid.test(v) || /\d{8,}/.test(v) || v.includes('?') || v.includes('no-existe') || v.includes('xxx')),
    ).toEqual([]);
    expect(text).not.toContain(phone.slice(1));
    expect(text).not.toContain(acc.id);
  });

  it('"chasqui_webhook_deliveries_total (delivered, failed, retrying)": a delivery to a local receiver counts delivered; a 500 counts retrying', async () => {
    const ok = await startReceiver({ status: 200, body: 'ok' });
    const failing = await startReceiver({ status: 500, body: 'no' });
    receivers.push(ok, failing);
    const acc = await app.createAccount();
    const bad = await app.createAccount();
    expect((await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url: ok.url, events: ['contact.created'] })).status).toBe(201);
    expect((await app.admin('POST', `/accounts/${bad.id}/webhooks`, { url: failing.url, events: ['contact.created'] })).status).toBe(201);
    const before = (await scrape()).families;
    expect((await acc.call('POST', '/contacts', { phone: freshPhone() })).status).toBe(201);
    expect((await bad.call('POST', '/contacts', { phone: freshPhone() })).status).toBe(201);
    await ok.waitFor(1);
    await failing.waitFor(1);
    // An attempt is counted when its answer is read, just after the receiver got it: scrape until both are.
    let after = (await scrape()).families;
    const delta = (result: string) =>
      value(after, 'chasqui_webhook_deliveries_total', { result }) - value(before, 'chasqui_webhook_deliveries_total', { result });
    for (const end = Date.now() + 5_000; delta('delivered') + delta('retrying') < 2 && Date.now() < end; ) {
      await new Promise((r) => setTimeout(r, 20));
      after = (await scrape()).families;
    }
    expect(delta('delivered')).toBe(1);
    expect(delta('retrying')).toBe(1);
    expect(delta('failed')).toBe(0);
  });
});

describe('GET /metrics: the provider', () => {
  it('"chasqui_provider_request_duration_seconds{provider,operation}" around Graph calls: a template sync and a Cloud send are one each; the send counts sent (whatsapp, cloud)', async () => {
    const fake = await startFakeGraph();
    const cloud = await startTestApp({ env: { GRAPH_API_URL: fake.url, CHANNEL_PROVIDER: 'cloud' } });
    try {
      const acc = await cloud.createAccount();
      const digits = (n: number) => Array.from(randomBytes(n), (b) => String(b % 10)).join('');
      const c = cloudCredentials();
      const number = { phone: freshPhone({ spelling: 'digits' }), name: 'WhatsApp', provider: 'cloud', cloud: c };
      const created = await cloud.admin('POST', `/accounts/${acc.id}/phone-numbers`, number);
      expect(created.status).toBe(201);
      expect((await cloud.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${created.body.id}`, { default: true })).status).toBe(200);
      fake.tokens.set(c.phoneNumberId, c.accessToken);
      fake.tokens.set(c.wabaId, c.accessToken);
      const name = `aviso_${randomBytes(4).toString('hex')}`;
      const template = { id: `1${digits(14)}`, name, language: 'es_AR', status: 'APPROVED', category: 'UTILITY' };
      fake.templates.set(c.wabaId, [{ ...template, components: [{ type: 'BODY', text: 'Tu pedido está listo.' }] }]);
      const first = await scrape(cloud);
      const synced = await cloud.admin('POST', `/accounts/${acc.id}/templates/sync`);
      expect(synced.status).toBe(200);
      const tpl = synced.body.templates.find((t: { name: string }) => t.name === name);
      const sent = await acc.call('POST', '/messages', { to: freshPhone(), template: { id: tpl.id } });
      expect(sent.status).toBe(201);
      const last = await scrape(cloud);
      const calls = (f: typeof first, operation: string) =>
        observations(f, 'chasqui_provider_request_duration_seconds', { provider: 'cloud', operation });
      expect(calls(last, 'templates') - calls(first, 'templates')).toBe(1);
      expect(calls(last, 'send') - calls(first, 'send')).toBe(1);
      expect(fake.sends()).toHaveLength(1);
      const delta = value(last.families, 'chasqui_messages_sent_total', { channel: 'whatsapp', provider: 'cloud' });
      expect(delta - value(first.families, 'chasqui_messages_sent_total', { channel: 'whatsapp', provider: 'cloud' })).toBe(1);
    } finally {
      await cloud.close();
      await fake.close();
    }
  });
});

describe('GET /metrics: the language model', () => {
  it('"chasqui_llm_request_duration_seconds{outcome}": an answered request is ok, a refused one (400, not tried again) is error', async () => {
    const llm = await startFakeLlm();
    const withModel = await startTestApp({ env: { LLM_BASE_URL: llm.url } });
    try {
      const first = await scrape(withModel);
      llm.reply({ text: 'Hola' });
      await withModel.rt.services.llm!.chat({ messages: [{ role: 'user', content: 'Hola' }], tools: [] });
      llm.fail(400, 'model not found');
      await expect(withModel.rt.services.llm!.chat({ messages: [{ role: 'user', content: 'Hola' }], tools: [] })).rejects.toThrow();
      const last = await scrape(withModel);
      const tries = (f: typeof first, outcome: string) => observations(f, 'chasqui_llm_request_duration_seconds', { outcome });
      expect(tries(last, 'ok') - tries(first, 'ok')).toBe(1);
      expect(tries(last, 'error') - tries(first, 'error')).toBe(1);
      expect(llm.requests).toHaveLength(2);
    } finally {
      await withModel.close();
      await llm.close();
    }
  });
});

describe('GET /metrics: queue gauges read at scrape time', () => {
  it('"chasqui_dead_letters{queue}": every queue with dead letters is present, 0 when none; a dead letter counts 1', async () => {
    const before = (await scrape()).families;
    for (const queue of ['inbound', 'webhook_deliveries', 'executions', 'agent_turns', 'classification']) {
      expect(
        before.get('chasqui_dead_letters')!.metrics.some((m) => m.labels?.queue === queue),
        queue,
      ).toBe(true);
    }
    for (const queue of ['webhook_deliveries', 'inbound', 'executions', 'agent_turns', 'classification', 'campaign_recipients']) {
      expect(
        before.get('chasqui_queue_depth')!.metrics.some((m) => m.labels?.queue === queue),
        queue,
      ).toBe(true);
      expect(
        before.get('chasqui_queue_oldest_age_seconds')!.metrics.some((m) => m.labels?.queue === queue),
        queue,
      ).toBe(true);
    }
    const now = app.clock.now();
    await app.rt.services.db
      .insertInto('dead_letters' as never)
      .values({
        id: randomUUID(),
        queue: 'classification',
        item_id: randomUUID(),
        account_id: null,
        first_failed_at: now,
        attempts: 7,
        last_error: 'prueba',
        died_at: now,
      } as never)
      .execute();
    const after = (await scrape()).families;
    expect(
      value(after, 'chasqui_dead_letters', { queue: 'classification' }) -
        value(before, 'chasqui_dead_letters', { queue: 'classification' }),
    ).toBe(1);
  });

  it('"chasqui_queue_depth / chasqui_queue_oldest_age_seconds": a delivery waiting 42 s (no dispatcher running) is depth 1, age 42', async () => {
    // A process without workers: the delivery stays due, nothing takes it.
    const idle = await startTestApp({ workers: false });
    try {
      const acc = await idle.createAccount();
      const r = await startReceiver();
      receivers.push(r);
      expect((await idle.admin('POST', `/accounts/${acc.id}/webhooks`, { url: r.url, events: ['contact.created'] })).status).toBe(201);
      const empty = (await scrape(idle)).families;
      expect(value(empty, 'chasqui_queue_depth', { queue: 'webhook_deliveries' })).toBe(0);
      expect(value(empty, 'chasqui_queue_oldest_age_seconds', { queue: 'webhook_deliveries' })).toBe(0);
      expect((await acc.call('POST', '/contacts', { phone: freshPhone() })).status).toBe(201);
      idle.clock.advance(42_000);
      const { families } = await scrape(idle);
      expect(value(families, 'chasqui_queue_depth', { queue: 'webhook_deliveries' })).toBe(1);
      expect(value(families, 'chasqui_queue_oldest_age_seconds', { queue: 'webhook_deliveries' })).toBeCloseTo(42, 0);
      expect(r.received).toHaveLength(0);
    } finally {
      await idle.close();
    }
  });
});

describe('METRICS=off', () => {
  it('"off = no hook, no counting, /metrics answers 404"', async () => {
    const off = await startTestApp({ env: { METRICS: 'off' } });
    try {
      expect(off.rt.services.metrics.enabled).toBe(false);
      const res = await request(`${off.url}/metrics`, 'GET', undefined, { authorization: `Bearer ${ADMIN_TOKEN}` });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: expect.stringMatching(/Esa ruta no existe/), cause: null });
      // Work still happens, uncounted.
      const acc = await off.createAccount();
      expect((await acc.call('GET', '/me')).status).toBe(200);
      expect(await off.rt.services.metrics.scrape()).toBe('');
    } finally {
      await off.close();
    }
  });
});
