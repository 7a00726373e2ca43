import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../fakes/llm.js';
import { startTestApp, type TestAccount, type TestApp } from '../harness.js';
import { startAppWithModel } from '../model-app.js';

let llm: FakeLlm;
let app: TestApp;
let bare: TestApp;

beforeAll(async () => {
  llm = await startFakeLlm();
  app = await startAppWithModel(llm);
  bare = await startTestApp();
});
afterAll(async () => {
  await app?.close();
  await bare?.close();
  await llm?.close();
});
beforeEach(() => {
  llm.requests.length = 0;
  llm.queue.length = 0;
});

const AGENT = {
  name: 'Ventas',
  instructions: 'Sos la vendedora de la tienda de yerba. Tuteá con voseo.',
  goal: {
    description: 'Una intención de compra',
    fields: [
      { name: 'producto', description: 'Qué quiere comprar', required: true },
      { name: 'cantidad', description: 'Cuántas unidades', required: true },
    ],
  },
  handoff: { rules: ['Si pide un descuento'] },
};

async function agentOf(a: TestApp, body: Record<string, unknown> = AGENT): Promise<{ acct: TestAccount; url: string }> {
  const acct = await a.createAccount();
  const r = await a.admin('POST', `/accounts/${acct.id}/agents`, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { acct, url: `/accounts/${acct.id}/agents/${r.body.id}/test` };
}

describe('"POST …/agents/{agentId}/test: a test turn: runs the model, sends nothing, emits nothing"', () => {
  it('one model turn with the system prompt and the three tools; a reply answers {replies, toolCalls, testConversationId}', async () => {
    const { acct, url } = await agentOf(app, { ...AGENT, model: 'qwen2.5:7b' });
    llm.toolCalls([{ name: 'reply', args: { text: '¡Hola! ¿Qué yerba buscás?' } }]);
    const r = await app.admin('POST', url, { text: 'Hola, quiero comprar' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      replies: ['¡Hola! ¿Qué yerba buscás?'],
      toolCalls: [{ name: 'reply', arguments: { text: '¡Hola! ¿Qué yerba buscás?' } }],
      testConversationId: expect.any(String),
    });
    expect(llm.requests).toHaveLength(1);
    const [req] = llm.requests;
    expect(req.model).toBe('qwen2.5:7b');
    expect(req.toolNames).toEqual(['reply', 'goal_reached', 'hand_off']);
    expect(req.system).toContain('Sos la vendedora de la tienda de yerba.');
    expect(req.system).toContain('Una intención de compra');
    expect(req.system).toContain('- producto (obligatorio): Qué quiere comprar — falta');
    expect(req.system).toContain('- Si pide un descuento');
    expect(req.system).toContain('Hoy es ');
    expect(req.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user']);
    expect(req.lastUser).toBe('Hola, quiero comprar');
    // Nothing sent, nothing emitted.
    expect(await app.events(acct.id)).toEqual([]);
  });

  it('the server model (LLM_MODEL) when the agent names none', async () => {
    const { url } = await agentOf(app);
    await app.admin('POST', url, { text: 'Hola' });
    expect(llm.requests[0].model).toBe('llama3.1');
  });

  it('"`data` keeps only the goal\'s field names": goal_reached answered trimmed in replies, as the model made it in toolCalls', async () => {
    const { acct, url } = await agentOf(app);
    llm.toolCalls([
      { name: 'reply', args: { text: 'Listo, te anoto 3 de yerba.' } },
      { name: 'goal_reached', args: { data: { producto: 'yerba', cantidad: '3', color: 'verde' }, summary: 'Compra de yerba' } },
    ]);
    const r = await app.admin('POST', url, { text: 'Quiero 3 de yerba' });
    expect(r.status).toBe(200);
    expect(r.body.replies).toEqual(['Listo, te anoto 3 de yerba.']);
    expect(r.body.toolCalls).toEqual([
      { name: 'reply', arguments: { text: 'Listo, te anoto 3 de yerba.' } },
      { name: 'goal_reached', arguments: { data: { producto: 'yerba', cantidad: '3', color: 'verde' }, summary: 'Compra de yerba' } },
    ]);
    expect(await app.events(acct.id)).toEqual([]);
  });

  it('"`phrases` match without asking the model": a handoff phrase answers hand_off and no model request', async () => {
    const { url } = await agentOf(app);
    const r = await app.admin('POST', url, { text: '¿Puedo HABLAR con una persona?' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      replies: [],
      toolCalls: [{ name: 'hand_off', arguments: { reason: 'El cliente pidió hablar con una persona', summary: null } }],
      testConversationId: expect.any(String),
    });
    expect(llm.requests).toHaveLength(0);
  });

  it('continuing a test conversation sends its earlier turns', async () => {
    const { url } = await agentOf(app);
    llm.toolCalls([{ name: 'reply', args: { text: '¿Cuántas querés?' } }]);
    const first = await app.admin('POST', url, { text: 'Quiero yerba' });
    const id = first.body.testConversationId;
    llm.toolCalls([{ name: 'reply', args: { text: 'Perfecto.' } }]);
    const second = await app.admin('POST', url, { text: 'Tres', conversationId: id });
    expect(second.status).toBe(200);
    expect(second.body.testConversationId).toBe(id);
    expect(llm.requests[1].messages.slice(1)).toEqual([
      { role: 'user', content: 'Quiero yerba' },
      { role: 'assistant', content: '¿Cuántas querés?' },
      { role: 'user', content: 'Tres' },
    ]);
    // A new conversation starts without them.
    await app.admin('POST', url, { text: 'Otra' });
    expect(llm.requests[2].messages.slice(1)).toEqual([{ role: 'user', content: 'Otra' }]);
  });

  it('an unknown conversationId, or one of another agent → 404', async () => {
    const { url } = await agentOf(app);
    const other = await agentOf(app);
    const theirs = (await app.admin('POST', other.url, { text: 'Hola' })).body.testConversationId;
    const unknown = await app.admin('POST', url, { text: 'Hola', conversationId: '00000000-0000-4000-8000-000000000000' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatch(/^No encontramos esa conversación de prueba/);
    expect((await app.admin('POST', url, { text: 'Hola', conversationId: theirs })).status).toBe(404);
  });

  it('bad bodies → 400 (strict; text 1–4,096; conversationId a UUID); an unknown agent → 404', async () => {
    const { acct, url } = await agentOf(app);
    for (const body of [
      {},
      { text: '' },
      { text: 'x'.repeat(4097) },
      { text: 'Hola', extra: 1 },
      { text: 'Hola', conversationId: 'abc' },
    ]) {
      expect((await app.admin('POST', url, body)).status, JSON.stringify(body)).toBe(400);
    }
    const missing = await app.admin('POST', `/accounts/${acct.id}/agents/00000000-0000-4000-8000-000000000000/test`, { text: 'Hola' });
    expect(missing.status).toBe(404);
    expect(llm.requests).toHaveLength(0);
  });

  it('"tried twice more … then" a model failure → 502 with the Spanish text', async () => {
    const { url } = await agentOf(app);
    llm.fail(500).fail(500).fail(500);
    const r = await app.admin('POST', url, { text: 'Hola' });
    expect(r.status).toBe(502);
    expect(r.body.error).toMatch(/^El modelo de lenguaje no respondió/);
    expect(llm.requests).toHaveLength(3);
  });

  it('"Not configured": without LLM_BASE_URL → 409 agent_model_missing', async () => {
    expect(bare.rt.services.llm).toBeNull();
    const { url } = await agentOf(bare);
    const r = await bare.admin('POST', url, { text: 'Hola' });
    expect(r.status).toBe(409);
    expect(r.body.error).toMatch(/^No hay un modelo de lenguaje configurado/);
    expect(r.body.error).toContain('LLM_BASE_URL');
  });
});
