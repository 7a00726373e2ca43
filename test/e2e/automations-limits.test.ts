// Issue 14, rule 4: "Quotas and limits: each executed step counts automationSteps, each http step
// automationHttpRequests, per month (plan table; account overrides via limits
// {automationStepsPerMonth, automationHttpRequestsPerMonth}); past the quota the execution fails
// with automation.failed. POST /hooks/automations/{token} is an API call of the account (minute
// cap 429, monthly quota, 402 on plans without the API: free_trial/crecimiento), body in
// variables.webhook; tokens ≥ 32 random chars, rotatable (old one 404); http steps obey the
// webhook SSRF rule."
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Receiver, startReceiver } from '../fakes/receiver.js';
import { freshPhone, request, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
let r: Receiver;

beforeAll(async () => {
  app = await startTestApp();
  r = await startReceiver({ status: 200, body: '{"ok":true}', headers: { 'content-type': 'application/json' } });
});
afterAll(async () => {
  await r?.close();
  await app?.close();
});

const runDue = (a: TestApp = app) => a.admin('POST', '/jobs/automations/run');

async function createFlow(acct: TestAccount, body: Record<string, unknown>, a: TestApp = app) {
  const res = await a.admin('POST', `/accounts/${acct.id}/automations`, { status: 'active', name: 'Límites', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function getExecution(acct: TestAccount, automationId: string, id: string, a: TestApp = app) {
  const res = await a.admin('GET', `/accounts/${acct.id}/automations/${automationId}/executions/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

/** GET /me's usage, past the 2 s the account view is kept. */
async function usage(acct: TestAccount, a: TestApp = app) {
  a.clock.advance(3_000);
  const me = await acct.call('GET', '/me');
  expect(me.status).toBe(200);
  return me.body.usage;
}

/** Starts the flow through the public API (201: it ran to its first wait or its end). */
async function start(acct: TestAccount, automationId: string, to: string, a: TestApp = app) {
  const res = await a.api(acct.key, 'POST', `/automations/${automationId}/executions`, { to });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

const hookToken = (webhookUrl: string) => webhookUrl.split('/').pop() as string;
const hook = (token: string, body: unknown) => request(`${app.url}/hooks/automations/${token}`, 'POST', body);

/** The next minute of the injected clock starts (a fresh minute window). */
const nextMinute = () => app.clock.set(Math.floor(app.clock.ms() / 60_000 + 1) * 60_000);

describe('"each executed step counts automationSteps, each http step automationHttpRequests"', () => {
  it('ask (each time it asks), http, wait and end count; the answer and the timer do not; test executions count nothing', async () => {
    const acct = await app.createAccount();
    const flow = await createFlow(acct, {
      trigger: { type: 'api' },
      steps: [
        { id: 'q', type: 'ask', text: '¿Qué querés pedir?', save: 'pedido', options: ['Empanadas', 'Pizza'] },
        { id: 'h', type: 'http', method: 'POST', url: `${r.url}/pedidos`, body: { pedido: '{{pedido}}' }, save: 'crm' },
        { id: 'w', type: 'wait', minutes: 5 },
        { id: 'e', type: 'end' },
      ],
    });
    const to = freshPhone();
    const opened = await app.inbound({ accountId: acct.id, from: to, text: 'Buenas' }); // the 24-hour window
    expect(opened.status).toBe(201);
    const before = await usage(acct);
    expect([before.automationSteps, before.automationHttpRequests]).toEqual([0, 0]);

    const e = await start(acct, flow.id, to);
    expect(e.currentStepId).toBe('q');
    let u = await usage(acct);
    expect([u.automationSteps, u.automationHttpRequests]).toEqual([1, 0]); // the question

    await app.inbound({ accountId: acct.id, from: to, text: 'Milanesa' }); // no option: asked again
    await runDue();
    u = await usage(acct);
    expect([u.automationSteps, u.automationHttpRequests]).toEqual([2, 0]); // the question asked again
    await app.inbound({ accountId: acct.id, from: to, text: '1' });
    await runDue();
    u = await usage(acct);
    expect([u.automationSteps, u.automationHttpRequests]).toEqual([4, 1]); // + http, + wait (the answer is not a step)
    expect(r.received.at(-1)?.json).toEqual({ pedido: 'Empanadas' });

    app.clock.advance(5 * 60_000);
    await runDue();
    const done = await getExecution(acct, flow.id, e.id);
    expect(done.status).toBe('completed');
    u = await usage(acct);
    expect([u.automationSteps, u.automationHttpRequests]).toEqual([5, 1]); // + end (the timer firing is not a step)

    // "Test executions count nothing": the same flow as a test, run to its wait.
    const test = await createFlow(acct, {
      name: 'Prueba',
      status: 'draft',
      trigger: { type: 'api' },
      steps: [
        { id: 'h', type: 'http', method: 'GET', url: `${r.url}/prueba` },
        { id: 'e', type: 'end' },
      ],
    });
    const got = r.received.length;
    const t = await app.admin('POST', `/accounts/${acct.id}/automations/${test.id}/test`, { to: freshPhone() });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    expect(t.body).toMatchObject({ status: 'completed', test: true });
    expect(r.received.length).toBe(got + 1); // the request really went out
    u = await usage(acct);
    expect([u.automationSteps, u.automationHttpRequests]).toEqual([5, 1]);
  });
});

describe('"past the quota the execution fails with automation.failed"', () => {
  it('limits {automationStepsPerMonth: 3}: the step that would pass it does not run; "Se agotaron los pasos…" and automation.failed', async () => {
    const acct = await app.createAccount({ limits: { automationStepsPerMonth: 3 } });
    const flow = await createFlow(acct, {
      trigger: { type: 'api' },
      steps: [
        { id: 'a', type: 'set_attribute', attribute: 'origen', value: 'bot' },
        { id: 'b', type: 'condition', if: { var: 'origen', op: 'exists' } },
        { id: 'h', type: 'http', method: 'POST', url: `${r.url}/uno` },
        { id: 's', type: 'send', text: 'No tiene que salir' },
        { id: 'e', type: 'end' },
      ],
    });
    const to = freshPhone();
    const opened = await app.inbound({ accountId: acct.id, from: to, text: 'Hola' });
    const got = r.received.length;
    const e = await start(acct, flow.id, to);
    const error = 'Se agotaron los pasos de automatización del mes (3). Mejorá el plan o esperá al día 1 para que sigan.';
    expect(e).toMatchObject({ status: 'failed', error });
    expect(r.received.length).toBe(got + 1);
    const full = await getExecution(acct, flow.id, e.id);
    expect(full.steps.map((x: any) => x.stepId)).toEqual(['a', 'b', 'h']);
    const msgs = await acct.call('GET', `/conversations/${opened.body.conversationId}/messages`);
    expect(msgs.body.data.filter((m: any) => m.from === 'automation')).toEqual([]);
    const failed = await app.events(acct.id, 'automation.failed');
    expect(failed.map((x) => x.data)).toEqual([expect.objectContaining({ executionId: e.id, status: 'failed', error })]);
    const u = await usage(acct);
    expect([u.automationSteps, u.automationHttpRequests]).toEqual([3, 1]);

    // The next execution of the month fails at its first step.
    const again = await start(acct, flow.id, freshPhone());
    expect(again).toMatchObject({ status: 'failed', error });
    expect((await getExecution(acct, flow.id, again.id)).steps).toEqual([]);
  });

  it('limits {automationHttpRequestsPerMonth: 1}: the second http step does not go out; "Se agotaron los pedidos HTTP…"', async () => {
    const acct = await app.createAccount({ limits: { automationHttpRequestsPerMonth: 1 } });
    const flow = await createFlow(acct, {
      trigger: { type: 'api' },
      steps: [
        { id: 'h1', type: 'http', method: 'POST', url: `${r.url}/primero` },
        { id: 'h2', type: 'http', method: 'POST', url: `${r.url}/segundo`, onError: 'e' },
        { id: 'e', type: 'end' },
      ],
    });
    const e = await start(acct, flow.id, freshPhone());
    const error = 'Se agotaron los pedidos HTTP de automatización del mes (1). Mejorá el plan o esperá al día 1.';
    expect(e).toMatchObject({ status: 'failed', error });
    expect(r.received.filter((x) => x.path === '/segundo')).toHaveLength(0);
    expect(r.received.filter((x) => x.path === '/primero')).toHaveLength(1);
    expect((await app.events(acct.id, 'automation.failed')).map((x) => x.data)).toEqual([
      expect.objectContaining({ executionId: e.id, error }),
    ]);
    const u = await usage(acct);
    expect([u.automationSteps, u.automationHttpRequests]).toEqual([1, 1]);
  });
});

describe('"POST /hooks/automations/{token} is an API call of the account"', () => {
  async function webhookFlow(acct: TestAccount, extra: Record<string, unknown> = {}) {
    return createFlow(acct, {
      name: 'Webhook',
      trigger: { type: 'webhook' },
      steps: [{ id: 'e', type: 'end' }],
      ...extra,
    });
  }

  it('"tokens ≥ 32 random chars": 202 {executionId}, the whole body in variables.webhook', async () => {
    const acct = await app.createAccount();
    const flow = await webhookFlow(acct);
    expect(flow.webhookUrl).toMatch(/\/hooks\/automations\/[A-Za-z0-9_-]+$/);
    const token = hookToken(flow.webhookUrl);
    expect(token.length).toBeGreaterThanOrEqual(32);
    const other = hookToken((await webhookFlow(acct)).webhookUrl);
    expect(other).not.toBe(token);

    const phone = freshPhone();
    const body = { phone, pedido: { id: 981, items: ['remera'] }, total: 12.5 };
    const res = await hook(token, body);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(Object.keys(res.body)).toEqual(['executionId']);
    await runDue();
    const e = await acct.call('GET', `/automations/${flow.id}/executions/${res.body.executionId}`);
    expect(e.status).toBe(200);
    expect(e.body).toMatchObject({ status: 'completed', variables: { webhook: body } });
  });

  it('unknown token → 404; "rotatable (old one 404)"; missing or invalid phone → 400; not active → 409', async () => {
    const acct = await app.createAccount();
    const flow = await webhookFlow(acct);
    const old = hookToken(flow.webhookUrl);
    const unknown = await hook('A'.repeat(43), { phone: freshPhone() });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatch(/webhook entrante/);
    expect((await hook('corto', { phone: freshPhone() })).status).toBe(404);

    const rotated = await app.admin('POST', `/accounts/${acct.id}/automations/${flow.id}/rotate-webhook`);
    expect(rotated.status).toBe(200);
    const fresh = hookToken(rotated.body.webhookUrl);
    expect(fresh).not.toBe(old);
    expect(fresh.length).toBeGreaterThanOrEqual(32);
    expect((await hook(old, { phone: freshPhone() })).status).toBe(404);
    expect((await hook(fresh, { phone: freshPhone() })).status).toBe(202);

    const missing = await hook(fresh, { nombre: 'Ana' });
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.body)).toMatch(/phone/);
    expect((await hook(fresh, { phone: 'no es un teléfono' })).status).toBe(400);
    expect((await hook(fresh, [{ phone: freshPhone() }])).status).toBe(400);
    expect((await hook(fresh, { phone: 5491112345678 })).status).toBe(400);

    expect((await app.admin('PATCH', `/accounts/${acct.id}/automations/${flow.id}`, { status: 'paused' })).status).toBe(200);
    const paused = await hook(fresh, { phone: freshPhone() });
    expect(paused.status).toBe(409);
    expect(paused.body.error).toMatch(/no está activa/);
  });

  it('"402 on plans without the API" (crecimiento) with the upgrade cause', async () => {
    const acct = await app.createAccount({ plan: 'crecimiento' });
    const flow = await webhookFlow(acct);
    const res = await hook(hookToken(flow.webhookUrl), { phone: freshPhone() });
    expect(res.status).toBe(402);
    expect(res.body).toEqual({
      error: expect.stringMatching(/crecimiento/),
      cause: { type: 'upgrade', reason: 'plan', resource: 'api', plan: 'crecimiento', limit: null, used: null, suggested: 'escala' },
    });
    const list = await app.admin('GET', `/accounts/${acct.id}/automations/${flow.id}/executions`);
    expect(list.body.data).toEqual([]);
  });

  it('"minute cap 429": limits {requestsPerMinute: 2} → the third call 429 with Retry-After; the calls count in apiCalls', async () => {
    nextMinute();
    const acct = await app.createAccount({ limits: { requestsPerMinute: 2 } });
    const flow = await webhookFlow(acct);
    const token = hookToken(flow.webhookUrl);
    expect((await hook(token, { phone: freshPhone() })).status).toBe(202);
    expect((await hook(token, { phone: freshPhone() })).status).toBe(202);
    const over = await hook(token, { phone: freshPhone() });
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(over.headers.get('x-ratelimit-limit')).toBe('2');
    const list = await app.admin('GET', `/accounts/${acct.id}/automations/${flow.id}/executions`);
    expect(list.body.data).toHaveLength(2);
    // The operator reads the usage (a GET /me would itself meet the cap).
    app.clock.advance(3_000);
    const acc = await app.admin('GET', `/accounts/${acct.id}`);
    expect(acc.body.usage.apiCalls).toBe(2);
  });

  it('"monthly quota": limits {apiCallsPerMonth: 1} → the second call 429 with the upgrade cause', async () => {
    const acct = await app.createAccount({ limits: { apiCallsPerMonth: 1 } });
    const token = hookToken((await webhookFlow(acct)).webhookUrl);
    expect((await hook(token, { phone: freshPhone() })).status).toBe(202);
    const over = await hook(token, { phone: freshPhone() });
    expect(over.status).toBe(429);
    expect(over.body.cause).toMatchObject({ type: 'upgrade', reason: 'limit', resource: 'apiCalls', limit: 1 });
  });
});

describe('"http steps obey the webhook SSRF rule"', () => {
  it('with ALLOW_PRIVATE_WEBHOOKS off, an http step to 127.0.0.1 or localhost is refused: onError, else the execution fails; the receiver gets nothing', async () => {
    // A literal 127.0.0.1 is refused at save (test/e2e/guard-doors.test.ts): here the address
    // comes from a variable, known only when the step runs.
    const strict = await startTestApp({ env: { ALLOW_PRIVATE_WEBHOOKS: 'off' } });
    try {
      const acct = await strict.createAccount();
      const port = new URL(r.url).port;
      const got = r.received.length;
      const withOnError = await createFlow(
        acct,
        {
          trigger: { type: 'api' },
          steps: [
            { id: 'h', type: 'http', method: 'POST', url: '{{{base}}}/ssrf', onError: 'x', save: 'res' },
            { id: 'ok', type: 'end' },
            { id: 'x', type: 'set_attribute', attribute: 'crm', value: 'caido' },
          ],
        },
        strict,
      );
      const started = await strict.api(acct.key, 'POST', `/automations/${withOnError.id}/executions`, {
        to: freshPhone(),
        variables: { base: `http://127.0.0.1:${port}` },
      });
      expect(started.status, JSON.stringify(started.body)).toBe(201);
      const a = started.body;
      expect(a.status).toBe('completed');
      const full = await getExecution(acct, withOnError.id, a.id, strict);
      expect(full.steps.map((x: any) => `${x.stepId}:${x.outcome}`)).toEqual(['h:error', 'x:ok']);
      expect(full.steps[0].detail).toMatchObject({ reason: 'la dirección es privada o local y no está permitida' });

      const without = await createFlow(
        acct,
        {
          trigger: { type: 'api' },
          steps: [
            { id: 'h', type: 'http', method: 'GET', url: `http://localhost:${port}/ssrf` },
            { id: 'e', type: 'end' },
          ],
        },
        strict,
      );
      const b = await start(acct, without.id, freshPhone(), strict);
      expect(b).toMatchObject({
        status: 'failed',
        error: 'El pedido HTTP del paso "h" falló (la dirección es privada o local y no está permitida) y el paso no tiene onError.',
      });
      expect(r.received.length).toBe(got);
    } finally {
      await strict.close();
    }
  });
});
