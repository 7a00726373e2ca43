// Automations, issue 14 rule 1 (docs/automations.md "Triggers", "Steps"): "Flows: five triggers
// (keyword exact/contains on normalised text, first_message, api, webhook, comment …), every step
// type, {{…}} templating, validation on save with the list of problems …". The agent step's
// running is in agent-stretches.test.ts. Real app, real inbound path through the sandbox; timers by the
// injected clock; a local HTTP receiver for http steps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { automationsOf } from '../automations.js';
import { type Receiver, startReceiver } from '../fakes/receiver.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
let receiver: Receiver;

beforeAll(async () => {
  app = await startTestApp();
  receiver = await startReceiver();
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
  return r.body.data.map((m: any) => `${m.from}:${m.text ?? `[template ${m.template?.name}]`}`);
}

/** A condition step with `then`/`else` (automations.md names the fields so; they are step ids, never a promise's then). */
const branch = (id: string, cond: Record<string, string>, yes?: string, no?: string) => ({
  id,
  type: 'condition',
  if: cond,
  ...Object.fromEntries(
    [
      ['then', yes],
      ['else', no],
    ].filter(([, v]) => v !== undefined),
  ),
});

const problemsOf = (body: any): { path: (string | number)[]; message: string }[] => JSON.parse(body.error.message);

describe('rule 1: triggers', () => {
  it('keyword: "an inbound text whose normalised form (lower case, accents and punctuation removed, spaces collapsed) equals (exact) or contains as whole words (contains) a normalised keyword"; "the oldest active one wins"', async () => {
    const acct = await app.createAccount();
    const exact = await flow(acct, {
      name: 'Precio',
      trigger: { type: 'keyword', keywords: ['precio'], match: 'exact' },
      steps: [{ id: 'f', type: 'end' }],
    });
    const contains = await flow(acct, {
      name: 'Envío',
      trigger: { type: 'keyword', keywords: ['Envío gratis'], match: 'contains' },
      steps: [{ id: 'f', type: 'end' }],
    });
    // Newer, also matching "precio": the older exact one wins.
    const newer = await flow(acct, {
      name: 'Precio 2',
      trigger: { type: 'keyword', keywords: ['PRECIO'], match: 'contains' },
      steps: [{ id: 'f', type: 'end' }],
    });
    const p1 = await writes(acct, freshPhone(), '  ¿¡PRECIO!? ');
    const p2 = await writes(acct, freshPhone(), 'Hola, ¿hacen ENVIO   gratis a Córdoba?');
    const p3 = await writes(acct, freshPhone(), 'reenvio gratis');
    const p4 = await writes(acct, freshPhone(), 'el precio, por favor');
    await runDue();
    const byExact = await executions(acct, exact.id);
    expect(byExact.map((e) => e.conversationId)).toEqual([p1.conversationId]);
    expect(byExact[0].status).toBe('completed');
    expect((await executions(acct, contains.id)).map((e) => e.conversationId)).toEqual([p2.conversationId]);
    // "el precio, por favor" is not exactly "precio", but contains it as a word: the newer contains one.
    expect((await executions(acct, newer.id)).map((e) => e.conversationId)).toEqual([p4.conversationId]);
    // "reenvio gratis" does not hold "envio gratis" as whole words: nothing started there.
    const conv = await acct.call('GET', `/conversations/${p3.conversationId}`);
    expect(conv.body.handling.type).toBeNull();
  });

  it('comment: "a comment on the social channel" — a WhatsApp message never starts a comment automation', async () => {
    const acct = await app.createAccount();
    const a = await flow(acct, { name: 'Comentarios', trigger: { type: 'comment' }, steps: [{ id: 'f', type: 'end' }] });
    const b = await flow(acct, {
      name: 'Comentarios hola',
      trigger: { type: 'comment', keywords: ['hola'] },
      steps: [{ id: 'f', type: 'end' }],
    });
    await writes(acct, freshPhone(), 'hola');
    await runDue();
    expect(await executions(acct, a.id)).toEqual([]);
    expect(await executions(acct, b.id)).toEqual([]);
  });

  it('first_message: "the first inbound message of a contact new to the account" starts it; a returning contact does not', async () => {
    const acct = await app.createAccount();
    const returning = freshPhone();
    await writes(acct, returning, 'Hola, soy cliente');
    const a = await flow(acct, {
      name: 'Bienvenida',
      trigger: { type: 'first_message' },
      steps: [{ id: 's', type: 'send', text: '¡Bienvenida, {{contact.name}}!' }],
    });
    const back = await writes(acct, returning, 'Hola de nuevo');
    const fresh = freshPhone();
    const first = await writes(acct, fresh, 'Hola', { name: 'Ana' });
    await runDue();
    const list = await executions(acct, a.id);
    expect(list.map((e) => [e.conversationId, e.status])).toEqual([[first.conversationId, 'completed']]);
    expect(await texts(acct, first.conversationId)).toEqual(['contact:Hola', 'automation:¡Bienvenida, Ana!']);
    expect(await texts(acct, back.conversationId)).toEqual(['contact:Hola, soy cliente', 'contact:Hola de nuevo']);
    // The new contact writes again: no longer its first message.
    await writes(acct, fresh, 'Gracias');
    await runDue();
    expect(await executions(acct, a.id)).toHaveLength(1);

    // A contact created by the API who writes for the first time: its first inbound message.
    const byApi = freshPhone();
    expect((await acct.call('POST', '/contacts', { phone: byApi, name: 'Beto' })).status).toBe(201);
    const apiFirst = await writes(acct, byApi, 'Buenas');
    await runDue();
    expect(await texts(acct, apiFirst.conversationId)).toEqual(['contact:Buenas', 'automation:¡Bienvenida, Beto!']);

    // "Keyword beats first_message": a new contact whose first message is a keyword.
    const kw = await flow(acct, {
      name: 'Catálogo',
      trigger: { type: 'keyword', keywords: ['catalogo'] },
      steps: [{ id: 'f', type: 'end' }],
    });
    const kwFirst = await writes(acct, freshPhone(), 'Catálogo');
    await runDue();
    expect((await executions(acct, kw.id)).map((e) => e.conversationId)).toEqual([kwFirst.conversationId]);
    expect((await executions(acct, a.id)).map((e) => e.conversationId)).not.toContain(kwFirst.conversationId);
    expect(await executions(acct, a.id)).toHaveLength(2);
  });

  it('api: "only through POST /automations/{id}/executions" — an inbound message never starts it; the start sets the attribute (set_attribute, GET /contacts/{id})', async () => {
    const acct = await app.createAccount();
    const a = await flow(acct, {
      name: 'Alta',
      trigger: { type: 'api' },
      steps: [
        { id: 'eco', type: 'set_attribute', attribute: 'eco', value: '{{plan}}|{{nivel}}' },
        { id: 'attr', type: 'set_attribute', attribute: 'plan', value: 'Plan {{plan}}' },
        { id: 'fin', type: 'end' },
      ],
    });
    const phone = freshPhone();
    await writes(acct, phone, 'alta');
    await acct.call('POST', '/contacts', { phone, attributes: { plan: 'viejo', nivel: 'alto' } });
    await runDue();
    expect(await executions(acct, a.id)).toEqual([]);
    const r = await acct.call('POST', `/automations/${a.id}/executions`, { to: phone, variables: { plan: 'Oro' } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({ status: 'completed', variables: { plan: 'Oro' }, test: false, error: null });
    const contact = await acct.call('GET', `/contacts/${r.body.contactId}`);
    // "{{name}} is replaced by the execution variable name, else the contact attribute".
    expect(contact.body.attributes).toEqual({ plan: 'Plan Oro', nivel: 'alto', eco: 'Oro|alto' });
  });

  it('webhook: "through its incoming webhook" (the operator\'s webhookUrl) — "The whole body lands in variables.webhook"; {{webhook.a.b}} reads nested values', async () => {
    const acct = await app.createAccount();
    const a = await flow(acct, {
      name: 'Pedido pagado',
      trigger: { type: 'webhook' },
      steps: [
        { id: 'attr', type: 'set_attribute', attribute: 'ultimo_pedido', value: '{{webhook.pedido.id}} por {{ webhook.pedido.total }}' },
      ],
    });
    expect(a.webhookUrl).toMatch(/\/hooks\/automations\/[A-Za-z0-9_-]{43}$/);
    const path = new URL(a.webhookUrl).pathname;
    const phone = freshPhone();
    const body = { phone, pedido: { id: 'A-77', total: 1500 }, lista: [1, 2] };
    const r = await fetch(`${app.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(r.status).toBe(202);
    const { executionId } = (await r.json()) as { executionId: string };
    await runDue();
    const e = await execution(acct, a.id, executionId);
    expect(e.status).toBe('completed');
    expect(e.variables.webhook).toEqual(body);
    const contact = await acct.call('GET', `/contacts/${e.contactId}`);
    expect(contact.body.attributes.ultimo_pedido).toBe('A-77 por 1500');
    // Another inbound message never starts a webhook automation.
    await writes(acct, freshPhone(), 'pedido');
    await runDue();
    expect(await executions(acct, a.id)).toHaveLength(1);
  });
});

describe('rule 1: steps', () => {
  it('send text and template with {{…}}: "{{name}} … the execution variable, else the contact attribute; {{contact.name}} and {{contact.phone}} read the contact; {{http_var.body.x}} nested; a missing value is """', async () => {
    const acct = await app.createAccount();
    const t = await app.admin('POST', `/accounts/${acct.id}/templates`, {
      name: 'confirmacion',
      category: 'UTILITY',
      status: 'APPROVED',
      body: 'Hola {{nombre}}, tu pedido {{pedido}} está listo.',
      variables: [
        { name: 'nombre', label: 'Nombre', example: 'Ana' },
        { name: 'pedido', label: 'Pedido', example: '1' },
      ],
    });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    receiver.queue.push({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ nivel: 'oro', items: [{ sku: 'X1' }] }),
    });
    const a = await flow(acct, {
      name: 'Datos',
      trigger: { type: 'keyword', keywords: ['datos'], match: 'exact' },
      steps: [
        { id: 'attr', type: 'set_attribute', attribute: 'ciudad', value: 'Rosario' },
        { id: 'perfil', type: 'http', method: 'GET', url: `${receiver.url}/perfil`, save: 'perfil' },
        {
          id: 'txt',
          type: 'send',
          text: 'Hola {{contact.name}} ({{contact.phone}}) de {{ciudad}}: nivel {{perfil.body.nivel}}, sku {{ perfil.body.items.0.sku }}, status {{perfil.status}}, falta [{{nada}}][{{perfil.body.no.x}}]',
        },
        {
          id: 'tpl',
          type: 'send',
          template: { id: t.body.id, variables: { nombre: '{{contact.name}}', pedido: '{{perfil.body.items.0.sku}}' } },
        },
      ],
    });
    const phone = freshPhone();
    const c = await writes(acct, phone, 'Datos', { name: 'Ana Pérez' });
    await runDue();
    const e = await lastExecution(acct, a.id);
    expect(e.status, JSON.stringify(e)).toBe('completed');
    expect(await texts(acct, c.conversationId)).toEqual([
      'contact:Datos',
      `automation:Hola Ana Pérez (${phone.slice(1)}) de Rosario: nivel oro, sku X1, status 200, falta [][]`,
      'automation:[template confirmacion]',
    ]);
    const msgs = await acct.call('GET', `/conversations/${c.conversationId}/messages`);
    expect(msgs.body.data[2].template).toEqual({ id: t.body.id, name: 'confirmacion', variables: { nombre: 'Ana Pérez', pedido: 'X1' } });
  });

  it('ask: "waits for the next inbound message … goes to variables[save] and variables.respuesta. With options, an answer that matches none is asked again, at most twice, then fails. No answer in time: timeoutNext, or fail"', async () => {
    const acct = await app.createAccount();
    const a = await flow(acct, {
      name: 'Turnos',
      trigger: { type: 'keyword', keywords: ['turno'], match: 'contains' },
      steps: [
        { id: 'nombre', type: 'ask', text: '¿Tu nombre?', save: 'nombre' },
        { id: 'dia', type: 'ask', text: '¿Qué día?', save: 'dia', options: ['Lunes', 'Martes'], timeoutMinutes: 5, timeoutNext: 'tarde' },
        { id: 'ok', type: 'send', text: 'Listo {{nombre}}, el {{dia}} ({{respuesta}})', next: 'fin' },
        { id: 'tarde', type: 'send', text: 'Se venció el tiempo, {{nombre}}' },
        { id: 'fin', type: 'end' },
      ],
    });
    const q = '¿Qué día?\n\n1. Lunes\n2. Martes';

    // Answers: free text, a miss (asked again), then an option by its text, normalised.
    const p1 = freshPhone();
    const c1 = await writes(acct, p1, 'Quiero un turno');
    await runDue();
    await writes(acct, p1, 'Ana');
    await runDue();
    await writes(acct, p1, 'miércoles');
    await runDue();
    await writes(acct, p1, '¡MARTES!');
    await runDue();
    let e = await lastExecution(acct, a.id);
    expect(e.status).toBe('completed');
    expect(e.variables).toEqual({ nombre: 'Ana', dia: 'Martes', respuesta: 'Martes' });
    expect(await texts(acct, c1.conversationId)).toEqual([
      'contact:Quiero un turno',
      'automation:¿Tu nombre?',
      'contact:Ana',
      `automation:${q}`,
      'contact:miércoles',
      `automation:${q}`,
      'contact:¡MARTES!',
      'automation:Listo Ana, el Martes (Martes)',
    ]);
    expect(e.steps.filter((s: any) => s.stepId === 'dia').map((s: any) => s.outcome)).toEqual(['asked', 'retry', 'asked', 'answered']);

    // No answer: nothing before timeoutMinutes; after it, timeoutNext.
    const p2 = freshPhone();
    const c2 = await writes(acct, p2, 'turno');
    await runDue();
    await writes(acct, p2, 'Beto');
    await runDue();
    app.clock.advance(4 * MINUTE);
    await runDue();
    e = await lastExecution(acct, a.id);
    expect([e.status, e.currentStepId]).toEqual(['running', 'dia']);
    app.clock.advance(2 * MINUTE);
    await runDue();
    e = await lastExecution(acct, a.id);
    expect(e.status).toBe('completed');
    expect((await texts(acct, c2.conversationId)).at(-1)).toBe('automation:Se venció el tiempo, Beto');
    expect(e.steps.filter((s: any) => s.stepId === 'dia').map((s: any) => s.outcome)).toEqual(['asked', 'timeout']);

    // Three misses: "then fails".
    const p3 = freshPhone();
    await writes(acct, p3, 'turno');
    await runDue();
    await writes(acct, p3, 'Caro');
    await runDue();
    for (const miss of ['jueves', 'viernes', '7']) {
      await writes(acct, p3, miss);
      await runDue();
    }
    e = await lastExecution(acct, a.id);
    expect(e.status).toBe('failed');
    expect(e.error).toMatch(/ninguna de las opciones/);

    // No answer in time and no timeoutNext: fails.
    const b = await flow(acct, {
      name: 'Sin respuesta',
      trigger: { type: 'keyword', keywords: ['consulta'] },
      steps: [{ id: 'q', type: 'ask', text: '¿Qué necesitás?', save: 'necesidad', timeoutMinutes: 1 }],
    });
    await writes(acct, freshPhone(), 'consulta');
    await runDue();
    app.clock.advance(MINUTE + 1000);
    await runDue();
    e = await lastExecution(acct, b.id);
    expect(e.status).toBe('failed');
    expect(e.error).toMatch(/no respondió a tiempo/);
  });

  it('condition: "ops equals, not_equals, contains, exists, gt, lt (numeric), matches (regex …); compares text after normalising as for keywords"', async () => {
    const acct = await app.createAccount();
    const cond = (id: string, ifc: Record<string, string>) => branch(id, ifc);
    const a = await flow(acct, {
      name: 'Condiciones',
      trigger: { type: 'api' },
      steps: [
        cond('eq', { var: 'color', op: 'equals', value: 'rojo' }),
        cond('eq_no', { var: 'color', op: 'equals', value: 'azul' }),
        cond('ne', { var: 'color', op: 'not_equals', value: 'azul' }),
        cond('ne_no', { var: 'color', op: 'not_equals', value: 'ROJO' }),
        cond('has', { var: 'frase', op: 'contains', value: 'envio gratis' }),
        cond('has_no', { var: 'frase', op: 'contains', value: 'cuotas' }),
        cond('ex', { var: 'color', op: 'exists' }),
        cond('ex_no', { var: 'falta', op: 'exists' }),
        cond('gt', { var: 'monto', op: 'gt', value: '99,5' }),
        cond('gt_no', { var: 'monto', op: 'gt', value: '1000' }),
        cond('lt', { var: 'monto', op: 'lt', value: '1000' }),
        cond('lt_no', { var: 'texto', op: 'lt', value: '1000' }),
        cond('re', { var: 'codigo', op: 'matches', value: '^ab \\d{3}$' }),
        cond('re_no', { var: 'codigo', op: 'matches', value: '^\\d+$' }),
        branch('branch', { var: '{{monto}}', op: 'gt', value: '{{tope}}' }, 'si', 'no'),
        { id: 'si', type: 'set_attribute', attribute: 'rama', value: 'si', next: 'fin' },
        { id: 'no', type: 'set_attribute', attribute: 'rama', value: 'no' },
        { id: 'fin', type: 'end' },
      ],
    });
    const vars = { color: 'ROJO', frase: '¿Hacen ENVÍO gratis?', monto: '150', texto: 'mucho', codigo: 'AB-123', tope: '100' };
    const r = await acct.call('POST', `/automations/${a.id}/executions`, { to: freshPhone(), variables: vars });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.status).toBe('completed');
    const e = await execution(acct, a.id, r.body.id);
    const outcomes = Object.fromEntries(e.steps.filter((s: any) => s.type === 'condition').map((s: any) => [s.stepId, s.outcome]));
    expect(outcomes).toEqual({
      eq: 'then',
      eq_no: 'else',
      ne: 'then',
      ne_no: 'else',
      has: 'then',
      has_no: 'else',
      ex: 'then',
      ex_no: 'else',
      gt: 'then',
      gt_no: 'else',
      lt: 'then',
      lt_no: 'else',
      re: 'then',
      re_no: 'else',
      branch: 'then',
    });
    expect(e.steps.map((s: any) => s.stepId).slice(-2)).toEqual(['si', 'fin']);
    expect((await acct.call('GET', `/contacts/${e.contactId}`)).body.attributes.rama).toBe('si');
  });

  it('http: "one request, no retries; variables[save] = {status, body} …; a non-2xx, a timeout … goes to onError, or fails"', async () => {
    const acct = await app.createAccount();
    receiver.received.length = 0;
    receiver.queue.push(
      { status: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ok: true, id: 'R1' }) },
      { status: 500, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: 'boom' }) },
      { status: 200, body: 'tarde', delayMs: 1500 },
    );
    const a = await flow(acct, {
      name: 'CRM',
      trigger: { type: 'api' },
      steps: [
        {
          id: 'alta',
          type: 'http',
          method: 'POST',
          url: `${receiver.url}/crm/{{pedido}}`,
          headers: { 'X-Token': 'abc-{{pedido}}' },
          body: { phone: '{{contact.phone}}', pedido: '{{pedido}}', n: 3 },
          save: 'alta',
        },
        { id: 'falla', type: 'http', method: 'GET', url: `${receiver.url}/falla`, save: 'falla', onError: 'lento', next: 'nunca' },
        { id: 'nunca', type: 'set_attribute', attribute: 'rama', value: 'nunca', next: 'fin' },
        { id: 'lento', type: 'http', method: 'GET', url: `${receiver.url}/lento`, timeoutMs: 300, save: 'lento', onError: 'marca' },
        { id: 'marca', type: 'set_attribute', attribute: 'rama', value: 'timeout' },
        { id: 'fin', type: 'end' },
      ],
    });
    const phone = freshPhone();
    const r = await acct.call('POST', `/automations/${a.id}/executions`, { to: phone, variables: { pedido: 'P9' } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    await runDue();
    const e = await execution(acct, a.id, r.body.id);
    expect(e.status, JSON.stringify(e)).toBe('completed');
    expect(e.variables.alta).toEqual({ status: 201, body: { ok: true, id: 'R1' } });
    expect(e.variables.falla).toEqual({ status: 500, body: { error: 'boom' } });
    expect(e.variables.lento).toMatchObject({ status: null });
    expect(e.steps.filter((s: any) => s.type === 'http').map((s: any) => [s.stepId, s.outcome])).toEqual([
      ['alta', 'ok'],
      ['falla', 'error'],
      ['lento', 'error'],
    ]);
    const first = receiver.received[0];
    expect(first.path).toBe('/crm/P9');
    // {{contact.phone}}: the contact's phone as the API shows it (international digits).
    expect(first.json).toEqual({ phone: phone.slice(1), pedido: 'P9', n: 3 });
    expect(first.headers['x-token']).toBe('abc-P9');
    expect(first.headers['user-agent']).toBe('Chasqui-Automations/1');
    expect(first.headers['content-type']).toMatch(/^application\/json/);
    expect(receiver.received.map((x) => x.path)).toEqual(['/crm/P9', '/falla', '/lento']);
    expect((await acct.call('GET', `/contacts/${e.contactId}`)).body.attributes.rama).toBe('timeout');

    // Without onError the execution fails.
    receiver.queue.push({ status: 503, body: 'no' });
    const b = await flow(acct, {
      name: 'CRM 2',
      trigger: { type: 'api' },
      steps: [{ id: 'h', type: 'http', method: 'DELETE', url: `${receiver.url}/x` }],
    });
    const r2 = await acct.call('POST', `/automations/${b.id}/executions`, { to: freshPhone() });
    expect(r2.status).toBe(201);
    await runDue();
    const e2 = await execution(acct, b.id, r2.body.id);
    expect(e2.status).toBe('failed');
    expect(e2.error).toMatch(/"h".*503/);
  });

  it('wait: "durable timer" — the next step runs only after the clock moves past it', async () => {
    const acct = await app.createAccount();
    const a = await flow(acct, {
      name: 'Recordatorio',
      trigger: { type: 'keyword', keywords: ['recordame'], match: 'exact' },
      steps: [
        { id: 'a', type: 'send', text: 'Te escribo en 10 minutos' },
        { id: 'w', type: 'wait', minutes: 10 },
        { id: 'b', type: 'send', text: 'Pasaron 10 minutos' },
      ],
    });
    const c = await writes(acct, freshPhone(), 'Recordame');
    await runDue();
    let e = await lastExecution(acct, a.id);
    expect([e.status, e.currentStepId]).toEqual(['running', 'w']);
    app.clock.advance(9 * MINUTE);
    await runDue();
    e = await lastExecution(acct, a.id);
    expect([e.status, e.currentStepId]).toEqual(['running', 'w']);
    expect(await texts(acct, c.conversationId)).toEqual(['contact:Recordame', 'automation:Te escribo en 10 minutos']);
    app.clock.advance(MINUTE + 1000);
    await runDue();
    e = await lastExecution(acct, a.id);
    expect(e.status).toBe('completed');
    expect((await texts(acct, c.conversationId)).at(-1)).toBe('automation:Pasaron 10 minutos');
  });

  it('stage: "moves the conversation\'s open case to that stage" with case.stage_changed', async () => {
    const acct = await app.createAccount();
    const p = await app.admin('POST', `/accounts/${acct.id}/pipelines`, {
      name: 'Ventas',
      stages: [
        { name: 'Nuevo', kind: 'open' },
        { name: 'Cotizado', kind: 'open' },
        { name: 'Ganado', kind: 'won' },
      ],
    });
    expect(p.status).toBe(201);
    const cotizado = p.body.stages[1].id;
    const a = await flow(acct, {
      name: 'Cotizar',
      trigger: { type: 'keyword', keywords: ['cotizar'], match: 'contains' },
      steps: [
        { id: 'st', type: 'stage', stageId: cotizado },
        { id: 's', type: 'send', text: 'Te paso la cotización' },
      ],
    });
    const c = await writes(acct, freshPhone(), 'Quiero cotizar');
    await runDue();
    const conv = await acct.call('GET', `/conversations/${c.conversationId}`);
    const caseId = conv.body.openCaseId;
    expect(caseId).toBeTruthy();
    const kase = await acct.call('GET', `/cases/${caseId}`);
    expect(kase.body.stage.stage).toMatchObject({ id: cotizado, name: 'Cotizado' });
    // The case entered the pipeline at "Nuevo" (one event), then the step moved it (another).
    const moved = (await app.events(acct.id, 'case.stage_changed')).filter((ev) => ev.data.id === caseId);
    expect(moved.map((ev) => ev.data.stage.stage.name)).toEqual(['Nuevo', 'Cotizado']);
    const e = await lastExecution(acct, a.id);
    expect(e.steps.map((s: any) => [s.stepId, s.outcome])).toEqual([
      ['st', 'ok'],
      ['s', 'ok'],
    ]);
  });

  it('handoff: "ends handed_off; the note goes to the conversation for the team"; end: "ends completed" (steps after it never run)', async () => {
    const acct = await app.createAccount();
    const h = await flow(acct, {
      name: 'Humano',
      trigger: { type: 'keyword', keywords: ['humano'], match: 'contains' },
      steps: [
        { id: 's', type: 'send', text: 'Te paso con el equipo' },
        { id: 'h', type: 'handoff', note: '{{contact.name}} pide hablar con alguien' },
        { id: 'nunca', type: 'send', text: 'no se manda' },
      ],
    });
    const e2 = await flow(acct, {
      name: 'Fin',
      trigger: { type: 'keyword', keywords: ['chau'], match: 'exact' },
      steps: [
        { id: 'fin', type: 'end' },
        { id: 'nunca', type: 'send', text: 'no se manda' },
      ],
    });
    const phone = freshPhone();
    const c = await writes(acct, phone, 'Quiero un humano', { name: 'Ana' });
    await runDue();
    const e = await lastExecution(acct, h.id);
    expect(e.status).toBe('handed_off');
    const notes = await app.admin('GET', `/accounts/${acct.id}/conversations/${c.conversationId}/notes`);
    expect(notes.status).toBe(200);
    expect(notes.body.data.map((n: any) => n.text)).toEqual(['Ana pide hablar con alguien']);
    const conv = await acct.call('GET', `/conversations/${c.conversationId}`);
    expect(conv.body.handling.type).toBe('team');
    expect(await texts(acct, c.conversationId)).toEqual(['contact:Quiero un humano', 'automation:Te paso con el equipo']);
    // While the team handles the case, the keyword starts nothing; once that case closes, it does again.
    await writes(acct, phone, 'humano otra vez');
    await runDue();
    expect(await executions(acct, h.id)).toHaveLength(1);
    const closed = await app.admin('POST', `/accounts/${acct.id}/cases/${conv.body.openCaseId}/close`, {});
    expect(closed.status, JSON.stringify(closed.body)).toBe(200);
    await writes(acct, phone, 'humano, de nuevo');
    await runDue();
    expect((await executions(acct, h.id)).map((x) => x.status)).toEqual(['handed_off', 'handed_off']);

    const c2 = await writes(acct, freshPhone(), 'Chau');
    await runDue();
    const f = await lastExecution(acct, e2.id);
    expect(f.status).toBe('completed');
    expect(f.steps.map((s: any) => [s.stepId, s.outcome])).toEqual([['fin', 'ok']]);
    expect(await texts(acct, c2.conversationId)).toEqual(['contact:Chau']);
  });
});

describe('rule 1: validation on save', () => {
  it('"unknown step types or fields, duplicate ids, a next/then/else/onError/timeoutNext naming no step, a template or stage … of another account, or a cycle without an ask or wait in it → 400 with the list of problems"', async () => {
    const acct = await app.createAccount();
    const other = await app.createAccount();
    const t = await app.admin('POST', `/accounts/${other.id}/templates`, {
      name: 'ajena',
      category: 'UTILITY',
      status: 'APPROVED',
      body: 'Hola',
      variables: [],
    });
    expect(t.status).toBe(201);
    const p = await app.admin('POST', `/accounts/${other.id}/pipelines`, { name: 'Ajeno', stages: [{ name: 'Nuevo', kind: 'open' }] });
    expect(p.status).toBe(201);
    const r = await app.admin('POST', `/accounts/${acct.id}/automations`, {
      name: 'Mal',
      status: 'active',
      trigger: { type: 'cron' },
      steps: [
        { id: 'a', type: 'send', text: 'hola', color: 'rojo' },
        { id: 'b', type: 'bogus' },
        branch('c', { var: 'x', op: 'exists' }, 'nope', 'nada'),
        { id: 'd', type: 'ask', text: '¿?', save: 'r', timeoutNext: 'zz', next: 'yy' },
        { id: 'a', type: 'http', method: 'GET', url: 'https://example.com', onError: 'qq' },
        { id: 'f', type: 'send', template: { id: t.body.id } },
        { id: 'g', type: 'stage', stageId: p.body.stages[0].id },
        { id: 'h', type: 'set_attribute', attribute: 'x', value: '1', next: 'i' },
        branch('i', { var: 'x', op: 'exists' }, 'h', 'h'),
      ],
    });
    expect(r.status).toBe(400);
    const problems = problemsOf(r.body);
    const paths = problems.map((x) => x.path.join('.'));
    expect(paths.sort()).toEqual(
      [
        'trigger.type',
        'steps.0.color',
        'steps.1.type',
        'steps.4.id',
        'steps.2.then',
        'steps.2.else',
        'steps.3.timeoutNext',
        'steps.3.next',
        'steps.4.onError',
        'steps.5.template.id',
        'steps.6.stageId',
        'steps.7',
      ].sort(),
    );
    const at = (path: string) => problems.find((x) => x.path.join('.') === path)?.message ?? '';
    expect(at('steps.4.id')).toMatch(/"a"/);
    expect(at('steps.2.then')).toMatch(/"nope"/);
    expect(at('steps.7')).toMatch(/"h"/);
    // Nothing was saved.
    expect((await app.admin('GET', `/accounts/${acct.id}/automations`)).body.data).toEqual([]);

    // A change is validated with the rest of the flow: a next that names no step, and the flow stays as it was.
    const ok = await flow(acct, { name: 'Bien', trigger: { type: 'api' }, steps: [{ id: 'f', type: 'end' }] });
    const patch = await app.admin('PATCH', `/accounts/${acct.id}/automations/${ok.id}`, {
      steps: [
        { id: 'a', type: 'send', text: 'hola', next: 'falta' },
        { id: 'b', type: 'wait', minutes: 0 },
      ],
    });
    expect(patch.status).toBe(400);
    expect(
      problemsOf(patch.body)
        .map((x) => x.path.join('.'))
        .sort(),
    ).toEqual(['steps.0.next', 'steps.1.minutes']);
    expect((await app.admin('GET', `/accounts/${acct.id}/automations/${ok.id}`)).body.steps).toEqual([{ id: 'f', type: 'end' }]);
  });

  it("an agent step names an agent of the account: another account's or an unknown one is a 400 at agentId", async () => {
    const acct = await app.createAccount();
    const r = await app.admin('POST', `/accounts/${acct.id}/automations`, {
      name: 'Agente',
      trigger: { type: 'api' },
      steps: [{ id: 'ag', type: 'agent', agentId: '7d0c1a6e-1c1b-4b7e-9a55-0d5f1f3f2a11' }],
    });
    expect(r.status).toBe(400);
    const problems = problemsOf(r.body);
    expect(problems).toHaveLength(1);
    expect(problems[0].path).toEqual(['steps', 0, 'agentId']);
    expect(problems[0].message).toMatch(/agente/i);
    const agent = await app.admin('POST', `/accounts/${acct.id}/agents`, { name: 'Ventas' });
    const ok = await app.admin('POST', `/accounts/${acct.id}/automations`, {
      name: 'Agente',
      trigger: { type: 'api' },
      steps: [{ id: 'ag', type: 'agent', agentId: agent.body.id }],
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
  });
});
