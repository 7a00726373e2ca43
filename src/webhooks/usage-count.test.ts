// api.md §1 "A webhook delivery is each event to each URL; retries of one delivery do not add":
// accounts without a delivery limit are counted when each delivery's first attempt is recorded
// (outbox.ts, countsAtFirstAttempt), not while queueing; the count must stay exact.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Receiver, startReceiver } from '../../test/fakes/receiver.js';
import { startTestApp, type TestApp } from '../../test/harness.js';

let app: TestApp;
let r: Receiver;
beforeAll(async () => {
  app = await startTestApp({ env: { WEBHOOK_TIMEOUT_MS: '400' } });
  r = await startReceiver();
});
afterAll(async () => {
  await app?.close();
  await r?.close();
});

it('an account without a delivery limit counts each delivery once: two URLs, one retried', async () => {
  const acc = await app.createAccount({ limits: { webhookDeliveriesPerMonth: null } });
  r.queue.push({ status: 500 });
  for (const path of ['/a', '/b'])
    expect((await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url: `${r.url}${path}` })).status).toBe(201);
  for (const phone of ['+54 9 11 7000-0001', '+54 9 11 7000-0002'])
    expect((await acc.call('POST', '/contacts', { phone })).status).toBe(201);
  await r.waitFor(4);
  // The failed one's retry (5 s by the schedule) is an attempt, not a delivery.
  app.clock.advance(6_000);
  expect((await app.admin('POST', '/jobs/webhooks/run')).status).toBe(200);
  await r.waitFor(5);
  const usage = async () => (await app.admin('GET', `/accounts/${acc.id}`)).body.usage.webhookDeliveries;
  const end = Date.now() + 5_000;
  while ((await usage()) !== 4 && Date.now() < end) await new Promise((t) => setTimeout(t, 20));
  expect(await usage()).toBe(4);
  app.clock.set(Date.now());
});
