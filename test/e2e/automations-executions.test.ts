// Automations, issue 14 rules 2, 5, 6 and 7 (docs/automations.md "Execution", "Events", "Public
// API"): execution states, one running per conversation, input during a run, cancellation without
// an event, test executions, the step log, automation.* events, the case's handledBy and the
// public API. Real app on a real database, the sandbox number, the injected clock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { automationsOf } from '../automations.js';
import { type Receiver, startReceiver } from '../fakes/receiver.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
let receiver: Receiver;

beforeAll(async () => {
  app = await startTestApp();
  receiver = await startReceiver({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' });
});
afterAll(async () => {
  await receiver?.close();
  await app?.close();
});

const MINUTE = 60_000;
const { runDue, createFlow: flow, execution, executions, lastExecution, writes } = automationsOf(() => app);

async function texts(acct: TestAccount, conversationId: string): Promise<string[]> {
  const r = await acct.call('GET', `/conversations/${conversationId}/messages`);
  expect(r.status).toBe(200);
  return r.body.data.map((m: any) => `${m.from}:${m.text}`);
}

const automationEvents = async (accountId: string) => (await app.events(accountId)).filter((e) => e.kind.startsWith('automation.'));

/** An ask flow started by a keyword: the execution waits for the answer. */
const askFlow = (keyword: string) => ({
  name: `Pregunta ${keyword}`,
  trigger: { type: 'keyword', keywords: [keyword], match: 'exact' },
  steps: [
    { id: 'q', type: 'ask', text: '¿Número de pedido?', save: 'pedido' },
    { id: 's', type: 'send', text: 'Buscando el pedido {{pedido}}' },
  ],
});

describe('rule 2: executions', () => {
  it('"running → completed | handed_off | failed | cancelled" (status, error, endedAt)', async () => {
    const acct = await app.createAccount();
    const ask = await flow(acct, askFlow('estado'));
    const handoff = await flow(acct, {
      name: 'Equipo',
      trigger: { type: 'keyword', keywords: ['equipo'], match: 'exact' },
      steps: [{ id: 'h', type: 'handoff' }],
    });
    const p = freshPhone();
    await writes(acct, p, 'estado');
    await runDue();
    let e = await lastExecution(acct, ask.id);
    expect(e).toMatchObject({ status: 'running', currentStepId: 'q', error: null, endedAt: null, test: false });
    await writes(acct, p, 'A-12');
    await runDue();
    e = await lastExecution(acct, ask.id);
    expect(e).toMatchObject({ status: 'completed', currentStepId: null, error: null, variables: { pedido: 'A-12', respuesta: 'A-12' } });
    expect(e.endedAt).toEqual(expect.any(String));

    await writes(acct, freshPhone(), 'equipo');
    await runDue();
    expect((await lastExecution(acct, handoff.id)).status).toBe('handed_off');

    // A send refused (no 24-hour window for a phone that never wrote) fails it with the refusal's Spanish text.
    const api = await flow(acct, { name: 'Aviso', trigger: { type: 'api' }, steps: [{ id: 's', type: 'send', text: 'Hola' }] });
    const r = await acct.call('POST', `/automations/${api.id}/executions`, { to: freshPhone() });
    expect(r.status).toBe(201);
    expect(r.body.status).toBe('failed');
    expect(r.body.error).toMatch(/24 horas|plantilla/i);

    const p2 = freshPhone();
    await writes(acct, p2, 'estado');
    await runDue();
    const running = await lastExecution(acct, ask.id);
    const c = await app.admin('POST', `/accounts/${acct.id}/automations/${ask.id}/executions/${running.id}/cancel`);
    expect(c.status).toBe(200);
    expect(c.body).toMatchObject({ status: 'cancelled', error: null });
    expect(c.body.endedAt).toEqual(expect.any(String));
    // Already ended: nothing to stop.
    expect((await app.admin('POST', `/accounts/${acct.id}/automations/${ask.id}/executions/${running.id}/cancel`)).status).toBe(409);
  });

  it('"Changing the steps of an active automation: running executions continue with the new steps; a current step id that no longer exists fails them"', async () => {
    const acct = await app.createAccount();
    const a = await flow(acct, askFlow('cambio'));
    const p1 = freshPhone();
    const p2 = freshPhone();
    const c1 = await writes(acct, p1, 'cambio');
    await writes(acct, p2, 'cambio');
    await runDue();
    const [second, first] = await executions(acct, a.id);
    // The ask "q" stays; what follows it changes.
    const patched = await app.admin('PATCH', `/accounts/${acct.id}/automations/${a.id}`, {
      steps: [
        { id: 'q', type: 'ask', text: '¿Número de pedido?', save: 'pedido' },
        { id: 's2', type: 'send', text: 'Nuevo paso: {{pedido}}' },
      ],
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    await writes(acct, p1, 'B-2');
    await runDue();
    expect((await execution(acct, a.id, first.id)).status).toBe('completed');
    expect((await texts(acct, c1.conversationId)).at(-1)).toBe('automation:Nuevo paso: B-2');
    // Now "q" goes away: the other execution, waiting at it, fails when it runs again.
    expect(
      (
        await app.admin('PATCH', `/accounts/${acct.id}/automations/${a.id}`, {
          steps: [{ id: 'otro', type: 'send', text: 'Hola' }],
        })
      ).status,
    ).toBe(200);
    await writes(acct, p2, 'C-3');
    await runDue();
    const e = await execution(acct, a.id, second.id);
    expect(e.status).toBe('failed');
    expect(e.error).toMatch(/"q" ya no existe/);
  });

  it('"At most one running execution per conversation: starting another answers 409"', async () => {
    const acct = await app.createAccount();
    const a = await flow(acct, {
      name: 'Espera',
      trigger: { type: 'api' },
      steps: [
        { id: 'w', type: 'wait', minutes: 30 },
        { id: 'f', type: 'end' },
      ],
    });
    const b = await flow(acct, { name: 'Otra', trigger: { type: 'api' }, steps: [{ id: 'f', type: 'end' }] });
    const to = freshPhone();
    const first = await acct.call('POST', `/automations/${a.id}/executions`, { to });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ status: 'running', currentStepId: 'w' });
    for (const id of [a.id, b.id]) {
      const again = await acct.call('POST', `/automations/${id}/executions`, { to });
      expect(again.status, JSON.stringify(again.body)).toBe(409);
      expect(again.body.error).toMatch(/ya tiene una automatización en curso/);
    }
    // The operator's test start too.
    expect((await app.admin('POST', `/accounts/${acct.id}/automations/${b.id}/test`, { to })).status).toBe(409);
    expect(await executions(acct, b.id)).toEqual([]);
    // Once it ends, another may start.
    app.clock.advance(31 * MINUTE);
    await runDue();
    expect((await execution(acct, a.id, first.body.id)).status).toBe('completed');
    expect((await acct.call('POST', `/automations/${b.id}/executions`, { to })).status).toBe(201);
  });

  it('"An inbound message that arrives while the conversation has a running execution is that execution\'s input, never a trigger"', async () => {
    const acct = await app.createAccount();
    const a = await flow(acct, askFlow('pedido'));
    const b = await flow(acct, {
      name: 'Precio',
      trigger: { type: 'keyword', keywords: ['precio'], match: 'exact' },
      steps: [{ id: 's', type: 'send', text: 'Los precios son…' }],
    });
    const p = freshPhone();
    const c = await writes(acct, p, 'pedido');
    await runDue();
    await writes(acct, p, 'precio');
    await runDue();
    const e = await lastExecution(acct, a.id);
    expect(e.status).toBe('completed');
    expect(e.variables).toEqual({ pedido: 'precio', respuesta: 'precio' });
    expect(await executions(acct, b.id)).toEqual([]);
    expect(await texts(acct, c.conversationId)).toEqual([
      'contact:pedido',
      'automation:¿Número de pedido?',
      'contact:precio',
      'automation:Buscando el pedido precio',
    ]);
  });

  it('"an ask step reads only messages that arrive after it started (earlier ones are dropped when it sends its question)"', async () => {
    const acct = await app.createAccount();
    const a = await flow(acct, {
      name: 'Después',
      trigger: { type: 'keyword', keywords: ['despues'] },
      steps: [
        { id: 'aviso', type: 'send', text: 'En un minuto te pregunto' },
        { id: 'w', type: 'wait', minutes: 1 },
        { id: 'q', type: 'ask', text: '¿Color?', save: 'color' },
      ],
    });
    const p = freshPhone();
    await writes(acct, p, 'después');
    await runDue();
    await writes(acct, p, 'rojo');
    await runDue();
    let e = await lastExecution(acct, a.id);
    expect([e.status, e.currentStepId]).toEqual(['running', 'w']);
    app.clock.advance(MINUTE + 1000);
    await runDue();
    e = await lastExecution(acct, a.id);
    expect([e.status, e.currentStepId]).toEqual(['running', 'q']);
    await writes(acct, p, 'verde');
    await runDue();
    e = await lastExecution(acct, a.id);
    expect(e.status).toBe('completed');
    expect(e.variables).toEqual({ color: 'verde', respuesta: 'verde' });
  });

  describe('"Cancelled (no event): a team member sends in the conversation, the operator stops it, or its automation is paused or deleted"', () => {
    it('a team reply cancels the running execution; the answer after it is no input', async () => {
      const acct = await app.createAccount();
      const a = await flow(acct, askFlow('ayuda'));
      const p = freshPhone();
      const c = await writes(acct, p, 'ayuda');
      await runDue();
      const reply = await app.admin('POST', `/accounts/${acct.id}/conversations/${c.conversationId}/messages`, {
        text: 'Hola, soy Laura del equipo',
        by: { name: 'Laura' },
      });
      expect(reply.status, JSON.stringify(reply.body)).toBe(201);
      let e = await lastExecution(acct, a.id);
      expect(e.status).toBe('cancelled');
      await writes(acct, p, 'A-1');
      await runDue();
      e = await lastExecution(acct, a.id);
      expect(e).toMatchObject({ status: 'cancelled', variables: {} });
      const conv = (await acct.call('GET', `/conversations/${c.conversationId}`)).body;
      expect(conv.handling.type).toBe('team');
      // handledBy: "automation+human→human".
      expect((await acct.call('GET', `/cases/${conv.openCaseId}`)).body.handledBy).toBe('human');
      expect(await automationEvents(acct.id)).toEqual([]);
    });

    it('the operator stops it (POST …/executions/{eid}/cancel)', async () => {
      const acct = await app.createAccount();
      const a = await flow(acct, askFlow('frenar'));
      const c = await writes(acct, freshPhone(), 'frenar');
      await runDue();
      const e = await lastExecution(acct, a.id);
      const r = await app.admin('POST', `/accounts/${acct.id}/automations/${a.id}/executions/${e.id}/cancel`);
      expect(r.body.status).toBe('cancelled');
      expect((await acct.call('GET', `/conversations/${c.conversationId}`)).body.handling.type).toBeNull();
      expect(await automationEvents(acct.id)).toEqual([]);
    });

    it('pausing or deleting the automation cancels all its running executions', async () => {
      const acct = await app.createAccount();
      const paused = await flow(acct, askFlow('pausa'));
      const deleted = await flow(acct, askFlow('borrar'));
      const cs = [
        await writes(acct, freshPhone(), 'pausa'),
        await writes(acct, freshPhone(), 'pausa'),
        await writes(acct, freshPhone(), 'borrar'),
      ];
      await runDue();
      expect((await executions(acct, paused.id)).map((e) => e.status)).toEqual(['running', 'running']);
      expect((await app.admin('PATCH', `/accounts/${acct.id}/automations/${paused.id}`, { status: 'paused' })).status).toBe(200);
      expect((await executions(acct, paused.id)).map((e) => e.status)).toEqual(['cancelled', 'cancelled']);
      const running = (await executions(acct, deleted.id))[0];
      expect(running.status).toBe('running');
      expect((await app.admin('DELETE', `/accounts/${acct.id}/automations/${deleted.id}`)).status).toBe(204);
      expect((await execution(acct, deleted.id, running.id)).status).toBe('cancelled');
      for (const c of cs) expect((await acct.call('GET', `/conversations/${c.conversationId}`)).body.handling.type).toBeNull();
      await runDue();
      expect(await automationEvents(acct.id)).toEqual([]);
    });
  });

  it('"Test executions (test: true, started by the operator) run the flow for real …, count no quota and emit no automation.* event"', async () => {
    const acct = await app.createAccount();
    const a = await app.admin('POST', `/accounts/${acct.id}/automations`, {
      name: 'Borrador',
      status: 'draft',
      trigger: { type: 'api' },
      steps: [
        { id: 'attr', type: 'set_attribute', attribute: 'probado', value: 'si' },
        { id: 'c', type: 'condition', if: { var: 'probado', op: 'exists' } },
        { id: 'h', type: 'http', method: 'GET', url: `${receiver.url}/prueba`, save: 'h' },
        { id: 'f', type: 'end' },
      ],
    });
    expect(a.status).toBe(201);
    const usage = async () => {
      // GET /me is a view kept for 2 s: read it past that.
      app.clock.advance(3_000);
      const me = await acct.call('GET', '/me');
      expect(me.status).toBe(200);
      return [me.body.usage.automationSteps, me.body.usage.automationHttpRequests] as [number, number];
    };
    const before = await usage();
    const t = await app.admin('POST', `/accounts/${acct.id}/automations/${a.body.id}/test`, { to: freshPhone(), variables: { x: '1' } });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    expect(t.body).toMatchObject({ test: true, status: 'completed', variables: { x: '1', h: { status: 200, body: { ok: true } } } });
    expect((await acct.call('GET', `/contacts/${t.body.contactId}`)).body.attributes.probado).toBe('si');
    expect(await usage()).toEqual(before);
    expect(await automationEvents(acct.id)).toEqual([]);
    // A test that fails (a send refused: no 24-hour window) emits no automation.failed either.
    const sends = await app.admin('POST', `/accounts/${acct.id}/automations`, {
      name: 'Envío',
      trigger: { type: 'api' },
      steps: [{ id: 's', type: 'send', text: 'Hola' }],
    });
    const failed = await app.admin('POST', `/accounts/${acct.id}/automations/${sends.body.id}/test`, { to: freshPhone() });
    expect(failed.body).toMatchObject({ test: true, status: 'failed' });
    expect(await automationEvents(acct.id)).toEqual([]);
    expect(await usage()).toEqual(before);
    // The same flow run for real counts its four steps and its request, and emits its event.
    expect((await app.admin('PATCH', `/accounts/${acct.id}/automations/${a.body.id}`, { status: 'active' })).status).toBe(200);
    const real = await acct.call('POST', `/automations/${a.body.id}/executions`, { to: freshPhone() });
    expect(real.body).toMatchObject({ test: false, status: 'completed' });
    expect(await usage()).toEqual([before[0] + 4, before[1] + 1]);
    expect((await automationEvents(acct.id)).map((e) => [e.kind, e.data.executionId])).toEqual([['automation.completed', real.body.id]]);
  });

  it('"GET …/executions/{eid} (adds the step log: step id, type, startedAt, endedAt, outcome)"', async () => {
    const acct = await app.createAccount();
    const a = await flow(acct, {
      name: 'Log',
      trigger: { type: 'keyword', keywords: ['log'], match: 'exact' },
      steps: [
        { id: 'hola', type: 'send', text: 'Hola' },
        { id: 'w', type: 'wait', minutes: 5 },
        { id: 'fin', type: 'end' },
      ],
    });
    await writes(acct, freshPhone(), 'log');
    await runDue();
    const startedAt = app.clock.now().toISOString();
    app.clock.advance(5 * MINUTE);
    await runDue();
    const e = await lastExecution(acct, a.id);
    expect(e.status).toBe('completed');
    expect(Object.keys(e).sort()).toEqual(
      [
        'id',
        'automationId',
        'conversationId',
        'contactId',
        'status',
        'error',
        'variables',
        'currentStepId',
        'test',
        'startedAt',
        'endedAt',
        'steps',
      ].sort(),
    );
    for (const s of e.steps) expect(Object.keys(s).sort()).toEqual(['detail', 'endedAt', 'outcome', 'startedAt', 'stepId', 'type']);
    expect(e.steps.map((s: any) => [s.stepId, s.type, s.outcome])).toEqual([
      ['hola', 'send', 'ok'],
      ['w', 'wait', 'ok'],
      ['fin', 'end', 'ok'],
    ]);
    expect(e.steps[0].detail).toEqual({ messageId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    // The wait's entry spans the timer: started before the clock moved, ended after.
    expect(e.steps[1].startedAt).toBe(startedAt);
    expect(e.steps[1].endedAt).toBe(app.clock.now().toISOString());
  });
});

describe('rule 5: events', () => {
  it('automation.completed / automation.failed "data {executionId, automationId, conversationId, contactId, status, error, variables}", once per execution', async () => {
    const acct = await app.createAccount();
    const done = await flow(acct, {
      name: 'Ok',
      trigger: { type: 'keyword', keywords: ['ok'], match: 'exact' },
      steps: [{ id: 'q', type: 'ask', text: '¿Nombre?', save: 'nombre' }],
    });
    const handoff = await flow(acct, {
      name: 'Equipo',
      trigger: { type: 'keyword', keywords: ['equipo'], match: 'exact' },
      steps: [{ id: 'h', type: 'handoff' }],
    });
    const fails = await flow(acct, { name: 'Falla', trigger: { type: 'api' }, steps: [{ id: 's', type: 'send', text: 'Hola' }] });

    const p = freshPhone();
    const c1 = await writes(acct, p, 'OK');
    await runDue();
    await writes(acct, p, 'Ana');
    await runDue();
    const c2 = await writes(acct, freshPhone(), 'equipo');
    await runDue();
    const f = await acct.call('POST', `/automations/${fails.id}/executions`, { to: freshPhone() });
    expect(f.body.status).toBe('failed');
    await runDue();

    const e1 = await lastExecution(acct, done.id);
    const e2 = await lastExecution(acct, handoff.id);
    const evs = await automationEvents(acct.id);
    expect(evs.map((e) => [e.kind, e.data.executionId])).toEqual([
      ['automation.completed', e1.id],
      ['automation.completed', e2.id],
      ['automation.failed', f.body.id],
    ]);
    for (const e of evs) {
      expect(Object.keys(e.data).sort()).toEqual([
        'automationId',
        'contactId',
        'conversationId',
        'error',
        'executionId',
        'status',
        'variables',
      ]);
    }
    expect(evs[0].data).toEqual({
      executionId: e1.id,
      automationId: done.id,
      conversationId: c1.conversationId,
      contactId: c1.contactId,
      status: 'completed',
      error: null,
      variables: { nombre: 'Ana', respuesta: 'Ana' },
    });
    expect(evs[1].data).toMatchObject({ conversationId: c2.conversationId, status: 'handed_off', error: null, variables: {} });
    expect(evs[2].data).toMatchObject({ automationId: fails.id, status: 'failed', error: f.body.error, variables: {} });
    expect(evs[2].data.error).toEqual(expect.any(String));
  });
});

describe('rule 6: cases', () => {
  it('"handledBy becomes automation" once an automation sent in the case', async () => {
    const acct = await app.createAccount();
    await flow(acct, {
      name: 'Saludo',
      trigger: { type: 'keyword', keywords: ['hola'], match: 'contains' },
      steps: [{ id: 's', type: 'send', text: '¡Hola! ¿En qué te ayudo?' }],
    });
    const c = await writes(acct, freshPhone(), 'Hola!');
    const caseId = (await acct.call('GET', `/conversations/${c.conversationId}`)).body.openCaseId;
    // The case opened handled by nobody (case.opened); the automation's message makes it 'automation'.
    const opened = (await app.events(acct.id, 'case.opened')).find((e) => e.data.id === caseId);
    expect(opened?.data.handledBy).toBe('none');
    await runDue();
    expect((await acct.call('GET', `/cases/${caseId}`)).body.handledBy).toBe('automation');
  });
});

describe('rule 7: public API', () => {
  it('GET /automations → "{data: [Automation without steps and webhookUrl]}, newest first"', async () => {
    const acct = await app.createAccount();
    const names = ['Primera', 'Segunda', 'Tercera'];
    const created = [];
    for (const [i, name] of names.entries()) {
      created.push(
        await flow(acct, {
          name,
          status: i === 1 ? 'draft' : 'active',
          trigger: i === 2 ? { type: 'webhook' } : { type: 'api' },
          steps: [{ id: 'f', type: 'end' }],
        }),
      );
      app.clock.advance(1000);
    }
    const r = await acct.call('GET', '/automations');
    expect(r.status).toBe(200);
    expect(r.body.data.map((a: any) => a.name)).toEqual(['Tercera', 'Segunda', 'Primera']);
    for (const a of r.body.data) {
      expect(Object.keys(a).sort()).toEqual(['createdAt', 'id', 'name', 'phoneNumberId', 'status', 'trigger', 'updatedAt']);
    }
    expect(r.body.data[0]).toMatchObject({ id: created[2].id, status: 'active', trigger: { type: 'webhook' }, phoneNumberId: null });
    expect(JSON.stringify(r.body)).not.toContain('/hooks/automations/');
    // Another account sees none of them.
    const other = await app.createAccount();
    expect((await other.call('GET', '/automations')).body.data).toEqual([]);
  });

  it('POST /automations/{id}/executions → 201 (a short flow already ended); 404; 409 not active / running; 402 contact limit; 400 invalid body; GET …/executions/{executionId} — all counted as API calls', async () => {
    const acct = await app.createAccount({ limits: { contacts: 1 } });
    const other = await app.createAccount();
    const usage = async (id: string) => (await app.admin('GET', `/accounts/${id}`)).body.usage.apiCalls as number;
    const short = await flow(acct, {
      name: 'Corta',
      trigger: { type: 'keyword', keywords: ['corta'], match: 'exact' },
      steps: [
        { id: 'a', type: 'set_attribute', attribute: 'origen', value: '{{origen}}' },
        { id: 'f', type: 'end' },
      ],
    });
    const draft = await flow(acct, { name: 'Borrador', status: 'draft', trigger: { type: 'api' }, steps: [{ id: 'f', type: 'end' }] });
    const long = await flow(acct, { name: 'Larga', trigger: { type: 'api' }, steps: [{ id: 'w', type: 'wait', minutes: 60 }] });
    const before = await usage(acct.id);
    const beforeOther = await usage(other.id);
    let calls = 0;
    const call = async (method: string, path: string, body?: unknown) => {
      calls += 1;
      return acct.call(method, path, body);
    };

    const to = freshPhone();
    const ok = await call('POST', `/automations/${short.id}/executions`, { to, variables: { origen: 'api' } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect(Object.keys(ok.body).sort()).toEqual(
      [
        'automationId',
        'contactId',
        'conversationId',
        'currentStepId',
        'endedAt',
        'error',
        'id',
        'startedAt',
        'status',
        'test',
        'variables',
      ].sort(),
    );
    expect(ok.body).toMatchObject({ automationId: short.id, status: 'completed', test: false, variables: { origen: 'api' }, error: null });
    const got = await call('GET', `/automations/${short.id}/executions/${ok.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(ok.body);
    expect((await call('GET', `/automations/${long.id}/executions/${ok.body.id}`)).status).toBe(404);
    expect((await call('GET', `/automations/${short.id}/executions/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    // Another account's execution and automation are not found.
    expect((await other.call('GET', `/automations/${short.id}/executions/${ok.body.id}`)).status).toBe(404);
    expect((await other.call('POST', `/automations/${short.id}/executions`, { to })).status).toBe(404);

    const missing = await call('POST', '/automations/00000000-0000-4000-8000-000000000000/executions', { to });
    expect(missing.status).toBe(404);
    const notActive = await call('POST', `/automations/${draft.id}/executions`, { to });
    expect(notActive.status).toBe(409);
    expect(notActive.body.error).toMatch(/no está activa/);
    // The same contact (the account's only one): the long flow waits, a second start is 409.
    const running = await call('POST', `/automations/${long.id}/executions`, { to });
    expect(running.body.status).toBe('running');
    const twice = await call('POST', `/automations/${short.id}/executions`, { to });
    expect(twice.status).toBe(409);
    // "no connected number" with that phoneNumberId.
    const noNumber = await call('POST', `/automations/${short.id}/executions`, {
      to,
      phoneNumberId: '00000000-0000-4000-8000-000000000000',
    });
    expect(noNumber.status).toBe(409);
    expect(noNumber.body.error).toMatch(/número conectado/);
    // The account holds 1 contact, its limit: a new phone is a new contact.
    const full = await call('POST', `/automations/${short.id}/executions`, { to: freshPhone() });
    expect(full.status).toBe(402);
    for (const body of [{ to, extra: 1 }, { to: '123' }, {}, { to, variables: { a: 1 } }, { to, phoneNumberId: 'x' }]) {
      const bad = await call('POST', `/automations/${short.id}/executions`, body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
    const unknownField = await acct.call('POST', `/automations/${short.id}/executions`, { to, extra: 1 });
    calls += 1;
    expect(JSON.parse(unknownField.body.error.message)[0].path).toEqual(['extra']);
    const badPhone = await acct.call('POST', `/automations/${short.id}/executions`, { to: '123' });
    calls += 1;
    expect(JSON.parse(badPhone.body.error.message)[0].path).toEqual(['to']);
    expect((await call('GET', '/automations')).status).toBe(200);

    expect(await usage(acct.id)).toBe(before + calls);
    expect(await usage(other.id)).toBe(beforeOther + 2);
    // None of the refused starts left an execution behind.
    expect((await executions(acct, short.id)).map((e) => e.id)).toEqual([ok.body.id]);
  });
});
