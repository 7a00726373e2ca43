// operations.md "Reconciliation of sends in doubt": "every send carries our message id in
// biz_opaque_callback_data; Meta echoes it in the status webhooks, so the first status of that
// message stores its wamid and moves its status"; "a message still pending without a provider
// answer 24 h after its send becomes failed with our reason (code: null)"; "the sandbox behaves the
// same way". The crash is a real server process killed (SIGKILL) while Graph holds its sends.
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERED_AFTER_MS } from '../../src/channel/sandbox/provider.js';
import { loadConfig } from '../../src/config.js';
import { sendInDoubtText } from '../../src/http/messages.es-AR.js';
import { ManualClock } from '../../src/lib/clock.js';
import { IN_DOUBT_MS } from '../../src/messages/reconcile.js';
import { type Runtime, startRuntime } from '../../src/runtime.js';
import { type AcceptedSend, cloudCredentials, type FakeGraph, startFakeGraph } from '../fakes/graph.js';
import { ADMIN_TOKEN, freshPhone, type Res, request, startTestApp, type TestApp } from '../harness.js';
import { until } from '../poll.js';
import { serverEnv, spawnServer } from '../server-process.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
});

const digits = (n: number) => Array.from(randomBytes(n), (b) => String(b % 10)).join('');

const adminAt =
  (base: string) =>
  <T = any>(method: string, path: string, body?: unknown): Promise<Res<T>> =>
    request<T>(`${base}/admin/v1${path}`, method, body, { authorization: `Bearer ${ADMIN_TOKEN}` });

/** An account with a key, a Cloud number (its only one) and an approved template synced from Graph. */
interface CloudAccount {
  id: string;
  key: string;
  numberId: string;
  graphId: string;
  wabaId: string;
  appSecret: string;
  templateId: string;
}

async function cloudAccount(base: string, graph: FakeGraph): Promise<CloudAccount> {
  const admin = adminAt(base);
  const acc = await admin('POST', '/accounts', { name: 'Conciliación', plan: 'escala' });
  expect(acc.status).toBe(201);
  const key = await admin('POST', `/accounts/${acc.body.id}/keys`, { name: 'k' });
  expect(key.status).toBe(201);
  const cloud = cloudCredentials();
  const number = await admin('POST', `/accounts/${acc.body.id}/phone-numbers`, { phone: freshPhone(), provider: 'cloud', cloud });
  expect(number.status).toBe(201);
  graph.templates.set(cloud.wabaId, [
    {
      id: `1${digits(14)}`,
      name: 'aviso',
      language: 'es_AR',
      status: 'APPROVED',
      category: 'UTILITY',
      components: [{ type: 'BODY', text: 'Hola' }],
    },
  ]);
  const synced = await admin('POST', `/accounts/${acc.body.id}/templates/sync`);
  expect(synced.status).toBe(200);
  return {
    id: acc.body.id,
    key: key.body.key,
    numberId: number.body.id,
    graphId: cloud.phoneNumberId,
    wabaId: cloud.wabaId,
    appSecret: cloud.appSecret,
    templateId: synced.body.templates[0].id,
  };
}

const api = (base: string, a: CloudAccount, method: string, path: string, body?: unknown) =>
  request(`${base}/api/v1${path}`, method, body, { authorization: `Bearer ${a.key}` });

/** POSTs a Cloud webhook as Meta does (the exact bytes, signed), then processes the queue (the inbound job). */
async function postStatus(base: string, payload: unknown, appSecret: string): Promise<void> {
  const raw = JSON.stringify(payload);
  const signature = `sha256=${createHmac('sha256', appSecret).update(raw).digest('hex')}`;
  const res = await request(`${base}/channels/whatsapp/webhook`, 'POST', raw, {
    'content-type': 'application/json',
    'x-hub-signature-256': signature,
  });
  expect(res.status).toBe(200);
  expect((await adminAt(base)('POST', '/jobs/inbound/run')).status).toBe(200);
}

/** A status webhook written by hand (not one of the fake's sends): any wamid, any opaque data. */
const statusPayload = (a: CloudAccount, wamid: string, status: string, opaque: unknown) => ({
  object: 'whatsapp_business_account',
  entry: [
    {
      id: a.wabaId,
      changes: [
        {
          field: 'messages',
          value: {
            messaging_product: 'whatsapp',
            metadata: { phone_number_id: a.graphId },
            statuses: [{ id: wamid, status, timestamp: String(Math.floor(Date.now() / 1000)), biz_opaque_callback_data: opaque }],
          },
        },
      ],
    },
  ],
});

