// Issue 14, rule 8: "Operator API: CRUD, status changes, rotate-webhook, executions
// list/get/cancel, test runs; team replies POST /admin/v1/accounts/{id}/conversations/{cid}/messages
// cancel a running execution." (docs/operator.md "Automations")
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

const runDue = () => app.admin('POST', '/jobs/automations/run');
const base = (acct: TestAccount) => `/accounts/${acct.id}/automations`;

async function create(acct: TestAccount, body: Record<string, unknown>) {
  const r = await app.admin('POST', base(acct), body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

const askFlow = (keyword: string) => ({
  name: `Pregunta ${keyword}`,
  status: 'active',
  trigger: { type: 'keyword', keywords: [keyword], match: 'exact' },
  steps: [
    { id: 'q', type: 'ask', text: '¿En qué te ayudo?', save: 'consulta' },
    { id: 's', type: 'send', text: 'Recibido: {{consulta}}' },
  ],
});

const automationEvents = async (accountId: string) => (await app.events(accountId)).filter((e) => e.kind.startsWith('automation.'));

describe('"Operator API: CRUD"', () => {
  it('create → 201 with the defaults; GET; list newest first; PATCH name and steps (re-validated); DELETE → 204, then 404', async () => {
    const acct = await app.createAccount();
    const steps = [{ id: 'e', type: 'end' }];
    const a = await create(acct, { name: 'Primera', trigger: { type: 'api' }, steps });
    expect(a).toEqual({
      id: expect.any(String),
      name: 'Primera',
      status: 'draft',
      trigger: { type: 'api' },
      steps,
      phoneNumberId: null,
      webhookUrl: null,
      startsPerMinute: 600,
      createdAt: app.clock.now().toISOString(),
      updatedAt: app.clock.now().toISOString(),
    });
    app.clock.advance(1_000);
    const b = await create(acct, { name: 'Segunda', trigger: { type: 'webhook' }, steps, phoneNumberId: acct.phoneNumberId });
    expect(b).toMatchObject({
      status: 'draft',
      phoneNumberId: acct.phoneNumberId,
      webhookUrl: expect.stringContaining('/hooks/automations/'),
    });

    const got = await app.admin('GET', `${base(acct)}/${a.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(a);
    const list = await app.admin('GET', base(acct));
    expect(list.status).toBe(200);
    expect(list.body.data.map((x: any) => x.name)).toEqual(['Segunda', 'Primera']);
    // Another account sees none of them.
    const other = await app.createAccount();
    expect((await app.admin('GET', base(other))).body.data).toEqual([]);
    expect((await app.admin('GET', `${base(other)}/${a.id}`)).status).toBe(404);

    app.clock.advance(1_000);
    const renamed = await app.admin('PATCH', `${base(acct)}/${a.id}`, { name: 'Renombrada' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: 'Renombrada', steps, updatedAt: app.clock.now().toISOString(), createdAt: a.createdAt });
    const newSteps = [
      { id: 's', type: 'send', text: 'Hola' },
      { id: 'e', type: 'end' },
    ];
    const restepped = await app.admin('PATCH', `${base(acct)}/${a.id}`, { steps: newSteps });
    expect(restepped.status).toBe(200);
    expect(restepped.body.steps).toEqual(newSteps);
    // Steps are validated again as a whole: every problem listed, nothing saved.
    const bad = await app.admin('PATCH', `${base(acct)}/${a.id}`, {
      steps: [
        { id: 's', type: 'send', text: 'Hola', next: 'nada' },
        { id: 's', type: 'volar' },
      ],
    });
    expect(bad.status).toBe(400);
    const problems = JSON.parse(bad.body.error.message) as { path: unknown[]; message: string }[];
    expect(problems.map((x) => x.path.join('.')).sort()).toEqual(['steps.0.next', 'steps.1.id', 'steps.1.type']);
    expect(problems.find((x) => x.path.join('.') === 'steps.0.next')?.message).toMatch(/"nada"/);
    expect((await app.admin('PATCH', `${base(acct)}/${a.id}`, { color: 'rojo' })).status).toBe(400);
    expect((await app.admin('GET', `${base(acct)}/${a.id}`)).body.steps).toEqual(newSteps);

    const del = await app.admin('DELETE', `${base(acct)}/${a.id}`);
    expect(del.status).toBe(204);
    expect((await app.admin('GET', `${base(acct)}/${a.id}`)).status).toBe(404);
    expect((await app.admin('PATCH', `${base(acct)}/${a.id}`, { name: 'Otra' })).status).toBe(404);
    expect((await app.admin('DELETE', `${base(acct)}/${a.id}`)).status).toBe(404);
    expect((await app.admin('GET', base(acct))).body.data.map((x: any) => x.id)).toEqual([b.id]);
  });
});

describe('"status changes"', () => {
  it('pausing cancels the running executions with no event; paused or draft automations start nothing; active again starts', async () => {
    const acct = await app.createAccount();
    const a = await create(acct, askFlow('ayuda'));
    const from = freshPhone();
    const w = await app.inbound({ accountId: acct.id, from, text: 'ayuda' });
    await runDue();
    const [e] = (await app.admin('GET', `${base(acct)}/${a.id}/executions`)).body.data;
    expect(e.status).toBe('running');
    expect((await acct.call('GET', `/conversations/${w.body.conversationId}`)).body.handling).toMatchObject({
      type: 'automation',
      id: a.id,
    });

    const paused = await app.admin('PATCH', `${base(acct)}/${a.id}`, { status: 'paused' });
    expect(paused.status).toBe(200);
    expect(paused.body.status).toBe('paused');
    const cancelled = await app.admin('GET', `${base(acct)}/${a.id}/executions/${e.id}`);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', endedAt: expect.any(String) });
    expect((await acct.call('GET', `/conversations/${w.body.conversationId}`)).body.handling).toMatchObject({ type: null, id: null });
    expect(await automationEvents(acct.id)).toEqual([]);

    // The answer that would have been read is now just a message; a paused flow starts nothing.
    await app.inbound({ accountId: acct.id, from, text: 'tengo una duda' });
    await app.inbound({ accountId: acct.id, from: freshPhone(), text: 'ayuda' });
    await runDue();
    expect((await app.admin('GET', `${base(acct)}/${a.id}/executions`)).body.data).toHaveLength(1);

    expect((await app.admin('PATCH', `${base(acct)}/${a.id}`, { status: 'draft' })).body.status).toBe('draft');
    await app.inbound({ accountId: acct.id, from: freshPhone(), text: 'ayuda' });
    expect((await app.admin('GET', `${base(acct)}/${a.id}/executions`)).body.data).toHaveLength(1);

    expect((await app.admin('PATCH', `${base(acct)}/${a.id}`, { status: 'active' })).body.status).toBe('active');
    await app.inbound({ accountId: acct.id, from: freshPhone(), text: 'ayuda' });
    await runDue();
    const list = (await app.admin('GET', `${base(acct)}/${a.id}/executions`)).body.data;
    expect(list.map((x: any) => x.status)).toEqual(['running', 'cancelled']);
    expect((await app.admin('PATCH', `${base(acct)}/${a.id}`, { status: 'activa' })).status).toBe(400);
  });

  it('"changing the steps of an active automation": running executions go on with the new steps; one whose step is gone fails', async () => {
    const acct = await app.createAccount();
    const a = await create(acct, askFlow('cambio'));
    const keep = freshPhone();
    await app.inbound({ accountId: acct.id, from: keep, text: 'cambio' });
    await runDue();
    const [e] = (await app.admin('GET', `${base(acct)}/${a.id}/executions`)).body.data;
    expect(e).toMatchObject({ status: 'running', currentStepId: 'q' });
    // The question stays, the send after it changes: the running execution uses the new one.
    const changed = await app.admin('PATCH', `${base(acct)}/${a.id}`, {
      steps: [
        { id: 'q', type: 'ask', text: '¿En qué te ayudo?', save: 'consulta' },
        { id: 's2', type: 'send', text: 'Nuevo: {{consulta}}' },
      ],
    });
    expect(changed.status).toBe(200);
    const w = await app.inbound({ accountId: acct.id, from: keep, text: 'precio' });
    await runDue();
    expect((await app.admin('GET', `${base(acct)}/${a.id}/executions/${e.id}`)).body.status).toBe('completed');
    const msgs = await acct.call('GET', `/conversations/${w.body.conversationId}/messages`);
    expect(msgs.body.data.filter((m: any) => m.from === 'automation').map((m: any) => m.text)).toEqual([
      '¿En qué te ayudo?',
      'Nuevo: precio',
    ]);

    // Now one waits at q and q disappears.
    const other = freshPhone();
    await app.inbound({ accountId: acct.id, from: other, text: 'cambio' });
    await runDue();
    const [e2] = (await app.admin('GET', `${base(acct)}/${a.id}/executions?status=running`)).body.data;
    expect(e2.currentStepId).toBe('q');
    await app.admin('PATCH', `${base(acct)}/${a.id}`, { steps: [{ id: 'p', type: 'ask', text: '¿Algo más?', save: 'mas' }] });
    await app.inbound({ accountId: acct.id, from: other, text: 'hola' });
    await runDue();
    const gone = await app.admin('GET', `${base(acct)}/${a.id}/executions/${e2.id}`);
    expect(gone.body).toMatchObject({ status: 'failed', error: 'La automatización cambió y el paso "q" ya no existe.' });
  });

  it('deleting an automation cancels its running executions (no event); they stay readable', async () => {
    const acct = await app.createAccount();
    const a = await create(acct, askFlow('borrar'));
    await app.inbound({ accountId: acct.id, from: freshPhone(), text: 'borrar' });
    await runDue();
    const [e] = (await app.admin('GET', `${base(acct)}/${a.id}/executions`)).body.data;
    expect(e.status).toBe('running');
    expect((await app.admin('DELETE', `${base(acct)}/${a.id}`)).status).toBe(204);
    const row = await app.rt.services.db
      .selectFrom('automation_executions')
      .select('status')
      .where('id', '=', e.id)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('cancelled');
    expect(await automationEvents(acct.id)).toEqual([]);
  });
});

describe('"rotate-webhook"', () => {
  it('a new URL each time (the old token gone); 409 for an automation not triggered by webhook; 404 for an unknown one', async () => {
    const acct = await app.createAccount();
    const hooked = await create(acct, { name: 'Hook', trigger: { type: 'webhook' }, steps: [{ id: 'e', type: 'end' }] });
    const r1 = await app.admin('POST', `${base(acct)}/${hooked.id}/rotate-webhook`);
    expect(r1.status).toBe(200);
    expect(r1.body.webhookUrl).not.toBe(hooked.webhookUrl);
    expect(r1.body.webhookUrl.split('/').pop().length).toBeGreaterThanOrEqual(32);
    expect((await app.admin('GET', `${base(acct)}/${hooked.id}`)).body.webhookUrl).toBe(r1.body.webhookUrl);

    const plain = await create(acct, { name: 'API', trigger: { type: 'api' }, steps: [{ id: 'e', type: 'end' }] });
    const refused = await app.admin('POST', `${base(acct)}/${plain.id}/rotate-webhook`);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatch(/no se dispara por webhook/);
    expect((await app.admin('POST', `${base(acct)}/${crypto.randomUUID()}/rotate-webhook`)).status).toBe(404);
  });
});

describe('"executions list/get/cancel"', () => {
  it('newest first with status filter, limit and after; one with its step log; cancel → cancelled, then 409', async () => {
    const acct = await app.createAccount();
    const a = await create(acct, {
      name: 'Espera',
      status: 'active',
      trigger: { type: 'api' },
      steps: [
        { id: 'w', type: 'wait', minutes: 10 },
        { id: 'e', type: 'end' },
      ],
    });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await acct.call('POST', `/automations/${a.id}/executions`, { to: freshPhone() });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ status: 'running', currentStepId: 'w', test: false });
      ids.push(r.body.id);
    }
    const newestFirst = [...ids].reverse();
    const path = `${base(acct)}/${a.id}/executions`;

    // Cancel two: the first time 200 cancelled, the second 409.
    for (const id of [ids[1], ids[3]]) {
      const c = await app.admin('POST', `${path}/${id}/cancel`);
      expect(c.status).toBe(200);
      expect(c.body).toMatchObject({ id, status: 'cancelled', endedAt: app.clock.now().toISOString() });
      const again = await app.admin('POST', `${path}/${id}/cancel`);
      expect(again.status).toBe(409);
      expect(again.body.error).toMatch(/ya terminó/);
    }
    app.clock.advance(10 * 60_000);
    await runDue();

    const all = await app.admin('GET', path);
    expect(all.status).toBe(200);
    expect(all.body.hasMore).toBe(false);
    expect(all.body.data.map((x: any) => x.id)).toEqual(newestFirst);
    expect(all.body.data.map((x: any) => x.status)).toEqual(['completed', 'cancelled', 'completed', 'cancelled', 'completed']);

    const cancelled = await app.admin('GET', `${path}?status=cancelled`);
    expect(cancelled.body.data.map((x: any) => x.id)).toEqual([ids[3], ids[1]]);
    expect((await app.admin('GET', `${path}?status=running`)).body.data).toEqual([]);
    expect((await app.admin('GET', `${path}?status=acabada`)).status).toBe(400);

    const p1 = await app.admin('GET', `${path}?limit=2`);
    expect(p1.body).toMatchObject({ hasMore: true });
    expect(p1.body.data.map((x: any) => x.id)).toEqual(newestFirst.slice(0, 2));
    const p2 = await app.admin('GET', `${path}?limit=2&after=${p1.body.data[1].id}`);
    expect(p2.body.data.map((x: any) => x.id)).toEqual(newestFirst.slice(2, 4));
    expect(p2.body.hasMore).toBe(true);
    const p3 = await app.admin('GET', `${path}?limit=2&after=${p2.body.data[1].id}`);
    expect(p3.body).toEqual({ data: [expect.objectContaining({ id: ids[0] })], hasMore: false });

    const one = await app.admin('GET', `${path}/${ids[0]}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: ids[0], automationId: a.id, status: 'completed', currentStepId: 'e', error: null });
    expect(one.body.steps).toEqual([
      { stepId: 'w', type: 'wait', startedAt: expect.any(String), endedAt: expect.any(String), outcome: 'ok', detail: null },
      { stepId: 'e', type: 'end', startedAt: expect.any(String), endedAt: expect.any(String), outcome: 'ok', detail: null },
    ]);
    const c1 = await app.admin('GET', `${path}/${ids[1]}`);
    expect(c1.body.steps.map((x: any) => `${x.stepId}:${x.outcome}`)).toEqual(['w:waiting']);
    // A completed execution cannot be cancelled; an unknown one is 404.
    expect((await app.admin('POST', `${path}/${ids[0]}/cancel`)).status).toBe(409);
    expect((await app.admin('POST', `${path}/${crypto.randomUUID()}/cancel`)).status).toBe(404);
    expect((await app.admin('GET', `${path}/${crypto.randomUUID()}`)).status).toBe(404);
    // Cancellation emits nothing: only the three completions.
    expect((await automationEvents(acct.id)).map((e) => e.kind)).toEqual([
      'automation.completed',
      'automation.completed',
      'automation.completed',
    ]);
  });
});

describe('"test runs"', () => {
  it('a draft flow runs for real as a test: 201 with test true, the message goes out, no automation.* event', async () => {
    const acct = await app.createAccount();
    const a = await create(acct, {
      name: 'Borrador',
      trigger: { type: 'keyword', keywords: ['probar'], match: 'exact' },
      steps: [
        { id: 's', type: 'send', text: 'Hola {{nombre}}, esto es una prueba' },
        { id: 'e', type: 'end' },
      ],
    });
    expect(a.status).toBe('draft');
    const to = freshPhone();
    const w = await app.inbound({ accountId: acct.id, from: to, text: 'probar' }); // a draft: starts nothing
    expect((await app.admin('GET', `${base(acct)}/${a.id}/executions`)).body.data).toEqual([]);

    const t = await app.admin('POST', `${base(acct)}/${a.id}/test`, { to, variables: { nombre: 'Ana' } });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    expect(t.body).toMatchObject({ status: 'completed', test: true, variables: { nombre: 'Ana' }, conversationId: w.body.conversationId });
    const msgs = await acct.call('GET', `/conversations/${w.body.conversationId}/messages`);
    expect(msgs.body.data.filter((m: any) => m.from === 'automation').map((m: any) => m.text)).toEqual(['Hola Ana, esto es una prueba']);
    expect(await automationEvents(acct.id)).toEqual([]);
    const listed = (await app.admin('GET', `${base(acct)}/${a.id}/executions`)).body.data;
    expect(listed).toEqual([expect.objectContaining({ id: t.body.id, test: true })]);

    expect((await app.admin('POST', `${base(acct)}/${a.id}/test`, { to, extra: 1 })).status).toBe(400);
    expect((await app.admin('POST', `${base(acct)}/${a.id}/test`, {})).status).toBe(400);
    expect((await app.admin('POST', `${base(acct)}/${crypto.randomUUID()}/test`, { to })).status).toBe(404);
  });
});

describe('"team replies … cancel a running execution"', () => {
  it('a team reply cancels the execution (no event); the customer’s next message is no answer and starts nothing', async () => {
    const acct = await app.createAccount();
    const a = await create(acct, askFlow('turno'));
    const from = freshPhone();
    const w = await app.inbound({ accountId: acct.id, from, text: 'turno' });
    await runDue();
    const [e] = (await app.admin('GET', `${base(acct)}/${a.id}/executions`)).body.data;
    expect(e).toMatchObject({ status: 'running', currentStepId: 'q' });

    const reply = await app.admin('POST', `/accounts/${acct.id}/conversations/${w.body.conversationId}/messages`, {
      text: 'Hola, soy Laura del equipo',
      by: { id: 'u-1', name: 'Laura' },
    });
    expect(reply.status).toBe(201);
    const after = await app.admin('GET', `${base(acct)}/${a.id}/executions/${e.id}`);
    expect(after.body).toMatchObject({ status: 'cancelled', endedAt: expect.any(String) });
    expect((await acct.call('GET', `/conversations/${w.body.conversationId}`)).body.handling).toMatchObject({ type: 'team' });

    await app.inbound({ accountId: acct.id, from, text: 'turno' });
    await runDue();
    expect((await app.admin('GET', `${base(acct)}/${a.id}/executions`)).body.data).toHaveLength(1);
    const msgs = await acct.call('GET', `/conversations/${w.body.conversationId}/messages`);
    expect(msgs.body.data.map((m: any) => m.from)).toEqual(['contact', 'automation', 'team', 'contact']);
    expect(await automationEvents(acct.id)).toEqual([]);
  });
});
