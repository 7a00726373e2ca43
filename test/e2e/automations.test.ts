// Automations (docs/automations.md): flows run for real through the sandbox.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { automationsOf } from '../automations.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
let acct: TestAccount;

beforeAll(async () => {
  app = await startTestApp();
  acct = await app.createAccount();
});
afterAll(() => app?.close());

const { runDue, createFlow, lastExecution } = automationsOf(() => app);

describe('keyword flow through the sandbox', () => {
  it('"hola" → ask with options → answer → send → handoff', async () => {
    const a = await createFlow(acct, {
      name: 'Bienvenida',
      trigger: { type: 'keyword', keywords: ['hola'], match: 'contains' },
      steps: [
        { id: 'q', type: 'ask', text: '¿Qué producto?', save: 'producto', options: ['Zapatillas', 'Remeras'] },
        { id: 's', type: 'send', text: 'Gracias por elegir {{producto}}' },
        { id: 'h', type: 'handoff', note: 'Consulta por {{producto}}' },
      ],
    });
    const from = freshPhone();
    const r = await app.inbound({ accountId: acct.id, from, text: '¡Hola!' });
    expect(r.status).toBe(201);
    await runDue();
    let e = await lastExecution(acct, a.id);
    expect(e.status).toBe('running');
    expect(e.currentStepId).toBe('q');
    await app.inbound({ accountId: acct.id, from, text: '2' });
    await runDue();
    e = await lastExecution(acct, a.id);
    expect(e.status, JSON.stringify(e)).toBe('handed_off');
    expect(e.variables).toMatchObject({ producto: 'Remeras', respuesta: 'Remeras' });
    const msgs = await acct.call('GET', `/conversations/${r.body.conversationId}/messages`);
    const texts = msgs.body.data.map((m: any) => `${m.from}:${m.text}`);
    expect(texts).toEqual([
      'contact:¡Hola!',
      'automation:¿Qué producto?\n\n1. Zapatillas\n2. Remeras',
      'contact:2',
      'automation:Gracias por elegir Remeras',
    ]);
    const ev = await app.events(acct.id, 'automation.completed');
    expect(ev.at(-1)?.data).toMatchObject({ executionId: e.id, status: 'handed_off', error: null });
    const conv = await acct.call('GET', `/conversations/${r.body.conversationId}`);
    expect(conv.body.handling.type).toBe('team');
  });
});

describe('usage of an account without a step quota', () => {
  it('"each executed step counts automationSteps": an enterprise account (no quota) counts them in memory, shown by GET /me and written in the next batch', async () => {
    const ent = await app.createAccount({ plan: 'enterprise' });
    const r = await app.admin('POST', `/accounts/${ent.id}/automations`, {
      name: 'Sin cuota',
      status: 'active',
      trigger: { type: 'api' },
      steps: [
        { id: 'c', type: 'condition', if: { var: 'x', op: 'exists' } },
        { id: 'a', type: 'set_attribute', attribute: 'origen', value: 'flujo' },
        { id: 'e', type: 'end' },
      ],
    });
    expect(r.status).toBe(201);
    const start = await ent.call('POST', `/automations/${r.body.id}/executions`, { to: freshPhone() });
    expect(start.status).toBe(201);
    await runDue();
    app.clock.advance(3_000);
    const me = await ent.call('GET', '/me');
    expect(me.body.usage.automationSteps).toBe(3);
    await app.rt.services.usage.flush();
    const rows = await app.rt.services.db
      .selectFrom('usage_counters')
      .select(['count'])
      .where('account_id', '=', ent.id)
      .where('resource', '=', 'automationSteps')
      .execute();
    expect(rows.map((x) => Number(x.count))).toEqual([3]);
  });
});

describe('the incoming webhook URL', () => {
  it('"webhookUrl (shown in full to the operator)": without PUBLIC_URL it is this server\'s own address, and a POST to it starts the flow (202)', async () => {
    const r = await app.admin('POST', `/accounts/${acct.id}/automations`, {
      name: 'Desde el CRM',
      status: 'active',
      trigger: { type: 'webhook' },
      steps: [{ id: 'e', type: 'end' }],
    });
    expect(r.status).toBe(201);
    expect(r.body.webhookUrl.startsWith(`${app.url}/hooks/automations/`)).toBe(true);
    const res = await fetch(r.body.webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ phone: freshPhone(), pedido: '1234' }),
    });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ executionId: expect.any(String) });
  });
});
