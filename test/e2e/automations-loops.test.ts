// Issue 25, item 2: "An automation can restart itself without end. A webhook-triggered flow whose
// http step POSTs to its own hook URL made 1,329 executions in 26 s. Bound it: a hop count carried
// on our own outgoing requests (a header that our hook receiver reads; past 3 hops → refused with
// a clear error in the step log), and a per-automation start rate (e.g. 600 a minute by default,
// operator-adjustable) beyond which starts are refused with 429 and counted."
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { automationsOf } from '../automations.js';
import { type Receiver, startReceiver } from '../fakes/receiver.js';
import { ADMIN_TOKEN, freshPhone, request, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
let r: Receiver;
const { runDue, createFlow, executions, execution, writes } = automationsOf(() => app);

beforeAll(async () => {
  app = await startTestApp();
  r = await startReceiver({ status: 200, body: '{"ok":true}', headers: { 'content-type': 'application/json' } });
});
afterAll(async () => {
  await r?.close();
  await app?.close();
});

const tokenOf = (webhookUrl: string) => webhookUrl.split('/').pop() as string;
const hook = (token: string, body: unknown, headers: Record<string, string> = {}) =>
  request(`${app.url}/hooks/automations/${token}`, 'POST', body, headers);

/** Runs what is due until none of the automation's executions runs and no new one appears. */
async function settle(acct: TestAccount, automationId: string): Promise<any[]> {
  let last = -1;
  for (let i = 0; i < 60; i++) {
    await runDue();
    const list = await executions(acct, automationId);
    if (list.length === last && list.every((e) => e.status !== 'running')) return list.reverse();
    last = list.length;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error('the executions did not settle');
}

/** The count of chasqui_limit_refusals_total{limit} in GET /metrics. */
async function refusals(limit: string): Promise<number> {
  const res = await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(res.status).toBe(200);
  const m = new RegExp(`^chasqui_limit_refusals_total\\{limit="${limit}"\\} (\\d+)$`, 'm').exec(await res.text());
  return m ? Number(m[1]) : 0;
}

const nextMinute = () => app.clock.set(Math.floor(app.clock.ms() / 60_000 + 1) * 60_000);

describe('"a hop count carried on our own outgoing requests … past 3 hops → refused with a clear error in the step log"', () => {
  it('a webhook flow whose http step POSTs to its own hook URL makes 4 executions and stops; the last step log says it called itself in a loop (a Chasqui-Hop the author writes is replaced)', async () => {
    const acct = await app.createAccount();
    const a = await createFlow(acct, {
      name: 'Se llama sola',
      trigger: { type: 'webhook' },
      steps: [{ id: 'e', type: 'end' }],
    });
    // Each start passes the next phone on (one conversation runs one execution at a time), eight of them.
    const phones = Array.from({ length: 8 }, () => freshPhone());
    const shifted = Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`p${i + 1}`, `{{webhook.p${i + 2}}}`]));
    const patched = await app.admin('PATCH', `/accounts/${acct.id}/automations/${a.id}`, {
      steps: [
        {
          id: 'otra-vez',
          type: 'http',
          method: 'POST',
          url: `${app.url}/hooks/automations/${tokenOf(a.webhookUrl)}`,
          headers: { 'Chasqui-Hop': '0' },
          body: { phone: '{{webhook.p1}}', ...shifted },
        },
      ],
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const first = await hook(tokenOf(a.webhookUrl), {
      phone: phones[0],
      ...Object.fromEntries(phones.slice(1).map((p, i) => [`p${i + 1}`, p])),
    });
    expect(first.status, JSON.stringify(first.body)).toBe(202);

    const list = await settle(acct, a.id);
    expect(list).toHaveLength(4);
    const full = await Promise.all(list.map((e) => execution(acct, a.id, e.id)));
    expect(full.map((e) => e.variables.webhook.phone)).toEqual(phones.slice(0, 4));
    expect(full.slice(0, 3).map((e) => e.status)).toEqual(['completed', 'completed', 'completed']);
    const lastOne = full[3];
    expect(lastOne.status).toBe('failed');
    expect(lastOne.error).toContain('se llamó a sí misma en bucle');
    const step = lastOne.steps.at(-1);
    expect(step).toMatchObject({ stepId: 'otra-vez', outcome: 'failed', detail: { status: 508 } });
    expect(step.detail.reason).toMatch(/se llamó a sí misma en bucle: se rechazó el salto 4 \(se permiten 3 saltos\)/);
    expect(step.detail.reason).not.toContain('no se pudo conectar');
  });

  it('"its http steps send N+1": Chasqui-Hop 1 from an execution started otherwise, N+1 from one the hook started with hop N', async () => {
    const acct = await app.createAccount();
    const a = await createFlow(acct, {
      name: 'Avisa',
      trigger: { type: 'webhook' },
      steps: [{ id: 'h', type: 'http', method: 'POST', url: `${r.url}/aviso`, body: { ok: true } }],
    });
    const got = r.received.length;
    const api = await acct.call('POST', `/automations/${a.id}/executions`, { to: freshPhone() });
    expect(api.status, JSON.stringify(api.body)).toBe(201);
    await settle(acct, a.id);
    expect((await hook(tokenOf(a.webhookUrl), { phone: freshPhone() })).status).toBe(202);
    await settle(acct, a.id);
    expect((await hook(tokenOf(a.webhookUrl), { phone: freshPhone() }, { 'Chasqui-Hop': '2' })).status).toBe(202);
    await settle(acct, a.id);
    const sent = (await r.waitFor(got + 3)).slice(got).map((x) => x.headers['chasqui-hop']);
    expect(sent).toEqual(['1', '1', '3']);
  });

  it('the hook (and the API start): Chasqui-Hop 3 starts (the 4th chained execution), 4 is 508 Loop Detected with a Spanish error and starts nothing, a non-number is 400', async () => {
    const acct = await app.createAccount();
    const a = await createFlow(acct, { name: 'Cadena', trigger: { type: 'webhook' }, steps: [{ id: 'e', type: 'end' }] });
    const token = tokenOf(a.webhookUrl);
    expect((await hook(token, { phone: freshPhone() }, { 'Chasqui-Hop': '3' })).status).toBe(202);
    const loop = await hook(token, { phone: freshPhone() }, { 'Chasqui-Hop': '4' });
    expect(loop.status).toBe(508);
    expect(loop.headers.get('chasqui-hop')).toBe('4');
    expect(loop.body.error).toMatch(/^La automatización se llamó a sí misma en bucle/);
    const bad = await hook(token, { phone: freshPhone() }, { 'Chasqui-Hop': 'uno' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('Chasqui-Hop');
    // The API's start (an http step can call it with a key) reads it the same way.
    const api = await acct.call('POST', `/automations/${a.id}/executions`, { to: freshPhone() }, { 'Chasqui-Hop': '4' });
    expect(api.status).toBe(508);
    expect(await executions(acct, a.id)).toHaveLength(1);
  });
});

describe('"a per-automation start rate (e.g. 600 a minute by default, operator-adjustable) beyond which starts are refused with 429 and counted"', () => {
  it('startsPerMinute: 600 by default, PATCH 1..100,000 (0 and 100,001 are 400), null goes back to the default; the public list does not show it', async () => {
    const acct = await app.createAccount();
    const a = await createFlow(acct, { name: 'Ritmo', trigger: { type: 'webhook' }, steps: [{ id: 'e', type: 'end' }] });
    expect(a.startsPerMinute).toBe(600);
    const path = `/accounts/${acct.id}/automations/${a.id}`;
    expect((await app.admin('PATCH', path, { startsPerMinute: 0 })).status).toBe(400);
    expect((await app.admin('PATCH', path, { startsPerMinute: 100_001 })).status).toBe(400);
    expect((await app.admin('PATCH', path, { startsPerMinute: 100_000 })).body.startsPerMinute).toBe(100_000);
    expect((await app.admin('PATCH', path, { startsPerMinute: null })).body.startsPerMinute).toBe(600);
    const pub = await acct.call('GET', '/automations');
    expect(pub.body.data[0]).not.toHaveProperty('startsPerMinute');
  });

  it('at 5 a minute the 6th hook call is 429 with Retry-After and a Spanish error, counted as chasqui_limit_refusals_total{limit="automation_starts"}; the next minute starts again', async () => {
    const acct = await app.createAccount();
    const a = await createFlow(acct, {
      name: 'Cinco',
      trigger: { type: 'webhook' },
      steps: [{ id: 'e', type: 'end' }],
      startsPerMinute: 5,
    });
    expect(a.startsPerMinute).toBe(5);
    nextMinute();
    app.clock.advance(15_000);
    const token = tokenOf(a.webhookUrl);
    for (let i = 0; i < 5; i++) expect((await hook(token, { phone: freshPhone() })).status).toBe(202);
    const before = await refusals('automation_starts');
    const sixth = await hook(token, { phone: freshPhone() });
    expect(sixth.status).toBe(429);
    expect(sixth.headers.get('retry-after')).toBe('45');
    expect(sixth.body.error).toBe(
      'La automatización superó su límite de 5 inicios por minuto. Esperá un minuto y probá de nuevo; si necesitás más, pedí que suban el límite.',
    );
    // The API start is a start too.
    expect((await acct.call('POST', `/automations/${a.id}/executions`, { to: freshPhone() })).status).toBe(429);
    expect(await refusals('automation_starts')).toBe(before + 2);
    expect(await executions(acct, a.id)).toHaveLength(5);
    // Another automation of the account has its own count.
    const b = await createFlow(acct, { name: 'Otra', trigger: { type: 'webhook' }, steps: [{ id: 'e', type: 'end' }], startsPerMinute: 5 });
    expect((await hook(tokenOf(b.webhookUrl), { phone: freshPhone() })).status).toBe(202);
    nextMinute();
    expect((await hook(token, { phone: freshPhone() })).status).toBe(202);
  });

  it('a start from an inbound message past the rate is not started, and counted; an operator test is not held by it', async () => {
    const acct = await app.createAccount();
    const a = await createFlow(acct, {
      name: 'Hola',
      trigger: { type: 'keyword', keywords: ['hola'], match: 'exact' },
      steps: [{ id: 'e', type: 'end' }],
      startsPerMinute: 1,
    });
    nextMinute();
    const before = await refusals('automation_starts');
    await writes(acct, freshPhone(), 'hola');
    await writes(acct, freshPhone(), 'hola');
    expect(await executions(acct, a.id)).toHaveLength(1);
    expect(await refusals('automation_starts')).toBe(before + 1);
    const t = await app.admin('POST', `/accounts/${acct.id}/automations/${a.id}/test`, { to: freshPhone() });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
  });

  const shared = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL);

  it.skipIf(!shared)('two app instances on one PostgreSQL + Redis share the start rate: 3 + 2 starts, then both answer 429', async () => {
    const other = await startTestApp({ sameDataAs: app, clock: app.clock });
    try {
      const acct = await app.createAccount();
      const a = await createFlow(acct, {
        name: 'Dos',
        trigger: { type: 'webhook' },
        steps: [{ id: 'e', type: 'end' }],
        startsPerMinute: 5,
      });
      nextMinute();
      const token = tokenOf(a.webhookUrl);
      const on = (t: TestApp) => request(`${t.url}/hooks/automations/${token}`, 'POST', { phone: freshPhone() });
      for (let i = 0; i < 3; i++) expect((await on(app)).status).toBe(202);
      for (let i = 0; i < 2; i++) expect((await on(other)).status).toBe(202);
      expect((await on(other)).status).toBe(429);
      expect((await on(app)).status).toBe(429);
    } finally {
      await other.close();
    }
  });
});
