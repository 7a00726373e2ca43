// Webhooks (api.md §6, decisions.md "Webhooks", operator.md "Webhooks"): the real app over
// HTTP, a local receiver standing in for the customer's endpoint, time moved by the ManualClock.
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitEvent, queuedDeliveries } from '../../src/webhooks/outbox.js';
import { type Received, type Receiver, startReceiver } from '../fakes/receiver.js';
import { freshPhone, startTestApp, storeWebhookUnchecked, type TestAccount, type TestApp } from '../harness.js';
import { until } from '../poll.js';

let app: TestApp;
const receivers: Receiver[] = [];
beforeAll(async () => {
  app = await startTestApp({ env: { WEBHOOK_TIMEOUT_MS: '400' } });
});
afterAll(async () => {
  await app?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(fallback?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const r = await startReceiver(fallback);
  receivers.push(r);
  return r;
}

/** POST /contacts with a new phone: emits contact.created (source api). */
async function newContact(acc: TestAccount, attributes?: Record<string, string>) {
  const res = await acc.call('POST', '/contacts', { phone: freshPhone(), attributes });
  expect(res.status).toBe(201);
  return res.body;
}

async function addWebhook(acc: TestAccount, url: string, events?: string[]) {
  const res = await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url, ...(events ? { events } : {}) });
  expect(res.status).toBe(201);
  return res.body as { id: string; secret: string; url: string };
}

/** Moves time forward and lets the dispatcher run everything now due (POST /admin/v1/jobs/webhooks/run). */
async function advance(ms: number, on: TestApp = app): Promise<void> {
  on.clock.advance(ms);
  const res = await on.admin('POST', '/jobs/webhooks/run');
  expect(res.status).toBe(200);
}

const deliveries = (acc: TestAccount, wid: string) => app.admin('GET', `/accounts/${acc.id}/webhooks/${wid}/deliveries`);
const delivery = (acc: TestAccount, wid: string, did: string) => app.admin('GET', `/accounts/${acc.id}/webhooks/${wid}/deliveries/${did}`);

/** Waits until the URL's newest delivery is in `status`. */
const settled = (acc: TestAccount, wid: string, status: string) =>
  until(async () => {
    const d = (await deliveries(acc, wid)).body.data[0];
    return d?.status === status ? d : undefined;
  });

const headersOf = (r: Received) => ({
  'webhook-id': String(r.headers['webhook-id']),
  'webhook-timestamp': String(r.headers['webhook-timestamp']),
  'webhook-signature': String(r.headers['webhook-signature']),
});

