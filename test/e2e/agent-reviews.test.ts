import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LlmClient } from '../../src/llm/types.js';
import { writes } from '../automations.js';
import { type FakeLlm, type FakeLlmAnswer, type FakeLlmRequest, startFakeLlm } from '../fakes/llm.js';
import { freshPhone, type TestAccount, type TestApp } from '../harness.js';
import { startAppWithModel } from '../model-app.js';

let llm: FakeLlm;
let app: TestApp;
let client: LlmClient;

/** The model's answers, by kind of request: an agent's turn (tools) or a review (json_schema "review"). */
const turns: FakeLlmAnswer[] = [];
const reviews: FakeLlmAnswer[] = [];
const isReview = (r: FakeLlmRequest) => r.responseFormat?.json_schema?.name === 'review';
const reviewRequests = () => llm.requests.filter(isReview);

beforeAll(async () => {
  llm = await startFakeLlm();
  app = await startAppWithModel(llm);
  client = app.rt.services.llm as LlmClient;
  // A turn with nothing scripted answers nothing; a review with nothing scripted, an empty review.
  llm.otherwise = (req) =>
    isReview(req)
      ? (reviews.shift() ?? { json: { summary: null, criteria: [], extracted: [] } })
      : (turns.shift() ?? { text: null, toolCalls: [] });
});
afterAll(async () => {
  await app?.close();
  await llm?.close();
});
beforeEach(() => {
  app.rt.services.llm = client;
  llm.requests.length = 0;
  llm.queue.length = 0;
  turns.length = 0;
  reviews.length = 0;
});

const REVIEW = {
  criteria: [
    { name: 'saludo', description: 'Saludó al cliente al empezar', kind: 'pass_fail' },
    { name: 'resolvio', description: 'Resolvió lo que el cliente pedía', kind: 'pass_fail' },
    { name: 'amabilidad', description: 'Qué tan amable fue', kind: 'score' },
  ],
  extract: [
    { name: 'producto', description: 'Qué quiere comprar' },
    { name: 'email', description: 'Su correo electrónico' },
  ],
};

const AGENT = {
  name: 'Ventas',
  status: 'active',
  instructions: 'Sos la vendedora de la tienda de yerba.',
  goal: { description: 'Una intención de compra', fields: [{ name: 'producto', description: 'Qué quiere', required: true }] },
  review: REVIEW,
  model: 'qwen-revisor',
};