describe('Cloud sends and statuses in one process (operations.md "Reconciliation of sends in doubt")', () => {
  let app: TestApp;
  let graph: FakeGraph;
  beforeAll(async () => {
    graph = await startFakeGraph();
    cleanup.push(() => graph.close());
    app = await startTestApp({ env: { GRAPH_API_URL: graph.url, GRAPH_TIMEOUT_MS: '20000' } });
    cleanup.push(() => app.close());
  });
  const statusEvents = async (accountId: string) =>
    (await app.events(accountId, 'message.status')).map((e) => [e.data.id, e.data.wamid, e.data.status]);

  it('"every send carries our message id in biz_opaque_callback_data": API sends and campaign sends (the fake Graph saw it)', async () => {
    const a = await cloudAccount(app.url, graph);
    const r = await api(app.url, a, 'POST', '/messages', { to: freshPhone(), template: { id: a.templateId } });
    expect(r.status).toBe(201);
    expect(graph.sends().find((c) => c.body.to === r.body.to)!.body.biz_opaque_callback_data).toBe(r.body.id);

    const phone = freshPhone();
    expect((await api(app.url, a, 'POST', '/contacts', { phone, attributes: { grupo: 'conciliacion' } })).status).toBe(201);
    const campaign = await app.admin('POST', `/accounts/${a.id}/campaigns`, {
      name: 'Aviso',
      templateId: a.templateId,
      audience: { attributes: { grupo: 'conciliacion' } },
    });
    expect(campaign.status).toBe(201);
    const db = app.rt.services.db;
    let sent: { id: string; to_phone: string | null }[] = [];
    for (let i = 0; i < 20 && sent.length === 0; i++) {
      expect((await app.admin('POST', '/jobs/campaigns/run')).status).toBe(200);
      sent = await db
        .selectFrom('messages')
        .select(['id', 'to_phone'])
        .where('campaign_id', '=', campaign.body.id)
        .where('wamid', 'is not', null)
        .execute();
    }
    expect(sent).toHaveLength(1);
    const call = graph.sends().find((c) => c.body.to === sent[0]!.to_phone);
    expect(call!.body.biz_opaque_callback_data).toBe(sent[0]!.id);
  });

  it('"the first status of that message stores its wamid": one arriving while the send is still out answers the send 201 (not 500) with the reported status, one message.status event', async () => {
    const a = await cloudAccount(app.url, graph);
    graph.queue({ hold: true });
    const sending = api(app.url, a, 'POST', '/messages', { to: freshPhone(), template: { id: a.templateId } });
    await until(() => graph.held().length === 1, { what: 'the held send', ms: 10_000 });
    const held = graph.held()[0]!;
    expect(held.opaque).toBeDefined();
    await postStatus(app.url, graph.statusWebhook(held.wamid, 'delivered', { wabaId: a.wabaId, at: app.clock.now() }), a.appSecret);
    const meanwhile = await api(app.url, a, 'GET', `/messages/${held.opaque}`);
    expect(meanwhile.body).toMatchObject({ wamid: held.wamid, status: 'delivered' });

    graph.release();
    const r = await sending;
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ id: held.opaque, wamid: held.wamid, status: 'delivered' });
    // Meta's own `sent` comes last: the machine only moves forward.
    await postStatus(app.url, graph.statusWebhook(held.wamid, 'sent', { wabaId: a.wabaId }), a.appSecret);
    expect(await statusEvents(a.id)).toEqual([[held.opaque, held.wamid, 'delivered']]);
  });

  it('"a report of sent" reconciles with the machine\'s own pending → sent and its one event', async () => {
    const a = await cloudAccount(app.url, graph);
    graph.queue({ hold: true });
    const sending = api(app.url, a, 'POST', '/messages', { to: freshPhone(), template: { id: a.templateId } });
    await until(() => graph.held().length === 1, { what: 'the held send', ms: 10_000 });
    const held = graph.held()[0]!;
    await postStatus(app.url, graph.statusWebhook(held.wamid, 'sent', { wabaId: a.wabaId }), a.appSecret);
    graph.release();
    const r = await sending;
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ id: held.opaque, wamid: held.wamid, status: 'sent' });
    expect(await statusEvents(a.id)).toEqual([[held.opaque, held.wamid, 'sent']]);
  });

  it("a campaign send racing its own status: the sender's outcome write still counts it once (sent 1, delivered 1) and the recipient sent", async () => {
    const a = await cloudAccount(app.url, graph);
    expect((await api(app.url, a, 'POST', '/contacts', { phone: freshPhone(), attributes: { grupo: 'carrera' } })).status).toBe(201);
    graph.queue({ hold: true });
    const campaign = await app.admin('POST', `/accounts/${a.id}/campaigns`, {
      name: 'Carrera',
      templateId: a.templateId,
      audience: { attributes: { grupo: 'carrera' } },
    });
    expect(campaign.status).toBe(201);
    const run = app.admin('POST', '/jobs/campaigns/run');
    await until(() => graph.held().length === 1, { what: 'the held campaign send', ms: 10_000 });
    const held = graph.held()[0]!;
    await postStatus(app.url, graph.statusWebhook(held.wamid, 'delivered', { wabaId: a.wabaId, at: app.clock.now() }), a.appSecret);
    graph.release();
    expect((await run).status).toBe(200);
    const db = app.rt.services.db;
    const read = () => db.selectFrom('campaigns').selectAll().where('id', '=', campaign.body.id).executeTakeFirstOrThrow();
    for (let i = 0; i < 10 && (await read()).status === 'sending'; i++)
      expect((await app.admin('POST', '/jobs/campaigns/run')).status).toBe(200);
    expect(await read()).toMatchObject({ status: 'completed', sent: 1, delivered: 1, failed: 0 });
    const recipients = await db
      .selectFrom('campaign_recipients')
      .select(['status', 'message_id'])
      .where('campaign_id', '=', campaign.body.id)
      .execute();
    expect(recipients).toEqual([{ status: 'sent', message_id: held.opaque }]);
    expect((await api(app.url, a, 'GET', `/messages/${held.opaque}`)).body).toMatchObject({ wamid: held.wamid, status: 'delivered' });
    expect(await statusEvents(a.id)).toEqual([[held.opaque, held.wamid, 'delivered']]);
  });

  it('only our message id counts: a status naming it from another number, or for a message that has another wamid, changes nothing', async () => {
    const a = await cloudAccount(app.url, graph);
    const other = await cloudAccount(app.url, graph);
    // Sent and stored: another wamid echoing its id moves nothing.
    const r = await api(app.url, a, 'POST', '/messages', { to: freshPhone(), template: { id: a.templateId } });
    expect(r.status).toBe(201);
    await postStatus(app.url, statusPayload(a, `wamid.OTRO${digits(20)}`, 'read', r.body.id), a.appSecret);
    expect((await api(app.url, a, 'GET', `/messages/${r.body.id}`)).body).toMatchObject({ wamid: r.body.wamid, status: 'sent' });

    // In doubt: a status naming its id on another account's number does not reconcile it.
    graph.queue({ hold: true });
    const sending = api(app.url, a, 'POST', '/messages', { to: freshPhone(), template: { id: a.templateId } });
    await until(() => graph.held().length === 1, { what: 'the held send', ms: 10_000 });
    const held = graph.held()[0]!;
    await postStatus(app.url, statusPayload(other, `wamid.OTRO${digits(20)}`, 'delivered', held.opaque), other.appSecret);
    expect((await api(app.url, a, 'GET', `/messages/${held.opaque}`)).body).toMatchObject({ wamid: null, status: 'pending' });
    // Anything but a UUID is not our id.
    await postStatus(app.url, statusPayload(a, held.wamid, 'delivered', `${held.opaque}x`), a.appSecret);
    expect((await api(app.url, a, 'GET', `/messages/${held.opaque}`)).body).toMatchObject({ wamid: null, status: 'pending' });
    graph.release();
    const answered = await sending;
    expect(answered.status).toBe(201);
    // The last report named the send's real wamid: kept, it applies once the send stores it (one event).
    expect(answered.body).toMatchObject({ wamid: held.wamid });
    expect(await statusEvents(a.id)).toEqual([[held.opaque, held.wamid, 'delivered']]);
    expect(await statusEvents(other.id)).toEqual([]);
  });
});