describe('signing (decisions.md: "Signed per Standard Webhooks … The official standardwebhooks and svix verifiers must accept them")', () => {
  it('a real delivery verifies with standardwebhooks and with svix, and is rejected after tampering', async () => {
    const acc = await app.createAccount();
    const r = await receiver();
    const wh = await addWebhook(acc, `${r.url}/hooks`);
    expect(wh.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const contact = await newContact(acc);
    const [got] = await r.waitFor(1);
    if (!got) throw new Error('no delivery');

    expect(got.headers['content-type']).toBe('application/json');
    expect(got.json).toEqual({
      id: got.headers['webhook-id'],
      event: 'contact.created',
      createdAt: expect.stringMatching(/Z$/),
      data: { source: 'api', contact: expect.objectContaining({ id: contact.id }) },
    });
    expect(got.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(Number(got.headers['webhook-timestamp'])).toBe(Math.floor(app.clock.now().getTime() / 1000));

    expect(new StandardWebhook(wh.secret).verify(got.body, headersOf(got))).toEqual(got.json);
    expect(new SvixWebhook(wh.secret).verify(got.body, headersOf(got))).toEqual(got.json);

    const tampered = got.body.replace('"api"', '"inbound"');
    expect(() => new StandardWebhook(wh.secret).verify(tampered, headersOf(got))).toThrow();
    expect(() => new SvixWebhook(wh.secret).verify(tampered, headersOf(got))).toThrow();
    const otherId = { ...headersOf(got), 'webhook-id': '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e' };
    expect(() => new StandardWebhook(wh.secret).verify(got.body, otherId)).toThrow();
  });

  it('rotate-secret: the old secret keeps signing for 24 h (both signatures, space-separated), then only the new one', async () => {
    const acc = await app.createAccount();
    const r = await receiver();
    const wh = await addWebhook(acc, r.url);
    const rot = await app.admin('POST', `/accounts/${acc.id}/webhooks/${wh.id}/rotate-secret`);
    expect(rot.status).toBe(200);
    expect(rot.body.secret).toMatch(/^whsec_/);
    expect(rot.body.secret).not.toBe(wh.secret);

    await newContact(acc);
    const [first] = await r.waitFor(1);
    if (!first) throw new Error('no delivery');
    expect(String(first.headers['webhook-signature']).split(' ')).toHaveLength(2);
    // A receiver still configured with the old secret, and one already on the new one, both accept it.
    expect(new StandardWebhook(wh.secret).verify(first.body, headersOf(first))).toEqual(first.json);
    expect(new SvixWebhook(rot.body.secret).verify(first.body, headersOf(first))).toEqual(first.json);

    app.clock.advance(24 * 3600_000 + 1_000);
    await newContact(acc);
    const [, second] = await r.waitFor(2);
    if (!second) throw new Error('no delivery');
    expect(String(second.headers['webhook-signature']).split(' ')).toHaveLength(1);
    app.clock.set(Date.now()); // the verifiers compare webhook-timestamp with the real time
  });
});

describe('envelope (api.md §6)', () => {
  it('test event: POST …/test → 202 and a message.received with `test: true` at the top level, to that URL only', async () => {
    const acc = await app.createAccount();
    const r1 = await receiver();
    const r2 = await receiver();
    const wh = await addWebhook(acc, r1.url);
    const other = await addWebhook(acc, r2.url);
    const res = await app.admin('POST', `/accounts/${acc.id}/webhooks/${wh.id}/test`);
    expect(res.status).toBe(202);
    const [got] = await r1.waitFor(1);
    expect(got?.json).toMatchObject({
      event: 'message.received',
      test: true,
      data: { type: 'text', contact: { phone: expect.any(String) } },
    });
    expect(new StandardWebhook(wh.secret).verify(got?.body ?? '', headersOf(got as Received))).toBeTruthy();
    // The outbox drained, the other URL has no delivery at all: nothing can still arrive there.
    await advance(0);
    expect((await deliveries(acc, other.id)).body.data).toEqual([]);
    expect(r2.received).toHaveLength(0);
  });

  it('events that are not tests carry no `test` key', async () => {
    const acc = await app.createAccount();
    const r = await receiver();
    await addWebhook(acc, r.url);
    await newContact(acc);
    const [got] = await r.waitFor(1);
    expect(Object.keys(got?.json ?? {})).toEqual(['id', 'event', 'createdAt', 'data']);
  });

  it('`data` above 262,144 bytes serialised arrives as {truncated: true, id: null, size}', async () => {
    const acc = await app.createAccount();
    const r = await receiver();
    await addWebhook(acc, r.url);
    const big = { text: 'ñ'.repeat(140_000) }; // 280,000 bytes of UTF-8 in 140,000 characters
    const small = { text: 'x'.repeat(262_000) };
    const s = app.rt.services;
    await s.db.transaction().execute(async (trx) => {
      await emitEvent(trx, { accountId: acc.id, kind: 'message.received', data: big }, s.clock.now());
      await emitEvent(trx, { accountId: acc.id, kind: 'message.received', data: small }, s.clock.now());
    });
    s.dispatcher.wake();
    const got = await r.waitFor(2);
    const datas = got.map((g) => g.json.data);
    expect(datas).toContainEqual({ truncated: true, id: null, size: Buffer.byteLength(JSON.stringify(big)) });
    expect(datas).toContainEqual(small);
  });

  it('outbox: an event emitted in a transaction that rolls back is never sent', async () => {
    const acc = await app.createAccount();
    const r = await receiver();
    await addWebhook(acc, r.url);
    const s = app.rt.services;
    let eventId = '';
    await expect(
      s.db.transaction().execute(async (trx) => {
        eventId = await emitEvent(trx, { accountId: acc.id, kind: 'contact.created', data: { source: 'api' } }, s.clock.now());
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    s.dispatcher.wake();
    await advance(1_000);
    expect(r.received).toHaveLength(0);
    expect(await s.db.selectFrom('events').select('id').where('id', '=', eventId).executeTakeFirst()).toBeUndefined();
  });
  it('outbox: a transaction tells whether it queued a delivery to send (the dispatcher is woken only then)', async () => {
    const s = app.rt.services;
    const queued = async (acc: TestAccount, kind: 'contact.created' | 'message.received') =>
      s.db.transaction().execute(async (trx) => {
        expect(queuedDeliveries(trx)).toBe(false);
        await emitEvent(trx, { accountId: acc.id, kind, data: { source: 'api' } }, s.clock.now());
        return queuedDeliveries(trx);
      });
    const none = await app.createAccount();
    expect(await queued(none, 'contact.created')).toBe(false); // no URL
    const other = await app.createAccount();
    await addWebhook(other, (await receiver()).url, ['message.received']);
    expect(await queued(other, 'contact.created')).toBe(false); // a URL that does not subscribe to it
    const r = await receiver();
    const subscribed = await app.createAccount();
    await addWebhook(subscribed, r.url, ['contact.created']);
    expect(await queued(subscribed, 'contact.created')).toBe(true);
    s.dispatcher.wake();
    await r.waitFor(1);
    // Past the month's deliveries a delivery is recorded as skipped: nothing to send.
    const spent = await app.createAccount({ limits: { webhookDeliveriesPerMonth: 0 } });
    await addWebhook(spent, (await receiver()).url);
    expect(await queued(spent, 'contact.created')).toBe(false);
  });
});

describe('retries (decisions.md: "success = any 2xx … Retries after … ±20 % jitter")', () => {
  it('a receiver answering 500 twice then 200 gets exactly 3 attempts with one webhook-id, all logged', async () => {
    const acc = await app.createAccount();
    const r = await receiver();
    r.queue.push({ status: 500, body: 'E'.repeat(5_000) }, { status: 500, body: 'again' });
    const wh = await addWebhook(acc, r.url);
    await newContact(acc);
    await r.waitFor(1);
    // WEBHOOK_RETRY_SCHEDULE is 1,1,1 in tests: nothing before ~0.8 s, the retry after 1.2 s.
    await advance(700);
    expect(r.received).toHaveLength(1);
    await advance(600);
    await r.waitFor(2);
    await advance(1_300);
    await r.waitFor(3);
    const d = await settled(acc, wh.id, 'succeeded');
    await advance(10_000);
    expect(r.received).toHaveLength(3);
    expect(new Set(r.received.map((x) => x.headers['webhook-id'])).size).toBe(1);
    expect(r.received[0]?.headers['webhook-id']).toBe(d.eventId);
    // Each attempt is signed with its own timestamp.
    expect(Number(r.received[2]?.headers['webhook-timestamp'])).toBeGreaterThan(Number(r.received[0]?.headers['webhook-timestamp']));

    expect(d).toMatchObject({ event: 'contact.created', status: 'succeeded', attempts: 3, lastStatusCode: 200, nextAttemptAt: null });
    const detail = await delivery(acc, wh.id, d.id);
    expect(detail.status).toBe(200);
    expect(detail.body.attemptLog.map((a: any) => [a.attempt, a.trigger, a.statusCode])).toEqual([
      [1, 'scheduled', 500],
      [2, 'scheduled', 500],
      [3, 'scheduled', 200],
    ]);
    expect(detail.body.attemptLog[0].responseExcerpt).toHaveLength(2048);
    expect(detail.body.attemptLog[1].responseExcerpt).toBe('again');
    expect(detail.body.attemptLog[0].durationMs).toEqual(expect.any(Number));
  });

  it('after the last retry of the schedule the delivery is failed', async () => {
    const acc = await app.createAccount();
    const r = await receiver({ status: 502 });
    const wh = await addWebhook(acc, r.url);
    await newContact(acc);
    for (let i = 1; i <= 4; i++) {
      await r.waitFor(i);
      await advance(1_300);
    }
    const d = await settled(acc, wh.id, 'failed');
    expect(d).toMatchObject({ attempts: 4, lastStatusCode: 502, nextAttemptAt: null });
    await advance(5_000);
    expect(r.received).toHaveLength(4);
  });

  it('a 429 or 503 with Retry-After waits at least that long', async () => {
    const acc = await app.createAccount();
    const r = await receiver();
    r.queue.push({ status: 503, headers: { 'retry-after': '30' } });
    const wh = await addWebhook(acc, r.url);
    await newContact(acc);
    await r.waitFor(1);
    const d = await settled(acc, wh.id, 'pending');
    await until(async () => (await deliveries(acc, wh.id)).body.data[0].attempts === 1);
    const pending = (await deliveries(acc, wh.id)).body.data[0];
    expect(Date.parse(pending.nextAttemptAt) - Date.parse(pending.lastAttemptAt)).toBeGreaterThanOrEqual(30_000);
    await advance(5_000);
    expect(r.received).toHaveLength(1);
    await advance(26_000);
    await r.waitFor(2);
    expect((await settled(acc, wh.id, 'succeeded')).id).toBe(d.id);
  });

  it('a 410 disables the URL; re-enabling it replays the undelivered event', async () => {
    const acc = await app.createAccount();
    const r = await receiver();
    r.queue.push({ status: 410 });
    const wh = await addWebhook(acc, r.url);
    await newContact(acc);
    await r.waitFor(1);
    await settled(acc, wh.id, 'failed');
    const list = await app.admin('GET', `/accounts/${acc.id}/webhooks`);
    expect(list.body.data[0]).toMatchObject({ id: wh.id, enabled: false, disabledReason: 'gone' });
    await newContact(acc); // a disabled URL is not subscribed: nothing is queued for it
    await advance(2_000);
    expect(r.received).toHaveLength(1);
    const re = await app.admin('PATCH', `/accounts/${acc.id}/webhooks/${wh.id}`, { enabled: true });
    expect(re.status).toBe(200);
    expect(re.body).toMatchObject({ enabled: true, disabledReason: null });
    await r.waitFor(2);
    expect(r.received[1]?.headers['webhook-id']).toBe(r.received[0]?.headers['webhook-id']);
    await settled(acc, wh.id, 'succeeded');
    await advance(2_000);
    expect(r.received).toHaveLength(2);
  });

  it('redirects are not followed (a 3xx is a failed attempt)', async () => {
    const acc = await app.createAccount();
    const target = await receiver();
    const r = await receiver();
    r.queue.push({ status: 302, headers: { location: `${target.url}/elsewhere` } });
    const wh = await addWebhook(acc, r.url);
    await newContact(acc);
    await r.waitFor(1);
    const d = await until(async () => {
      const x = (await deliveries(acc, wh.id)).body.data[0];
      return x?.attempts === 1 ? x : undefined;
    });
    expect(d).toMatchObject({ status: 'pending', lastStatusCode: 302 });
    expect(target.received).toHaveLength(0);
    const detail = await delivery(acc, wh.id, d.id);
    expect(detail.body.attemptLog[0].error).toMatch(/redirect/);
  });

  it('a receiver that does not answer in time (WEBHOOK_TIMEOUT_MS) is a failed attempt, retried', async () => {
    const acc = await app.createAccount();
    const r = await receiver();
    r.queue.push({ hang: true });
    const wh = await addWebhook(acc, r.url);
    await newContact(acc);
    await r.waitFor(1);
    const d = await until(async () => {
      const x = (await deliveries(acc, wh.id)).body.data[0];
      return x?.attempts === 1 ? x : undefined;
    });
    expect(d).toMatchObject({ status: 'pending', lastStatusCode: null });
    expect((await delivery(acc, wh.id, d.id)).body.attemptLog[0].error).toMatch(/timeout/);
    await advance(1_300);
    await r.waitFor(2);
    await settled(acc, wh.id, 'succeeded');
  });

  it('a slow receiver does not starve the others (bounded concurrency per URL)', async () => {
    const other = await startTestApp({ env: { WEBHOOK_TIMEOUT_MS: '10000' } });
    const slow = await receiver({ hang: true });
    try {
      const slowAcc = await other.createAccount();
      const slowHook = (await other.admin('POST', `/accounts/${slowAcc.id}/webhooks`, { url: slow.url })).body;
      await Promise.all(Array.from({ length: 40 }, () => other.admin('POST', `/accounts/${slowAcc.id}/webhooks/${slowHook.id}/test`)));
      await slow.waitFor(32);
      const acc = await other.createAccount();
      const r = await receiver();
      expect((await other.admin('POST', `/accounts/${acc.id}/webhooks`, { url: r.url })).status).toBe(201);
      await newContactOn(other, acc);
      await r.waitFor(1);
      // It arrived while the slow URL's first 32 attempts hang and the other 8 wait for a slot,
      // and a dispatcher pass over everything due starts none of those 8.
      await advance(0, other);
      expect(slow.received).toHaveLength(32);
    } finally {
      await slow.close(); // ends the hanging attempts, so close() need not wait for them
      await other.close();
    }
  });

  it('disabling a URL parks its pending retry (nextAttemptAt null, nothing sent); re-enabling makes it due at once', async () => {
    const acc = await app.createAccount();
    const r = await receiver({ status: 500 });
    const wh = await addWebhook(acc, r.url);
    await newContact(acc);
    await r.waitFor(1);
    await until(async () => (await deliveries(acc, wh.id)).body.data[0].attempts === 1);
    expect((await deliveries(acc, wh.id)).body.data[0].nextAttemptAt).not.toBeNull();
    expect((await app.admin('PATCH', `/accounts/${acc.id}/webhooks/${wh.id}`, { enabled: false })).status).toBe(200);
    const [parked] = (await deliveries(acc, wh.id)).body.data;
    expect(parked).toMatchObject({ status: 'pending', nextAttemptAt: null });
    await advance(40_000);
    expect(r.received).toHaveLength(1);
    r.fallback = { status: 204 };
    expect((await app.admin('PATCH', `/accounts/${acc.id}/webhooks/${wh.id}`, { enabled: true })).status).toBe(200);
    await r.waitFor(2);
    expect((await settled(acc, wh.id, 'succeeded')).id).toBe(parked.id);
    app.clock.set(Date.now());
  });

  it('a URL whose attempts all failed for 5 days is disabled; re-enabling replays its undelivered events', async () => {
    const acc = await app.createAccount();
    const r = await receiver({ status: 500 });
    const wh = await addWebhook(acc, r.url);
    await newContact(acc);
    for (let i = 1; i <= 4; i++) {
      await r.waitFor(i);
      await advance(1_300);
    }
    await settled(acc, wh.id, 'failed');
    app.clock.advance(5 * 24 * 3600_000);
    await newContact(acc);
    await r.waitFor(5);
    await until(async () => !(await app.admin('GET', `/accounts/${acc.id}/webhooks/${wh.id}`)).body.enabled);
    expect((await app.admin('GET', `/accounts/${acc.id}/webhooks/${wh.id}`)).body.disabledReason).toBe('failing');
    // Disabled: the pending retry waits, parked (no due time), nothing more is sent.
    const parked = (await deliveries(acc, wh.id)).body.data.filter((d: any) => d.status === 'pending');
    expect(parked.length).toBeGreaterThan(0);
    for (const d of parked) expect(d.nextAttemptAt).toBeNull();
    await advance(2_000);
    expect(r.received).toHaveLength(5);

    r.fallback = { status: 204 };
    await app.admin('PATCH', `/accounts/${acc.id}/webhooks/${wh.id}`, { enabled: true });
    await r.waitFor(7);
    const ids = new Set(r.received.map((x) => x.headers['webhook-id']));
    expect(ids.size).toBe(2);
    await until(async () => (await deliveries(acc, wh.id)).body.data.every((d: any) => d.status === 'succeeded'));
    const [newest] = (await deliveries(acc, wh.id)).body.data;
    const log = (await delivery(acc, wh.id, newest.id)).body.attemptLog;
    expect(log.at(-1)).toMatchObject({ trigger: 'manual', statusCode: 204 });
    app.clock.set(Date.now());
  });
});

describe('operations (operator.md "Webhooks")', () => {
  it('POST …/webhooks answers 402 with the upgrade cause at the plan maximum; deleting one frees its place', async () => {
    const acc = await app.createAccount({ plan: 'escala' });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await addWebhook(acc, `http://127.0.0.1:9/h${i}`)).id);
    const sixth = await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url: 'http://127.0.0.1:9/h6' });
    expect(sixth.status).toBe(402);
    expect(sixth.body).toEqual({
      error: expect.stringMatching(/5 URLs de webhook/),
      cause: { type: 'upgrade', reason: 'limit', resource: 'webhookUrls', plan: 'escala', limit: 5, used: 5, suggested: 'enterprise' },
    });
    expect((await app.admin('DELETE', `/accounts/${acc.id}/webhooks/${ids[0]}`)).status).toBe(204);
    expect((await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url: 'http://127.0.0.1:9/h6' })).status).toBe(201);
    expect((await app.admin('GET', `/accounts/${acc.id}/webhooks`)).body.data).toHaveLength(5);
  });

  it('only http and https URLs are accepted (400 otherwise)', async () => {
    const acc = await app.createAccount();
    for (const url of ['ftp://example.com/x', 'javascript:alert(1)', 'not a url', 'file:///etc/passwd']) {
      const res = await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url });
      expect(res.status, url).toBe(400);
      expect(JSON.parse(res.body.error.message)[0].path).toEqual(['url']);
    }
    const bad = await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url: 'https://example.com', events: ['nope'] });
    expect(bad.status).toBe(400);
  });

  it('per-URL event filter: a URL receives only the kinds it subscribes to; PATCH changes them', async () => {
    const acc = await app.createAccount();
    const onlyStatus = await receiver();
    const all = await receiver();
    const wh = await addWebhook(acc, onlyStatus.url, ['message.status']);
    expect(wh).toMatchObject({ events: ['message.status'], enabled: true });
    await addWebhook(acc, all.url);
    await newContact(acc);
    await all.waitFor(1);
    await advance(100);
    expect(onlyStatus.received).toHaveLength(0);
    const p = await app.admin('PATCH', `/accounts/${acc.id}/webhooks/${wh.id}`, { events: ['contact.created', 'message.status'] });
    expect(p.body.events).toEqual(['contact.created', 'message.status']);
    await newContact(acc);
    await onlyStatus.waitFor(1);
    expect(onlyStatus.received[0]?.json.event).toBe('contact.created');
  });

  it('redeliver → 202 and a manual attempt with the same webhook-id', async () => {
    const acc = await app.createAccount();
    const r = await receiver();
    const wh = await addWebhook(acc, r.url);
    await newContact(acc);
    await r.waitFor(1);
    const d = await settled(acc, wh.id, 'succeeded');
    const res = await app.admin('POST', `/accounts/${acc.id}/webhooks/${wh.id}/deliveries/${d.id}/redeliver`);
    expect(res.status).toBe(202);
    await r.waitFor(2);
    expect(r.received[1]?.headers['webhook-id']).toBe(r.received[0]?.headers['webhook-id']);
    await until(async () => (await delivery(acc, wh.id, d.id)).body.attempts === 2);
    const detail = await delivery(acc, wh.id, d.id);
    expect(detail.body.attemptLog.map((a: any) => a.trigger)).toEqual(['scheduled', 'manual']);
    expect((await app.admin('POST', `/accounts/${acc.id}/webhooks/${wh.id}/deliveries/${wh.id}/redeliver`)).status).toBe(404);
  });

  it('deliveries list pages with limit and after, newest first', async () => {
    const acc = await app.createAccount();
    const r = await receiver();
    const wh = await addWebhook(acc, r.url);
    for (let i = 0; i < 3; i++) await newContact(acc);
    await r.waitFor(3);
    const all = (await deliveries(acc, wh.id)).body.data.map((d: any) => d.id);
    expect(all).toHaveLength(3);
    expect([...all].sort().reverse()).toEqual(all);
    const p1 = await app.admin('GET', `/accounts/${acc.id}/webhooks/${wh.id}/deliveries?limit=2`);
    expect(p1.body.data.map((d: any) => d.id)).toEqual(all.slice(0, 2));
    const p2 = await app.admin('GET', `/accounts/${acc.id}/webhooks/${wh.id}/deliveries?limit=2&after=${all[1]}`);
    expect(p2.body.data.map((d: any) => d.id)).toEqual(all.slice(2));
  });

  it('another account cannot see the webhook (404)', async () => {
    const a = await app.createAccount();
    const b = await app.createAccount();
    const wh = await addWebhook(a, 'http://127.0.0.1:9/x');
    expect((await app.admin('GET', `/accounts/${b.id}/webhooks/${wh.id}/deliveries`)).status).toBe(404);
    expect((await app.admin('PATCH', `/accounts/${b.id}/webhooks/${wh.id}`, { enabled: false })).status).toBe(404);
  });
});