/** An active agent (advanced unless the body says otherwise) that answers the account's number. */
async function numberAgent(acct: TestAccount, body: Record<string, unknown> = {}) {
  const r = await app.admin('POST', `/accounts/${acct.id}/agents`, { ...AGENT, ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const p = await app.admin('PATCH', `/accounts/${acct.id}/phone-numbers/${acct.phoneNumberId}`, { agentId: r.body.id });
  expect(p.status, JSON.stringify(p.body)).toBe(200);
  return r.body as { id: string; version: string };
}

async function runJob(name: string) {
  const r = await app.admin('POST', `/jobs/${name}/run`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { changed: number };
}

/** Runs the agents' turns, then the reviews, due now. */
async function settle() {
  await runJob('agents');
  await runJob('agent-reviews');
}

const goal = (summary = 'Quiere yerba') => ({
  text: null,
  toolCalls: [
    { name: 'reply', args: { text: '¡Hola! Te anoto la yerba.' } },
    { name: 'goal_reached', args: { data: { producto: 'yerba' }, summary } },
  ],
});
const handOff = {
  text: null,
  toolCalls: [{ name: 'hand_off', args: { reason: 'Pide un descuento', summary: 'Quiere precio mayorista' } }],
};

/** The customer writes; the model's turn ends the stretch with `turn`; the jobs run. */
async function endedStretch(acct: TestAccount, turn: FakeLlmAnswer, text = 'Hola, quiero 2 kg de yerba', from = freshPhone()) {
  turns.push(turn);
  const w = await writes(app, acct, from, text);
  await settle();
  return w;
}

const reviewed = (acct: TestAccount) => app.events(acct.id, 'agent.conversation_reviewed');

async function listReviews(acct: TestAccount, agentId: string, query = '') {
  const r = await app.admin('GET', `/accounts/${acct.id}/agents/${agentId}/reviews${query}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { data: any[]; hasMore: boolean; nextCursor: string | null };
}

const rerun = (acct: TestAccount, agentId: string, reviewId: string) =>
  app.admin('POST', `/accounts/${acct.id}/agents/${agentId}/reviews/${reviewId}/rerun`);

describe('"When a stretch of an agent with `review` ends, one model call with a JSON-schema response reviews it, then agent.conversation_reviewed"', () => {
  it('a goal ends the stretch: one review call (json_schema "review", the agent\'s model, the criteria and names in Spanish, the stretch\'s messages) and the event with the exact data', async () => {
    const acct = await app.createAccount();
    const agent = await numberAgent(acct);
    // One change of what it does: the stretch runs version "2".
    expect((await app.admin('PATCH', `/accounts/${acct.id}/agents/${agent.id}`, { maxTurns: 10 })).body.version).toBe('2');
    reviews.push({
      json: {
        summary: '  La clienta quiere 2 kg de yerba.  ',
        criteria: [
          { name: 'amabilidad', result: 'success', score: 4.4 },
          { name: 'inventado', result: 'failure', score: null },
          { name: 'saludo', result: 'success', score: 3 },
        ],
        extracted: [
          { name: 'producto', value: 'yerba' },
          { name: 'telefono', value: '1122334455' },
        ],
      },
    });
    const w = await endedStretch(acct, goal());

    const events = await reviewed(acct);
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toEqual({
      agentId: agent.id,
      agentVersion: '2',
      conversationId: w.conversationId,
      contactId: w.contactId,
      endedBy: 'goal',
      summary: 'La clienta quiere 2 kg de yerba.',
      // One per criterion of the agent, in its order: pass_fail → result (missing: unknown), score
      // null; score → result null, score 1–5 (rounded). Unknown names dropped.
      criteria: [
        { name: 'saludo', result: 'success', score: null },
        { name: 'resolvio', result: 'unknown', score: null },
        { name: 'amabilidad', result: null, score: 4 },
      ],
      // Every extract name, null when not found; unknown names dropped.
      extracted: { producto: 'yerba', email: null },
    });

    const [req] = reviewRequests();
    expect(reviewRequests()).toHaveLength(1);
    expect(req?.model).toBe('qwen-revisor');
    expect(req?.responseFormat).toMatchObject({ type: 'json_schema', json_schema: { name: 'review', strict: true } });
    expect(req?.responseFormat.json_schema.schema.required).toEqual(['summary', 'criteria', 'extracted']);
    expect(req?.toolNames).toEqual([]);
    expect(req?.system).toContain('Sos un revisor de calidad');
    expect(req?.system).toContain('"saludo" (de aprobado o no');
    expect(req?.system).toContain('Saludó al cliente al empezar');
    expect(req?.system).toContain('"amabilidad" (de puntaje');
    expect(req?.system).toContain('- "producto": Qué quiere comprar');
    expect(req?.system).toContain('- "email": Su correo electrónico');
    expect(req?.lastUser).toBe('La conversación:\n\nCliente: Hola, quiero 2 kg de yerba\nEmpresa: ¡Hola! Te anoto la yerba.');
  });

  it('"endedBy: handoff": the model hands off; the review says so', async () => {
    const acct = await app.createAccount();
    const agent = await numberAgent(acct);
    reviews.push({ json: { summary: 'Pidió un descuento.', criteria: [], extracted: [] } });
    await endedStretch(acct, handOff, 'Hola, ¿me hacen precio por mayor?');
    const events = await reviewed(acct);
    expect(events.map((e) => [e.data.agentId, e.data.endedBy, e.data.summary])).toEqual([[agent.id, 'handoff', 'Pidió un descuento.']]);
    expect(events[0]?.data.criteria).toEqual([
      { name: 'saludo', result: 'unknown', score: null },
      { name: 'resolvio', result: 'unknown', score: null },
      { name: 'amabilidad', result: null, score: null },
    ]);
    expect(events[0]?.data.extracted).toEqual({ producto: null, email: null });
  });

  it('"endedBy: idle" (one hour without messages): the idle stretch is reviewed too', async () => {
    const acct = await app.createAccount();
    await numberAgent(acct);
    // The turn only replies: the stretch keeps running.
    await endedStretch(acct, { text: null, toolCalls: [{ name: 'reply', args: { text: '¿Qué yerba buscás?' } }] }, 'Hola');
    expect(await reviewed(acct)).toEqual([]);
    app.clock.advance(61 * 60_000);
    await settle();
    const events = await reviewed(acct);
    expect(events.map((e) => e.data.endedBy)).toEqual(['idle']);
    expect(reviewRequests()[0]?.lastUser).toBe('La conversación:\n\nCliente: Hola\nEmpresa: ¿Qué yerba buscás?');
  });

  it('"a team member who sends in the conversation ends the agent\'s part: the stretch ends as handoff": that stretch is reviewed too, the team\'s message in it', async () => {
    const acct = await app.createAccount();
    await numberAgent(acct);
    const w = await endedStretch(acct, { text: null, toolCalls: [{ name: 'reply', args: { text: '¿Qué yerba buscás?' } }] }, 'Hola');
    const team = await app.admin('POST', `/accounts/${acct.id}/conversations/${w.conversationId}/messages`, {
      text: 'Hola, soy Laura del equipo',
      by: { id: 'u-1', name: 'Laura' },
    });
    expect(team.status, JSON.stringify(team.body)).toBe(201);
    await runJob('agent-reviews');
    expect((await reviewed(acct)).map((e) => [e.data.conversationId, e.data.endedBy])).toEqual([[w.conversationId, 'handoff']]);
    expect(reviewRequests().at(-1)?.lastUser).toBe(
      'La conversación:\n\nCliente: Hola\nEmpresa: ¿Qué yerba buscás?\nEmpresa: Hola, soy Laura del equipo',
    );
  });
});

describe('"Once per stretch; again on rerun. Reviews are stored and listed."', () => {
  it('running the jobs again reviews nothing more: one model call, one event, one stored review', async () => {
    const acct = await app.createAccount();
    const agent = await numberAgent(acct);
    const w = await endedStretch(acct, goal());
    await settle();
    app.clock.advance(61 * 60_000);
    await settle();
    expect(reviewRequests()).toHaveLength(1);
    expect(await reviewed(acct)).toHaveLength(1);
    const list = await listReviews(acct, agent.id);
    expect(list.data).toHaveLength(1);
    expect(list.data[0]).toEqual({
      id: expect.any(String),
      agentId: agent.id,
      agentVersion: '1',
      stretchId: expect.any(String),
      conversationId: w.conversationId,
      contactId: w.contactId,
      endedBy: 'goal',
      status: 'done',
      summary: null,
      criteria: [
        { name: 'saludo', result: 'unknown', score: null },
        { name: 'resolvio', result: 'unknown', score: null },
        { name: 'amabilidad', result: null, score: null },
      ],
      extracted: { producto: null, email: null },
      error: null,
      runs: 1,
      createdAt: expect.any(String),
      reviewedAt: expect.any(String),
    });
  });

  it('rerun: runs the review now inside the request (one model call), answers it, and emits agent.conversation_reviewed again', async () => {
    const acct = await app.createAccount();
    const agent = await numberAgent(acct);
    reviews.push({ json: { summary: 'Primera.', criteria: [{ name: 'saludo', result: 'failure', score: null }], extracted: [] } });
    await endedStretch(acct, goal());
    const [first] = (await listReviews(acct, agent.id)).data;
    const before = reviewRequests().length;

    reviews.push({
      json: {
        summary: 'Segunda.',
        criteria: [{ name: 'saludo', result: 'success', score: null }],
        extracted: [{ name: 'email', value: 'ana@example.com' }],
      },
    });
    const r = await rerun(acct, agent.id, first.id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(reviewRequests()).toHaveLength(before + 1);
    expect(r.body).toMatchObject({ id: first.id, status: 'done', summary: 'Segunda.', runs: 2, error: null });
    expect(r.body.criteria[0]).toEqual({ name: 'saludo', result: 'success', score: null });
    expect(r.body.extracted).toEqual({ producto: null, email: 'ana@example.com' });

    const events = await reviewed(acct);
    expect(events.map((e) => e.data.summary)).toEqual(['Primera.', 'Segunda.']);
    expect(events[1]?.data).toEqual({ ...events[0]?.data, summary: 'Segunda.', criteria: r.body.criteria, extracted: r.body.extracted });
    // The list shows the review as the rerun left it; still one review for the stretch.
    expect((await listReviews(acct, agent.id)).data).toEqual([r.body]);
  });

  it('GET …/reviews: newest first, pages by limit and after (nextCursor)', async () => {
    const acct = await app.createAccount();
    const agent = await numberAgent(acct);
    const one = await endedStretch(acct, goal(), 'Hola, soy la primera');
    app.clock.advance(1000);
    const two = await endedStretch(acct, handOff, 'Hola, soy el segundo');
    const all = await listReviews(acct, agent.id);
    expect(all.data.map((r) => r.conversationId)).toEqual([two.conversationId, one.conversationId]);
    expect(all).toMatchObject({ hasMore: false, nextCursor: null });
    const p1 = await listReviews(acct, agent.id, '?limit=1');
    expect(p1.data.map((r) => r.endedBy)).toEqual(['handoff']);
    expect(p1).toMatchObject({ hasMore: true, nextCursor: p1.data[0].id });
    const p2 = await listReviews(acct, agent.id, `?limit=1&after=${p1.nextCursor}`);
    expect(p2.data.map((r) => r.endedBy)).toEqual(['goal']);
    expect(p2).toMatchObject({ hasMore: false, nextCursor: null });
  });

  it("unknown account, agent or review → 404; another agent's review → 404", async () => {
    const acct = await app.createAccount();
    const agent = await numberAgent(acct);
    const other = await app.admin('POST', `/accounts/${acct.id}/agents`, { ...AGENT, name: 'Otro' });
    await endedStretch(acct, goal());
    const [review] = (await listReviews(acct, agent.id)).data;
    const nobody = '00000000-0000-4000-8000-000000000000';
    expect((await app.admin('GET', `/accounts/${nobody}/agents/${agent.id}/reviews`)).status).toBe(404);
    const noAgent = await app.admin('GET', `/accounts/${acct.id}/agents/${nobody}/reviews`);
    expect(noAgent.status).toBe(404);
    expect(noAgent.body.error).toBe('No encontramos ese agente de IA en tu cuenta. Revisá el id.');
    const noReview = await rerun(acct, agent.id, nobody);
    expect(noReview.status).toBe(404);
    expect(noReview.body.error).toBe('No encontramos esa revisión para este agente. Revisá los ids.');
    expect((await rerun(acct, other.body.id, review.id)).status).toBe(404);
    expect((await listReviews(acct, other.body.id)).data).toEqual([]);
  });
});

describe('a review that cannot run: stored failed with a Spanish reason, no event', () => {
  it('the model failing after its three tries: failed, no event; a rerun that fails answers 502 agent_model_failed; one that works emits', async () => {
    const acct = await app.createAccount();
    const agent = await numberAgent(acct);
    reviews.push({ status: 500 }, { status: 500 }, { status: 500 });
    await endedStretch(acct, goal());
    expect(reviewRequests()).toHaveLength(3);
    const [review] = (await listReviews(acct, agent.id)).data;
    expect(review).toMatchObject({
      status: 'failed',
      summary: null,
      criteria: null,
      extracted: null,
      reviewedAt: null,
      runs: 1,
      error:
        'El modelo de lenguaje no respondió después de tres intentos, así que la conversación no se revisó. Revisá que el servidor del modelo (LLM_BASE_URL) funcione y volvé a correr la revisión.',
    });
    expect(await reviewed(acct)).toEqual([]);
    // Not tried again on its own.
    app.clock.advance(10 * 60_000);
    await runJob('agent-reviews');
    expect(reviewRequests()).toHaveLength(3);

    reviews.push({ status: 503 }, { status: 503 }, { status: 503 });
    const failed = await rerun(acct, agent.id, review.id);
    expect(failed.status).toBe(502);
    expect(failed.body.error).toBe(
      'El modelo de lenguaje no respondió después de tres intentos. Revisá que el servidor del modelo (LLM_BASE_URL) esté funcionando y que el modelo exista, y probá de nuevo.',
    );
    expect((await listReviews(acct, agent.id)).data[0]).toMatchObject({ status: 'failed', runs: 2 });
    expect(await reviewed(acct)).toEqual([]);

    reviews.push({ json: { summary: 'Ahora sí.', criteria: [], extracted: [] } });
    const ok = await rerun(acct, agent.id, review.id);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: 'done', summary: 'Ahora sí.', error: null, runs: 3 });
    expect((await reviewed(acct)).map((e) => e.data.summary)).toEqual(['Ahora sí.']);
  });

  it('no language model configured: failed with a clear Spanish text; rerun → 409 agent_model_missing, nothing changes', async () => {
    const acct = await app.createAccount();
    const agent = await numberAgent(acct);
    // The stretch ends with the model's turn; by the time the review runs the model is gone (as
    // after a restart without LLM_BASE_URL).
    llm.respond(() => {
      app.rt.services.llm = null;
      return goal();
    });
    await writes(app, acct, freshPhone(), 'Hola, quiero yerba');
    await settle();
    const [review] = (await listReviews(acct, agent.id)).data;
    expect(review).toMatchObject({
      status: 'failed',
      error:
        'No hay un modelo de lenguaje configurado en este servidor, así que la conversación no se revisó. Configurá LLM_BASE_URL, reiniciá el servicio y volvé a correr la revisión.',
    });
    expect(await reviewed(acct)).toEqual([]);
    expect(reviewRequests()).toEqual([]);

    const r = await rerun(acct, agent.id, review.id);
    expect(r.status).toBe(409);
    expect(r.body.error).toContain(
      'No hay un modelo de lenguaje configurado en este servidor, así que no podemos revisar la conversación.',
    );
    expect((await listReviews(acct, agent.id)).data[0]).toEqual(review);
  });
});

describe('"present = an advanced agent whose stretches are reviewed"', () => {
  it('an agent without review: its stretch ends, nothing is queued, asked or emitted', async () => {
    const acct = await app.createAccount();
    const agent = await numberAgent(acct, { review: null });
    await endedStretch(acct, goal());
    expect(await app.events(acct.id, 'agent.goal_reached')).toHaveLength(1);
    expect(reviewRequests()).toEqual([]);
    expect(await reviewed(acct)).toEqual([]);
    expect((await listReviews(acct, agent.id)).data).toEqual([]);
  });

  it("test stretches are not reviewed: an automation's test run hands the conversation to the agent, its stretch ends, nothing is queued", async () => {
    const acct = await app.createAccount();
    const agent = (await app.admin('POST', `/accounts/${acct.id}/agents`, AGENT)).body;
    const flow = await app.admin('POST', `/accounts/${acct.id}/automations`, {
      name: 'Al agente',
      trigger: { type: 'api' },
      steps: [{ id: 'a', type: 'agent', agentId: agent.id }],
    });
    expect(flow.status, JSON.stringify(flow.body)).toBe(201);
    const to = freshPhone();
    const t = await app.admin('POST', `/accounts/${acct.id}/automations/${flow.body.id}/test`, { to });
    expect(t.status, JSON.stringify(t.body)).toBeLessThan(300);
    await runJob('automations');
    await endedStretch(acct, goal(), 'Hola, quiero yerba', to);
    const stretches = await app.rt.services.db
      .selectFrom('agent_stretches')
      .select(['status', 'test'])
      .where('agent_id', '=', agent.id)
      .execute();
    expect(stretches).toEqual([{ status: 'ended', test: true }]);
    expect(reviewRequests()).toEqual([]);
    expect(await reviewed(acct)).toEqual([]);
    expect((await listReviews(acct, agent.id)).data).toEqual([]);
  });
});
