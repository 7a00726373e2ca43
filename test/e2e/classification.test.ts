// Classification and score of cases (spec agents.md "Classification and score of cases";
// decisions.md reasonStatus / scoreBucket; docs/classification.md; operator.md "Reasons").
// The model path uses a stand-in LlmClient set on the services (no model server needed).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CLASSIFY_LEASE_MS, runClassifications, stopClassifier } from '../../src/classification/queue.js';
import type { ChatMessage, LlmClient } from '../../src/llm/types.js';
import { ModelError } from '../../src/llm/types.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const runJob = async (name = 'classification') => {
  const res = await app.admin('POST', `/jobs/${name}/run`);
  expect(res.status).toBe(200);
  return res.body.changed as number;
};

async function reason(acc: TestAccount, body: Record<string, unknown>) {
  const res = await app.admin('POST', `/accounts/${acc.id}/reasons`, body);
  expect(res.status).toBe(201);
  return res.body;
}

/** A customer writes; the classification job runs; answers the conversation's case (public API). */
async function writes(acc: TestAccount, from: string, text: string) {
  const res = await app.inbound({ accountId: acc.id, from, text });
  expect(res.status).toBe(201);
  await runJob();
  return caseOf(acc, res.body.conversationId);
}

async function caseOf(acc: TestAccount, conversationId: string) {
  const row = await app.rt.services.db
    .selectFrom('cases')
    .select('id')
    .where('conversation_id', '=', conversationId)
    .orderBy('opened_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
  const c = await acc.call('GET', `/cases/${row.id}`);
  expect(c.status).toBe(200);
  return c.body;
}

const classified = async (acc: TestAccount, caseId: string) =>
  (await app.events(acc.id, 'case.classified')).filter((e) => e.data.id === caseId);

const queued = async (caseId: string) =>
  (await app.rt.services.db.selectFrom('case_classifications').select('id').where('case_id', '=', caseId).execute()).length;

const PRECIO = {
  name: 'Consulta de precio',
  keywords: ['precio', 'cuánto', 'costo'],
  subreasons: [
    { name: 'Mayorista', keywords: ['por mayor', 'mayorista'] },
    { name: 'Cuotas', keywords: ['cuotas', 'tarjeta'] },
  ],
  scoring: {
    questions: [
      { question: '¿Quiere comprar?', weight: 60, keywords: ['comprar', 'quiero', 'lo llevo'] },
      { question: '¿Lo necesita ya?', weight: 40, keywords: ['hoy', 'urgente'] },
    ],
  },
};
const ENVIOS = { name: 'Envíos', keywords: ['envío', 'sale el envío', 'llega', 'demora'], subreasons: [], scoring: null };
const RECLAMO = { name: 'Reclamo', keywords: ['reclamo', 'problema', 'roto'] };

describe('the reasons catalogue (operator API: POST/GET /accounts/{id}/reasons, PATCH/DELETE …/reasons/{reasonId})', () => {
  it('"{id, name, keywords, subreasons: [{id, name, keywords}], scoring}": created with generated sub-reason ids, listed, read', async () => {
    const acc = await app.createAccount();
    const r = await reason(acc, PRECIO);
    expect(r).toMatchObject({ id: expect.any(String), name: 'Consulta de precio', keywords: PRECIO.keywords, scoring: PRECIO.scoring });
    expect(r.subreasons).toEqual([
      { id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'Mayorista', keywords: ['por mayor', 'mayorista'] },
      { id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'Cuotas', keywords: ['cuotas', 'tarjeta'] },
    ]);
    const other = await reason(acc, RECLAMO);
    expect(other).toMatchObject({ subreasons: [], scoring: null });
    const list = await app.admin('GET', `/accounts/${acc.id}/reasons`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((x: { name: string }) => x.name)).toEqual(['Consulta de precio', 'Reclamo']);
    const one = await app.admin('GET', `/accounts/${acc.id}/reasons/${r.id}`);
    expect(one.body).toEqual(r);
    // Another account cannot see it.
    const stranger = await app.createAccount();
    expect((await app.admin('GET', `/accounts/${stranger.id}/reasons/${r.id}`)).status).toBe(404);
    expect((await app.admin('GET', `/accounts/${stranger.id}/reasons`)).body.data).toEqual([]);
  });

  it("PATCH keeps the sub-reason ids sent, generates new ones, refuses an id that is not the reason's; DELETE removes it", async () => {
    const acc = await app.createAccount();
    const r = await reason(acc, PRECIO);
    const kept = r.subreasons[0];
    const res = await app.admin('PATCH', `/accounts/${acc.id}/reasons/${r.id}`, {
      subreasons: [
        { id: kept.id, name: 'Por mayor', keywords: ['mayorista'] },
        { name: 'Contado', keywords: ['efectivo'] },
      ],
      scoring: null,
    });
    expect(res.status).toBe(200);
    expect(res.body.subreasons).toEqual([
      { id: kept.id, name: 'Por mayor', keywords: ['mayorista'] },
      { id: expect.any(String), name: 'Contado', keywords: ['efectivo'] },
    ]);
    expect(res.body.subreasons[1].id).not.toBe(r.subreasons[1].id);
    expect(res.body.scoring).toBeNull();
    expect(res.body.name).toBe('Consulta de precio');

    const foreign = await app.admin('PATCH', `/accounts/${acc.id}/reasons/${r.id}`, {
      subreasons: [{ id: r.subreasons[1].id, name: 'Cuotas', keywords: [] }],
    });
    expect(foreign.status).toBe(400);
    expect(JSON.stringify(foreign.body)).toContain('subreasons');

    expect((await app.admin('DELETE', `/accounts/${acc.id}/reasons/${r.id}`)).status).toBe(204);
    expect((await app.admin('GET', `/accounts/${acc.id}/reasons/${r.id}`)).status).toBe(404);
    expect((await app.admin('PATCH', `/accounts/${acc.id}/reasons/${r.id}`, { name: 'x' })).status).toBe(404);
    expect((await app.admin('DELETE', `/accounts/${acc.id}/reasons/${r.id}`)).status).toBe(404);
    // The name is free again once deleted.
    await reason(acc, PRECIO);
  });

  it('names are unique per account: 409 with a Spanish text (letter case ignored), on create and on rename', async () => {
    const acc = await app.createAccount();
    await reason(acc, RECLAMO);
    const dup = await app.admin('POST', `/accounts/${acc.id}/reasons`, { ...RECLAMO, name: 'RECLAMO' });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toBe('Ya hay un motivo llamado "RECLAMO" en la cuenta. Elegí otro nombre o editá ese.');
    const other = await reason(acc, ENVIOS);
    const rename = await app.admin('PATCH', `/accounts/${acc.id}/reasons/${other.id}`, { name: 'reclamo' });
    expect(rename.status).toBe(409);
    // Renaming to its own name is fine; another account may use the name.
    expect((await app.admin('PATCH', `/accounts/${acc.id}/reasons/${other.id}`, { name: 'Envíos' })).status).toBe(200);
    await reason(await app.createAccount(), RECLAMO);
  });

  it('strict bodies: unknown fields, name 1–120, keywords ≤ 50 of 1–100, subreasons ≤ 30, questions ≤ 20 with weight 0–100 integer → 400', async () => {
    const acc = await app.createAccount();
    const bad: [Record<string, unknown>, (string | number)[]][] = [
      [{ ...RECLAMO, color: 'rojo' }, ['color']],
      [{ ...RECLAMO, name: '' }, ['name']],
      [{ ...RECLAMO, name: 'x'.repeat(121) }, ['name']],
      [{ name: 'Sin palabras' }, ['keywords']],
      [{ ...RECLAMO, keywords: Array.from({ length: 51 }, (_, i) => `k${i}`) }, ['keywords']],
      [{ ...RECLAMO, keywords: ['x'.repeat(101)] }, ['keywords', 0]],
      [{ ...RECLAMO, subreasons: Array.from({ length: 31 }, (_, i) => ({ name: `s${i}`, keywords: [] })) }, ['subreasons']],
      [{ ...RECLAMO, subreasons: [{ name: 's', keywords: [], extra: 1 }] }, ['subreasons', 0, 'extra']],
      [{ ...RECLAMO, scoring: { questions: [{ question: 'q', weight: 101, keywords: [] }] } }, ['scoring', 'questions', 0, 'weight']],
      [{ ...RECLAMO, scoring: { questions: [{ question: 'q', weight: 2.5, keywords: [] }] } }, ['scoring', 'questions', 0, 'weight']],
      [
        { ...RECLAMO, scoring: { questions: [{ question: 'x'.repeat(301), weight: 1, keywords: [] }] } },
        ['scoring', 'questions', 0, 'question'],
      ],
      [
        { ...RECLAMO, scoring: { questions: Array.from({ length: 21 }, (_, i) => ({ question: `q${i}`, weight: 1, keywords: [] })) } },
        ['scoring', 'questions'],
      ],
      [{ ...RECLAMO, subreasons: [{ id: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e', name: 's', keywords: [] }] }, ['subreasons', 0, 'id']],
    ];
    for (const [body, path] of bad) {
      const res = await app.admin('POST', `/accounts/${acc.id}/reasons`, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      const problems = JSON.parse(res.body.error.message) as { path: (string | number)[]; message: string }[];
      expect(
        problems.map((p) => p.path),
        JSON.stringify(path),
      ).toContainEqual(path);
      for (const p of problems) expect(p.message).toMatch(/\S/);
    }
    expect((await app.admin('GET', `/accounts/${acc.id}/reasons`)).body.data).toEqual([]);
    expect((await app.admin('POST', '/accounts/0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e/reasons', RECLAMO)).status).toBe(404);
  });
});

describe('keyword rules (no model): "the reason whose keywords match most, confidence = 0.5 + 0.1 × matches, capped at 0.9"', () => {
  it('a first message "¿cuánto sale el envío?" picks the reason with most matches (Envíos: 2 over Consulta de precio: 1), confidence 0.7', async () => {
    const acc = await app.createAccount();
    const precio = await reason(acc, PRECIO);
    const envios = await reason(acc, ENVIOS);
    await reason(acc, RECLAMO);
    const c = await writes(acc, freshPhone(), '¿Cuánto sale el ENVÍO?');
    expect(c).toMatchObject({
      reasonId: envios.id,
      reason: 'Envíos',
      subreasonId: null,
      subreason: null,
      reasonSource: 'classifier',
      reasonStatus: 'set',
      reasonConfidence: 0.7,
      reasonSetBy: null,
      reasonSetAt: expect.any(String),
      score: null,
      scoreBucket: null,
      scoredReason: false,
    });
    expect(c.reasonId).not.toBe(precio.id);
    const ev = await classified(acc, c.id);
    expect(ev).toHaveLength(1);
    expect(ev[0].data).toMatchObject({ reason: { id: envios.id, name: 'Envíos' }, reasonSource: 'classifier', reasonStatus: 'set' });
    expect(await queued(c.id)).toBe(0);
  });

  it('"capped at 0.9", the sub-reason "likewise among its subreasons", and a question with no keyword said has probability 0', async () => {
    const acc = await app.createAccount();
    const precio = await reason(acc, PRECIO);
    const c = await writes(acc, freshPhone(), 'Precio, costo, cuánto… ¿en cuotas con tarjeta? precio precio');
    expect(c).toMatchObject({ reasonId: precio.id, reasonConfidence: 0.8, subreasonId: precio.subreasons[1].id, subreason: 'Cuotas' });
    // 3 distinct keywords: 0.5 + 0.3. Six would be 1.1: capped.
    const acc2 = await app.createAccount();
    await reason(acc2, { name: 'Muchas', keywords: ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'] });
    const c2 = await writes(acc2, freshPhone(), 'a1 a2 a3 a4 a5 a6');
    expect(c2.reasonConfidence).toBe(0.9);
    expect(c.scoreDetail).toEqual([
      { question: '¿Quiere comprar?', weight: 60, probability: 0 },
      { question: '¿Lo necesita ya?', weight: 40, probability: 0 },
    ]);
    expect(c).toMatchObject({ score: 0, scoreBucket: 'cold', scoredReason: true });
  });

  it('"classified after each of its first three inbound messages while reasonStatus is pending": the third can set it; a 4th does nothing', async () => {
    const acc = await app.createAccount();
    const reclamo = await reason(acc, RECLAMO);
    const from = freshPhone();
    let c = await writes(acc, from, 'Hola');
    expect(c.reasonStatus).toBe('pending');
    c = await writes(acc, from, 'Buen día');
    expect(c.reasonStatus).toBe('pending');
    c = await writes(acc, from, 'Tengo un reclamo');
    expect(c).toMatchObject({ reasonStatus: 'set', reasonId: reclamo.id, reasonConfidence: 0.6 });
    expect(await classified(acc, c.id)).toHaveLength(1);

    // A 4th message with more keywords is not classified: nothing queued, nothing changes.
    const other = freshPhone();
    for (const t of ['Hola', 'Hola', 'Hola']) c = await writes(acc, other, t);
    expect(c.reasonStatus).toBe('none');
    const res = await app.inbound({ accountId: acc.id, from: other, text: 'Reclamo: llegó roto, un problema' });
    expect(await queued(c.id)).toBe(0);
    expect(await runJob()).toBe(0);
    const after = await caseOf(acc, res.body.conversationId);
    expect(after).toMatchObject({ id: c.id, reasonStatus: 'none', reason: null, reasonId: null });
    expect(await classified(acc, c.id)).toHaveLength(0);
    const row = await app.rt.services.db.selectFrom('cases').select('inbound_count').where('id', '=', c.id).executeTakeFirstOrThrow();
    expect(row.inbound_count).toBe(4);
  });

  it('"After the third message with no reason: reasonStatus none" (not before), and no case.classified', async () => {
    const acc = await app.createAccount();
    await reason(acc, RECLAMO);
    const from = freshPhone();
    expect((await writes(acc, from, 'Hola')).reasonStatus).toBe('pending');
    expect((await writes(acc, from, '¿Están abiertos?')).reasonStatus).toBe('pending');
    const c = await writes(acc, from, 'Gracias');
    expect(c).toMatchObject({ reasonStatus: 'none', reason: null, reasonSource: null, reasonConfidence: null });
    expect(await classified(acc, c.id)).toHaveLength(0);
    // An account without a catalogue ends the same way, with no classification queued at all
    // (the inbound statement sets `none` on the third message itself).
    const bare = await app.createAccount();
    const p = freshPhone();
    for (const t of ['uno', 'dos']) expect((await writes(bare, p, t)).reasonStatus).toBe('pending');
    const last = await writes(bare, p, 'tres');
    expect(last.reasonStatus).toBe('none');
    expect(await queued(last.id)).toBe(0);
  });

  it("a catalogue created after a case's first message classifies from its second: whether the account has one is read with each message, never kept", async () => {
    const acc = await app.createAccount();
    const from = freshPhone();
    const first = await writes(acc, from, 'Hola');
    expect(first.reasonStatus).toBe('pending');
    expect(await queued(first.id)).toBe(0);
    await reason(acc, PRECIO);
    const second = await writes(acc, from, '¿Cuánto sale por mayor?');
    expect(second.id).toBe(first.id);
    expect(second).toMatchObject({ reasonStatus: 'set', reason: 'Consulta de precio', reasonSource: 'classifier' });
  });

  it('"A person\'s reason (operator API) always wins and is never overwritten by the classifier"', async () => {
    const acc = await app.createAccount();
    await reason(acc, RECLAMO);
    const from = freshPhone();
    const c = await writes(acc, from, 'Hola');
    const set = await app.admin('POST', `/accounts/${acc.id}/cases/${c.id}/reason`, { reason: 'Postventa' });
    expect(set.status).toBe(200);
    const after = await writes(acc, from, 'Tengo un reclamo, llegó roto');
    expect(after).toMatchObject({ reason: 'Postventa', reasonSource: 'person', reasonStatus: 'set', reasonConfidence: 1 });
    expect(await queued(c.id)).toBe(0);
    const ev = await classified(acc, c.id);
    expect(ev).toHaveLength(1);
    expect(ev[0].data.reasonSource).toBe('person');
  });
});

describe('score: "score = round(100 × Σ weightᵢ·pᵢ / Σ weightᵢ)", buckets hot ≥ 70 / warm 40–69 / cold < 40', () => {
  it('weights 60 and 40: warm 60, then hot 100; "case.classified is emitted when the reason is set or the score changes" (not otherwise)', async () => {
    const acc = await app.createAccount();
    const precio = await reason(acc, PRECIO);
    const from = freshPhone();
    let c = await writes(acc, from, '¿Cuánto cuesta? Quiero comprar dos');
    expect(c).toMatchObject({ reasonId: precio.id, score: 60, scoreBucket: 'warm', scoredReason: true });
    expect(c.scoreDetail).toEqual([
      { question: '¿Quiere comprar?', weight: 60, probability: 1 },
      { question: '¿Lo necesita ya?', weight: 40, probability: 0 },
    ]);
    expect(await classified(acc, c.id)).toHaveLength(1);

    c = await writes(acc, from, 'Lo necesito hoy');
    expect(c).toMatchObject({ reasonId: precio.id, reasonConfidence: 0.6, score: 100, scoreBucket: 'hot' });
    let ev = await classified(acc, c.id);
    expect(ev).toHaveLength(2);
    expect(ev[1].data).toMatchObject({ score: 100, scoreBucket: 'hot', reason: { id: precio.id, name: 'Consulta de precio' } });

    // The score does not change: no event.
    c = await writes(acc, from, 'Gracias');
    expect(c.score).toBe(100);
    ev = await classified(acc, c.id);
    expect(ev).toHaveLength(2);
  });

  it('weights 70 and 30: 70 is hot, 30 is cold; a reason without scoring questions has no score and its later messages emit nothing', async () => {
    const acc = await app.createAccount();
    await reason(acc, {
      name: 'Presupuesto',
      keywords: ['presupuesto'],
      scoring: {
        questions: [
          { question: '¿Tiene fecha?', weight: 70, keywords: ['fecha'] },
          { question: '¿Es empresa?', weight: 30, keywords: ['empresa'] },
        ],
      },
    });
    await reason(acc, RECLAMO);
    const hot = await writes(acc, freshPhone(), 'Presupuesto para esta fecha');
    expect(hot).toMatchObject({ score: 70, scoreBucket: 'hot' });
    const cold = await writes(acc, freshPhone(), 'Presupuesto para mi empresa');
    expect(cold).toMatchObject({ score: 30, scoreBucket: 'cold' });

    const from = freshPhone();
    let c = await writes(acc, from, 'Tengo un reclamo');
    expect(c).toMatchObject({ reason: 'Reclamo', score: null, scoreBucket: null, scoreDetail: [], scoredReason: false });
    c = await writes(acc, from, 'Presupuesto con fecha, es un problema');
    expect(c).toMatchObject({ reason: 'Reclamo', score: null });
    expect(await classified(acc, c.id)).toHaveLength(1);
  });
});

describe('with a model (a stand-in LlmClient on the services): "one call with a JSON-schema response {reasonId, subreasonId, confidence, answers}"', () => {
  type Reply = (input: { messages: ChatMessage[]; name: string }) => Promise<unknown>;
  let reply: Reply = async () => ({});
  const calls: { messages: ChatMessage[]; name: string }[] = [];
  const stub: LlmClient = {
    defaultModel: 'stand-in',
    budgetMs: 1000,
    chat: async () => ({ text: null, toolCalls: [] }),
    json: async <T>(input: { messages: ChatMessage[]; name: string; schema: { parse(v: unknown): T } }) => {
      calls.push({ messages: input.messages, name: input.name });
      return input.schema.parse(await reply(input));
    },
  };
  beforeAll(() => {
    app.rt.services.llm = stub;
  });
  afterAll(() => {
    app.rt.services.llm = null;
  });

  it("the model's reason, sub-reason, confidence and answers are used; the prompt lists the catalogue with ids and questions", async () => {
    const acc = await app.createAccount();
    const precio = await reason(acc, PRECIO);
    const envios = await reason(acc, ENVIOS);
    calls.length = 0;
    reply = async () => ({
      reasonId: precio.id,
      subreasonId: precio.subreasons[0].id,
      confidence: 0.83,
      answers: [
        { question: '¿Quiere comprar?', probability: 0.5 },
        { question: '¿Lo necesita ya?', probability: 1 },
      ],
    });
    const c = await writes(acc, freshPhone(), 'Necesito 40 unidades para mi local');
    expect(c).toMatchObject({
      reasonId: precio.id,
      subreasonId: precio.subreasons[0].id,
      subreason: 'Mayorista',
      reasonSource: 'classifier',
      reasonStatus: 'set',
      reasonConfidence: 0.83,
      score: 70,
      scoreBucket: 'hot',
    });
    expect(c.scoreDetail).toEqual([
      { question: '¿Quiere comprar?', weight: 60, probability: 0.5 },
      { question: '¿Lo necesita ya?', weight: 40, probability: 1 },
    ]);
    expect(calls).toHaveLength(1);
    const [system, user] = calls[0].messages;
    expect(system.role).toBe('system');
    for (const part of [precio.id, precio.subreasons[0].id, envios.id, 'Consulta de precio', '¿Quiere comprar?'])
      expect(system.content).toContain(part);
    expect(user).toMatchObject({ role: 'user' });
    expect(user.content).toContain('Necesito 40 unidades para mi local');
  });

  it('ids are validated against the catalogue; a confidence below 0.5 sets nothing', async () => {
    const acc = await app.createAccount();
    const precio = await reason(acc, PRECIO);
    const envios = await reason(acc, ENVIOS);
    const from = freshPhone();
    reply = async () => ({ reasonId: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e', subreasonId: null, confidence: 0.95, answers: [] });
    let c = await writes(acc, from, 'hola');
    expect(c).toMatchObject({ reasonStatus: 'pending', reason: null });
    reply = async () => ({ reasonId: precio.id, subreasonId: null, confidence: 0.4, answers: [] });
    c = await writes(acc, from, 'hola otra vez');
    expect(c).toMatchObject({ reasonStatus: 'pending', reason: null });
    // A sub-reason of another reason is no sub-reason.
    reply = async () => ({ reasonId: envios.id, subreasonId: precio.subreasons[0].id, confidence: 0.5, answers: [] });
    c = await writes(acc, from, 'y?');
    expect(c).toMatchObject({ reasonStatus: 'set', reasonId: envios.id, subreasonId: null, reasonConfidence: 0.5 });
    expect(await classified(acc, c.id)).toHaveLength(1);
  });

  it('a model failure (ModelError) falls back to the keyword rules', async () => {
    const acc = await app.createAccount();
    const reclamo = await reason(acc, RECLAMO);
    reply = async () => {
      throw new ModelError('el modelo no respondió');
    };
    const c = await writes(acc, freshPhone(), 'Tengo un problema con mi pedido');
    expect(c).toMatchObject({ reasonId: reclamo.id, reasonSource: 'classifier', reasonConfidence: 0.6 });
  });

  it('a person who sets the reason while the model is answering wins: the write checks the case locked', async () => {
    const acc = await app.createAccount();
    const reclamo = await reason(acc, RECLAMO);
    let release!: () => void;
    let started!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const inCall = new Promise<void>((r) => (started = r));
    reply = async () => {
      started();
      await gate;
      return { reasonId: reclamo.id, subreasonId: null, confidence: 0.9, answers: [] };
    };
    const res = await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'Reclamo' });
    expect(res.status).toBe(201);
    const job = runJob();
    await inCall;
    const pending = await caseOf(acc, res.body.conversationId);
    expect(pending.reasonStatus).toBe('pending');
    expect((await app.admin('POST', `/accounts/${acc.id}/cases/${pending.id}/reason`, { reason: 'Consulta' })).status).toBe(200);
    release();
    await job;
    const c = await caseOf(acc, res.body.conversationId);
    expect(c).toMatchObject({ reason: 'Consulta', reasonSource: 'person', reasonConfidence: 1 });
    expect(await queued(c.id)).toBe(0);
    const ev = await classified(acc, c.id);
    expect(ev.map((e) => e.data.reasonSource)).toEqual(['person']);
  });
});

describe('"a late worker whose claim expired and was re-claimed must not overwrite" (issue 25: the classification claim)', () => {
  it("a stale claim's final write changes nothing: the re-claim's reason, score and one case.classified stay", async () => {
    const acc = await app.createAccount();
    const precio = await reason(acc, PRECIO);
    const answer = (now: number) => ({
      reasonId: precio.id,
      subreasonId: null,
      confidence: 0.9,
      answers: [
        { question: '¿Quiere comprar?', probability: 1 },
        { question: '¿Lo necesita ya?', probability: now },
      ],
    });
    const stub = (json: () => Promise<unknown>): LlmClient => ({
      defaultModel: 'stand-in',
      budgetMs: 1000,
      chat: async () => ({ text: null, toolCalls: [] }),
      json: async <T>(input: { schema: { parse(v: unknown): T } }) => input.schema.parse(await json()),
    });
    let release!: () => void;
    let started!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const inCall = new Promise<void>((r) => (started = r));
    // The late worker: this process's classifier (woken by the inbound commit), held in its model
    // call; it will answer score 100.
    app.rt.services.llm = stub(async () => {
      started();
      await gate;
      return answer(1);
    });
    try {
      const res = await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'Quiero saber el precio' });
      expect(res.status).toBe(201);
      await inCall;
      // Its lease lapses; another worker (its own service container, as a second process has)
      // claims the row again and classifies it: score 60.
      app.clock.advance(CLASSIFY_LEASE_MS + 1_000);
      expect(await runClassifications({ ...app.rt.services, llm: stub(async () => answer(0)) })).toBe(1);
      const reclaimed = await caseOf(acc, res.body.conversationId);
      expect(reclaimed).toMatchObject({ reasonId: precio.id, reasonStatus: 'set', score: 60 });
      // The late worker's model answers now: its write must change nothing.
      release();
      await runJob();
      const c = await caseOf(acc, res.body.conversationId);
      expect(c).toEqual(reclaimed);
      expect(await classified(acc, c.id)).toHaveLength(1);
      expect(await queued(c.id)).toBe(0);
    } finally {
      app.rt.services.llm = null;
    }
  });
});

describe('across processes (PostgreSQL): one classification at a time per case', () => {
  it.skipIf(!inject('databaseUrl'))(
    "a process does not classify a case's 2nd message while another classifies its 1st (the oldest row of a case is claimed first)",
    async () => {
      const two = await startTestApp({ sameDataAs: app, clock: app.clock });
      try {
        const acc = await app.createAccount();
        const reclamo = await reason(acc, RECLAMO);
        let release!: () => void;
        let started!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        const inCall = new Promise<void>((r) => (started = r));
        const seen: string[] = [];
        app.rt.services.llm = {
          defaultModel: 'stand-in',
          budgetMs: 1000,
          chat: async () => ({ text: null, toolCalls: [] }),
          json: async <T>(input: { messages: ChatMessage[]; schema: { parse(v: unknown): T } }) => {
            seen.push(input.messages[1].content);
            started();
            await gate;
            return input.schema.parse({ reasonId: null, subreasonId: null, confidence: 0, answers: [] });
          },
        };
        const from = freshPhone();
        // The first message is classified by this process (its wake), held in the model call.
        const first = await app.inbound({ accountId: acc.id, from, text: 'Hola' });
        await inCall;
        // The second arrives through the other process, whose classifier looks at once: it must skip it.
        const second = await two.inbound({ accountId: acc.id, from, text: 'Tengo un reclamo' });
        expect(second.status).toBe(201);
        await stopClassifier(two.rt.services);
        const rows = await app.rt.services.db
          .selectFrom('case_classifications')
          .innerJoin('cases', 'cases.id', 'case_classifications.case_id')
          .select(['nth', 'attempts'])
          .where('cases.conversation_id', '=', first.body.conversationId)
          .orderBy('nth')
          .execute();
        expect(rows).toEqual([
          { nth: 1, attempts: 1 },
          { nth: 2, attempts: 0 },
        ]);
        app.rt.services.llm = null;
        release();
        await runJob();
        const c = await caseOf(acc, first.body.conversationId);
        expect(c).toMatchObject({ reasonId: reclamo.id, reasonStatus: 'set' });
        expect(seen).toEqual(['Mensaje 1: Hola']);
      } finally {
        app.rt.services.llm = null;
        await two.close();
      }
    },
  );
});