describe('quota (api.md §6: "Once the month\'s webhook deliveries are used up, later events are not queued and are never sent, even after renewal")', () => {
  it('past the monthly deliveries, deliveries are recorded as skipped and never sent; retries do not count', async () => {
    const acc = await app.createAccount({ limits: { webhookDeliveriesPerMonth: 2 } });
    const r = await receiver();
    r.queue.push({ status: 500 });
    const wh = await addWebhook(acc, r.url);
    await newContact(acc);
    await r.waitFor(1);
    await advance(1_300); // the retry of the first delivery
    await r.waitFor(2);
    await newContact(acc);
    await r.waitFor(3);
    await newContact(acc);
    // Every attempt recorded before the clock jumps: a lease the jump expires would be claimed again.
    await until(async () => {
      const data = (await deliveries(acc, wh.id)).body.data as { status: string }[];
      return data.length === 3 && data.filter((d) => d.status === 'succeeded').length === 2;
    });
    const list = (await deliveries(acc, wh.id)).body.data;
    expect(list[0]).toMatchObject({ status: 'skipped', skipReason: 'quota', attempts: 0, nextAttemptAt: null });
    const account = await app.admin('GET', `/accounts/${acc.id}`);
    expect(account.body.usage.webhookDeliveries).toBe(2);

    // A new quota month: the skipped one is still never sent, and cannot be redelivered.
    app.clock.advance(32 * 24 * 3600_000);
    await advance(1_000);
    expect(r.received).toHaveLength(3);
    const again = await app.admin('POST', `/accounts/${acc.id}/webhooks/${wh.id}/deliveries/${list[0].id}/redeliver`);
    expect(again.status).toBe(409);
    await newContact(acc);
    await r.waitFor(4);
    app.clock.set(Date.now());
  });
});

