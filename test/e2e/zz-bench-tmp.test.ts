import { afterAll, beforeAll, it } from 'vitest';
import { startTestApp, type TestApp } from '../harness.js';
let app: TestApp;
beforeAll(async () => { app = await startTestApp({ workers: false }); });
afterAll(async () => { await app?.close(); });
it('bench', async () => {
  const acc = await app.createAccount({ limits: { contacts: null, requestsPerMinute: null } as any });
  const p = (await app.admin('POST', `/accounts/${acc.id}/pipelines`, { name: 'V', stages: [{ name: 'N', kind: 'open' }, { name: 'L', kind: 'lost' }] })).body;
  const t = (await app.admin('POST', `/accounts/${acc.id}/templates`, { name: 'b', category: 'UTILITY', body: 'Hola', variables: [], status: 'APPROVED' })).body;
  const N = 500;
  let t0 = performance.now();
  for (let i = 0; i < N; i++) {
    await app.inbound({ accountId: acc.id, from: `54911${String(20000000 + i)}`, text: 'hola' });
  }
  const inb = performance.now() - t0;
  t0 = performance.now();
  for (let i = 0; i < 20; i++) await acc.call('GET', `/pipelines/${p.id}/cases?limit=50&offset=${i * 20}`);
  const list = (performance.now() - t0) / 20;
  t0 = performance.now();
  const c = await app.admin('POST', `/accounts/${acc.id}/campaigns`, { name: 'x', templateId: t.id });
  const create = performance.now() - t0;
  t0 = performance.now();
  const r = await app.admin('POST', '/jobs/campaigns/run');
  const send = performance.now() - t0;
  app.clock.advance(25 * 3600e3);
  t0 = performance.now();
  const ct = await app.admin('POST', '/jobs/case-timeouts/run');
  const timeouts = performance.now() - t0;
  const done = await acc.call('GET', `/campaigns/${c.body.id}`);
  console.log(JSON.stringify({ inboundPerMsgMs: inb / N, listMs: list, createCampaignMs: create, recipients: c.body.recipients, sendMs: send, msgsPerSec: (N / send) * 1000, changed: r.body.changed, status: done.body.status, sent: done.body.sent, timeoutsMs: timeouts, closed: ct.body.changed }));
}, 600_000);