describe('the sandbox behaves the same way (operations.md "Reconciliation of sends in doubt")', () => {
  it('a scheduled report carries our message id: a message whose wamid was never stored gets it, and its status, through the status machine', async () => {
    const sb = await startTestApp({ env: { SANDBOX_AUTO_STATUS: 'on' } });
    cleanup.push(() => sb.close());
    const acc = await sb.createAccount();
    const t = await sb.admin('POST', `/accounts/${acc.id}/templates`, {
      name: 'auto',
      category: 'UTILITY',
      body: 'Hola',
      status: 'APPROVED',
    });
    expect(t.status).toBe(201);
    const r = await acc.call('POST', '/messages', { to: freshPhone(), template: { id: t.body.id } });
    expect(r.status).toBe(201);
    // The crash this rule is for: the process died after the sandbox took the send, before the
    // wamid's write, which is undone here (the write a SIGKILL would have lost).
    await sb.rt.services.db
      .updateTable('messages')
      .set({ wamid: null, status: 'pending', sent_at: null })
      .where('id', '=', r.body.id)
      .execute();
    sb.clock.advance(DELIVERED_AFTER_MS);
    expect((await sb.admin('POST', '/jobs/sandbox-statuses/run')).status).toBe(200);
    const got = await acc.call('GET', `/messages/${r.body.id}`);
    expect(got.body).toMatchObject({ wamid: r.body.wamid, status: 'delivered' });
    const ev = await sb.events(acc.id, 'message.status');
    expect(ev.map((e) => [e.data.id, e.data.wamid, e.data.status])).toEqual([[r.body.id, r.body.wamid, 'delivered']]);
  });
});