describe('SSRF guard (issue 4 "Safety")', () => {
  it('without ALLOW_PRIVATE_WEBHOOKS, loopback/private/link-local URLs are refused at registration and at delivery', async () => {
    const prod = await startTestApp({ env: { ALLOW_PRIVATE_WEBHOOKS: 'off', WEBHOOK_TIMEOUT_MS: '400' }, workers: true });
    try {
      const acc = await prod.createAccount();
      for (const url of [
        'http://127.0.0.1:8080/x',
        'http://localhost/x',
        'http://10.1.2.3/',
        'http://169.254.169.254/latest',
        'http://[::1]/',
        'http://[::ffff:127.0.0.1]/',
      ]) {
        const res = await prod.admin('POST', `/accounts/${acc.id}/webhooks`, { url });
        expect(res.status, url).toBe(400);
      }
      // A name that resolved publicly when registered may point inside later: checked on connect.
      const r = await receiver();
      const port = new URL(r.url).port;
      const s = prod.rt.services;
      for (const url of [`http://localhost:${port}/`, `http://127.0.0.1:${port}/`]) await storeWebhookUnchecked(prod, acc.id, url);
      await newContactOn(prod, acc);
      const rows = await until(async () => {
        const a = await s.db.selectFrom('webhook_attempts').select(['error']).execute();
        const mine = a.filter((x) => x.error?.includes('private address'));
        return mine.length >= 2 ? mine : undefined;
      });
      expect(rows).toHaveLength(2);
      expect(r.received).toHaveLength(0);
    } finally {
      await prod.close();
    }
  });
});