/** A data directory removed when the file ends. */
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'chasqui-recon-'));
  cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A server process sends two API messages and a campaign of two while Graph holds every send, and
 * is killed; Graph then answers into the dead sockets. The next process learns the wamids only
 * from Meta's status webhooks, and fails after 24 h what never got one.
 */
async function crashScenario(graph: FakeGraph, dbEnv: Record<string, string>) {
  const env = serverEnv({
    ...dbEnv,
    GRAPH_API_URL: graph.url,
    GRAPH_TIMEOUT_MS: '60000',
    REDIS_KEY_PREFIX: `chasqui-recon-${process.pid}-${randomBytes(3).toString('hex')}`,
  });
  const first = await spawnServer(env, (fn) => cleanup.push(fn));
  const a = await cloudAccount(first.url, graph);
  for (let i = 0; i < 2; i++) {
    expect((await api(first.url, a, 'POST', '/contacts', { phone: freshPhone(), attributes: { grupo: 'corte' } })).status).toBe(201);
  }
  graph.queue({ hold: true }, { hold: true }, { hold: true }, { hold: true });
  // The API sends never answer: their process dies.
  for (let i = 0; i < 2; i++)
    void api(first.url, a, 'POST', '/messages', { to: freshPhone(), template: { id: a.templateId } }).catch(() => {});
  await until(() => graph.held().length === 2, { what: 'the API sends at Graph', ms: 20_000 });
  const campaign = await adminAt(first.url)('POST', `/accounts/${a.id}/campaigns`, {
    name: 'Corte',
    templateId: a.templateId,
    audience: { attributes: { grupo: 'corte' } },
  });
  expect(campaign.status).toBe(201);
  await until(() => graph.held().length === 4, { what: 'the campaign sends at Graph', ms: 20_000 });
  const [apiDone, apiLost, campDone, campLost] = graph.held() as [AcceptedSend, AcceptedSend, AcceptedSend, AcceptedSend];
  const exited = new Promise((res) => first.child.once('exit', res));
  first.child.kill('SIGKILL');
  await exited;
  graph.release(); // Graph took them all; its answers reach nobody.

  const clock = new ManualClock();
  const next: Runtime = await startRuntime(loadConfig(env), { clock, workers: false, usageFlushMs: 0 });
  cleanup.push(() => next.close());
  const url = (await next.listen()).replace('[::1]', '127.0.0.1');
  const admin = adminAt(url);
  const db = next.services.db;
  const message = async (id: string) => (await api(url, a, 'GET', `/messages/${id}`)).body;
  const readCampaign = () => db.selectFrom('campaigns').selectAll().where('id', '=', campaign.body.id).executeTakeFirstOrThrow();
  for (const h of [apiDone, apiLost, campDone, campLost])
    expect(await message(h.opaque!)).toMatchObject({ status: 'pending', wamid: null });

  // The campaign's next run counts its two recipients in doubt failed ("interrupted").
  for (let i = 0; i < 10 && (await readCampaign()).status === 'sending'; i++)
    expect((await admin('POST', '/jobs/campaigns/run')).status).toBe(200);
  expect(await readCampaign()).toMatchObject({ status: 'completed', sent: 0, failed: 2 });

  // Meta's statuses echo our ids: the wamids are stored and the statuses move, one event each.
  await postStatus(url, graph.statusWebhook(apiDone.wamid, 'delivered', { wabaId: a.wabaId, at: clock.now() }), a.appSecret);
  await postStatus(url, graph.statusWebhook(campDone.wamid, 'read', { wabaId: a.wabaId, at: clock.now() }), a.appSecret);
  expect(await message(apiDone.opaque!)).toMatchObject({ wamid: apiDone.wamid, status: 'delivered' });
  expect(await message(campDone.opaque!)).toMatchObject({ wamid: campDone.wamid, status: 'read' });
  // The recipient counted "interrupted" was sent after all: counted once, as sent.
  expect(await readCampaign()).toMatchObject({ sent: 1, failed: 1, delivered: 1, read: 1 });
  const events = async () =>
    (
      await next.services.db
        .selectFrom('events')
        .select('data')
        .where('account_id', '=', a.id)
        .where('kind', '=', 'message.status')
        .orderBy('created_at')
        .orderBy('id')
        .execute()
    ).map((e) => e.data as any);
  expect((await events()).map((e) => [e.id, e.wamid, e.status])).toEqual([
    [apiDone.opaque, apiDone.wamid, 'delivered'],
    [campDone.opaque, campDone.wamid, 'read'],
  ]);

  // "24 h after its send": nothing before; after, the two still in doubt fail with our reason.
  const runJob = async () => (await admin('POST', '/jobs/reconcile-sends/run')).body;
  expect(await runJob()).toEqual({ ran: 'reconcile-sends', changed: 0 });
  clock.advance(IN_DOUBT_MS - 60_000);
  expect(await runJob()).toEqual({ ran: 'reconcile-sends', changed: 0 });
  expect(await message(apiLost.opaque!)).toMatchObject({ status: 'pending' });
  clock.advance(2 * 60_000);
  const failedOurs = async () => {
    const text = (await request(`${url}/metrics`, 'GET', undefined, { authorization: `Bearer ${ADMIN_TOKEN}` })).body as string;
    return Number(/^chasqui_messages_failed_total\{channel="whatsapp",kind="ours"\} (\d+)$/m.exec(text)?.[1] ?? 0);
  };
  const oursBefore = await failedOurs();
  expect(await runJob()).toEqual({ ran: 'reconcile-sends', changed: 2 });
  // Counted as our own failures (operations.md "Metrics": chasqui_messages_failed_total kind ours).
  expect((await failedOurs()) - oursBefore).toBe(2);
  for (const h of [apiLost, campLost]) {
    expect(await message(h.opaque!)).toMatchObject({ status: 'failed', wamid: null, code: null, error: sendInDoubtText });
  }
  // The reconciled ones are never touched; the campaign's recipient was already counted failed.
  expect(await message(apiDone.opaque!)).toMatchObject({ status: 'delivered' });
  expect(await message(campDone.opaque!)).toMatchObject({ status: 'read' });
  expect(await readCampaign()).toMatchObject({ sent: 1, failed: 1, delivered: 1, read: 1 });
  const failedEvents = (await events()).filter((e) => e.status === 'failed');
  expect(failedEvents.map((e) => [e.id, e.code, e.wamid]).sort()).toEqual(
    [
      [apiLost.opaque, null, null],
      [campLost.opaque, null, null],
    ].sort(),
  );
  expect(await runJob()).toEqual({ ran: 'reconcile-sends', changed: 0 });
  await next.close();
}

describe('a send whose process died before storing its wamid (SIGKILL) is reconciled by its first status, or failed after 24 h', () => {
  const start = async () => {
    const graph = await startFakeGraph();
    cleanup.push(() => graph.close());
    return graph;
  };

  it.skipIf(!process.env.DATABASE_URL)(
    'on PostgreSQL: the next process stores the wamids Meta echoes our ids with, and fails the rest after 24 h',
    async () => {
      const graph = await start();
      const holder = await startTestApp({ workers: false }); // a fresh, migrated database
      cleanup.push(() => holder.close());
      await crashScenario(graph, { DATABASE_URL: holder.databaseUrl, DATA_DIR: tempDir() });
    },
    240_000,
  );

  it.skipIf(!!process.env.DATABASE_URL)(
    'on embedded PGlite: restarted on the same data directory, the same',
    async () => {
      const graph = await start();
      await crashScenario(graph, { DATA_DIR: tempDir(), DATABASE_URL: '' });
    },
    240_000,
  );
});