async function newContactOn(a: TestApp, acc: TestAccount) {
  const res = await a.api(acc.key, 'POST', '/contacts', { phone: freshPhone() });
  expect(res.status).toBe(201);
}

describe('graceful shutdown (issue 2: "finish in-flight requests"; the dispatcher stops with the runtime)', () => {
  it('close() waits for an attempt in flight', async () => {
    const other = await startTestApp({ env: { WEBHOOK_TIMEOUT_MS: '3000' } });
    try {
      const acc = await other.createAccount();
      const r = await receiver({ status: 200, delayMs: 400 });
      expect((await other.admin('POST', `/accounts/${acc.id}/webhooks`, { url: r.url })).status).toBe(201);
      await newContactOn(other, acc);
      await r.waitFor(1);
      const t = Date.now();
      await other.close();
      expect(Date.now() - t).toBeGreaterThanOrEqual(300);
    } finally {
      await other.close();
    }
  });

  it.skipIf(!process.env.DATABASE_URL)(
    'close() records the attempt it waited for (read by another process on the same PostgreSQL)',
    async () => {
      const other = await startTestApp({ env: { WEBHOOK_TIMEOUT_MS: '3000' } });
      const reader = await startTestApp({ sameDataAs: other, workers: false });
      try {
        const acc = await other.createAccount();
        const r = await receiver({ status: 200, delayMs: 400 });
        expect((await other.admin('POST', `/accounts/${acc.id}/webhooks`, { url: r.url })).status).toBe(201);
        await newContactOn(other, acc);
        await r.waitFor(1);
        await other.close();
        const rows = await reader.rt.services.db
          .selectFrom('webhook_deliveries')
          .select(['status', 'attempts'])
          .where('account_id', '=', acc.id)
          .execute();
        expect(rows).toEqual([{ status: 'succeeded', attempts: 1 }]);
      } finally {
        await other.close();
        await reader.close();
      }
    },
  );
});

describe.skipIf(!process.env.DATABASE_URL)(
  'several processes (decisions.md: "At-least-once"; issue 4: "several processes never send one attempt twice")',
  () => {
    it('two processes on one PostgreSQL deliver each event exactly once', async () => {
      const a = await startTestApp();
      const b = await startTestApp({ sameDataAs: a });
      try {
        const acc = await a.createAccount();
        const r = await receiver({ status: 200, delayMs: 5 });
        const wh = await a.admin('POST', `/accounts/${acc.id}/webhooks`, { url: r.url });
        expect(wh.status).toBe(201);
        const N = 120;
        for (let i = 0; i < N; i += 12) await Promise.all(Array.from({ length: 12 }, (_, k) => newContactOn((i + k) % 2 ? a : b, acc)));
        await r.waitFor(N, 15_000);
        // Both dispatchers stop: their attempts in flight finish and are recorded, none start.
        await a.rt.dispatcher.stop();
        await b.rt.dispatcher.stop();
        expect(r.received).toHaveLength(N);
        expect(new Set(r.received.map((x) => x.headers['webhook-id'])).size).toBe(N);
        const attempts = await a.rt.services.db
          .selectFrom('webhook_attempts')
          .select(a.rt.services.db.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        expect(Number(attempts.n)).toBe(N);
      } finally {
        await b.close();
        await a.close();
      }
    });
  },
);
