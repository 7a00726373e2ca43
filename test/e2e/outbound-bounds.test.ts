// Issue 25, item 4 — "Unbounded output": "Bound every outbound text to the channel's limit
// (WhatsApp 4,096, Instagram 1,000: a longer agent reply is split at sentence/line boundaries into
// at most 3 messages, a longer flow send fails the step with a clear reason), cap replies per
// agent turn (default 3), and count agent and flow sends against the account's messages-per-minute
// cap like every other send."
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { automationsOf } from '../automations.js';
import { type FakeInstagram, startFakeInstagram } from '../fakes/instagram.js';
import { type FakeLlm, startFakeLlm } from '../fakes/llm.js';
import { freshPhone, request, type TestAccount, type TestApp } from '../harness.js';
import { startAppWithModel } from '../model-app.js';

let llm: FakeLlm;
let ig: FakeInstagram;
let app: TestApp;
const { writes, createFlow, runDue, lastExecution, execution } = automationsOf(() => app);

beforeAll(async () => {
  llm = await startFakeLlm();
  ig = await startFakeInstagram();
  app = await startAppWithModel(llm, { env: { INSTAGRAM_API_URL: ig.url } });
});
afterAll(async () => {
  await app?.close();
  await ig?.close();
  await llm?.close();
});
beforeEach(() => {
  llm.requests.length = 0;
  llm.queue.length = 0;
  // Every test starts at the start of a minute window of the injected clock.
  nextMinute();
});

const nextMinute = () => app.clock.set(Math.floor(app.clock.ms() / 60_000 + 1) * 60_000);
const reply = (text: string) => ({ name: 'reply', args: { text } });
const runAgents = async () => {
  const r = await app.admin('POST', '/jobs/agents/run');
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
};

/** An account (limits as given) whose default number is answered by a new agent. */
async function agentOnNumber(limits?: Record<string, number | null>): Promise<TestAccount> {
  const acct = await app.createAccount(limits ? { limits } : {});
  const agent = await app.admin('POST', `/accounts/${acct.id}/agents`, { name: 'Ventas', status: 'active', instructions: 'Vendé yerba.' });
  expect(agent.status, JSON.stringify(agent.body)).toBe(201);
  const patched = await app.admin('PATCH', `/accounts/${acct.id}/phone-numbers/${acct.phoneNumberId}`, { agentId: agent.body.id });
  expect(patched.status).toBe(200);
  return acct;
}

/** The outbound messages of a conversation, oldest first, straight from the database (text and all). */
const outbound = (conversationId: string) =>
  app.rt.services.db
    .selectFrom('messages')
    .select(['id', 'text', 'source', 'status'])
    .where('conversation_id', '=', conversationId)
    .where('direction', '=', 'outbound')
    .orderBy('id')
    .execute();

/** An Instagram account connected to `acc` through the operator API (answered by the fake Graph). */
async function connectInstagram(acc: TestAccount) {
  const igUserId = `1784${Array.from(randomBytes(13), (b) => String(b % 10)).join('')}`;
  const social = await app.admin('POST', `/accounts/${acc.id}/social-accounts`, {
    name: 'Instagram de la tienda',
    provider: 'instagram',
    instagram: { igUserId, accessToken: `IGAA${randomBytes(24).toString('base64url')}`, appSecret: 'x'.repeat(32), verifyToken: 'vt-123' },
  });
  expect(social.status, JSON.stringify(social.body)).toBe(201);
  return social;
}

const turnsOf = (conversationId: string) =>
  app.rt.services.db
    .selectFrom('agent_turns as t')
    .innerJoin('agent_stretches as s', 's.id', 't.stretch_id')
    .select(['t.status', 't.outcome', 't.replies_started'])
    .where('s.conversation_id', '=', conversationId)
    .orderBy('t.n')
    .execute();

describe('"cap replies per agent turn (default 3)"', () => {
  it('one model answer with 300 `reply` calls sends 3 messages; the turn records the 297 it dropped', async () => {
    const acct = await agentOnNumber();
    llm.toolCalls(Array.from({ length: 300 }, (_, i) => reply(`Mensaje ${i + 1}`)));
    const { conversationId } = await writes(acct, freshPhone(), 'Hola');
    await runAgents();
    const sent = await outbound(conversationId);
    expect(sent.map((m) => [m.source, m.text, m.status])).toEqual([
      ['agent', 'Mensaje 1', 'sent'],
      ['agent', 'Mensaje 2', 'sent'],
      ['agent', 'Mensaje 3', 'sent'],
    ]);
    const [turn] = await turnsOf(conversationId);
    expect(turn).toMatchObject({ status: 'done', replies_started: 3 });
    expect(turn?.outcome).toMatchObject({ replies: ['Mensaje 1', 'Mensaje 2', 'Mensaje 3'], dropped: 297 });
  });
});

describe("the operator's test turn answers what a real turn would send", () => {
  it('300 `reply` calls → `replies` has the 3 messages a turn sends', async () => {
    const acct = await app.createAccount();
    const agent = await app.admin('POST', `/accounts/${acct.id}/agents`, {
      name: 'Ventas',
      status: 'active',
      instructions: 'Vendé yerba.',
    });
    llm.toolCalls(Array.from({ length: 300 }, (_, i) => reply(`Mensaje ${i + 1}`)));
    const r = await app.admin('POST', `/accounts/${acct.id}/agents/${agent.body.id}/test`, { text: 'Hola' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.replies).toEqual(['Mensaje 1', 'Mensaje 2', 'Mensaje 3']);
    expect(r.body.toolCalls).toHaveLength(300);
  });
});

describe('"a longer agent reply is split at sentence/line boundaries into at most 3 messages"', () => {
  it('a 100,000-character reply → 3 WhatsApp messages of at most 4,096, cut at sentence ends; the rest cut with "…"', async () => {
    const acct = await agentOnNumber();
    const sentence = 'La yerba Amanda de un kilo está en oferta esta semana. ';
    const long = sentence.repeat(Math.ceil(100_000 / sentence.length)).slice(0, 100_000);
    llm.toolCalls([reply(long)]);
    const { conversationId } = await writes(acct, freshPhone(), 'Contame todo');
    await runAgents();
    const sent = await outbound(conversationId);
    expect(sent).toHaveLength(3);
    for (const m of sent) expect(m.text!.length).toBeLessThanOrEqual(4096);
    expect(sent[0]!.text!.endsWith('esta semana.')).toBe(true);
    expect(sent[1]!.text!.endsWith('esta semana.')).toBe(true);
    expect(sent[2]!.text!.endsWith('…')).toBe(true);
    expect((await turnsOf(conversationId))[0]?.outcome).toMatchObject({ dropped: 0, cut: true });
  });

  it('"Instagram 1,000": an agent\'s 2,500-character reply reaches the Instagram Graph as messages of at most 1,000', async () => {
    const acc = await app.createAccount();
    const social = await connectInstagram(acc);
    const agent = await app.admin('POST', `/accounts/${acc.id}/agents`, { name: 'Ventas', status: 'active', instructions: 'Vendé yerba.' });
    expect((await app.admin('PATCH', `/accounts/${acc.id}/social-accounts/${social.body.id}`, { agentId: agent.body.id })).status).toBe(
      200,
    );
    const paragraph = `${'Tenemos yerba Amanda, Playadito y Taragüí en todos los tamaños. '.repeat(12).trim()}`;
    llm.toolCalls([reply(`${paragraph}\n\n${paragraph}\n\n${paragraph}`)]);
    const before = ig.sends().length;
    const r = await app.admin('POST', '/sandbox/social-inbound', {
      socialAccountId: social.body.id,
      userId: '5551234567',
      text: '¿Qué tienen?',
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    await runAgents();
    const texts = ig
      .sends()
      .slice(before)
      .map((c) => c.body.message.text as string);
    expect(texts).toEqual([paragraph, paragraph, paragraph]);
    for (const t of texts) expect(t.length).toBeLessThanOrEqual(1000);
  });

  it('"Instagram 1,000" (bytes of UTF-8): a team reply of 600 ñ (1,200 bytes) on Instagram is a 400 at text, nothing stored nor sent', async () => {
    const acc = await app.createAccount();
    const social = await connectInstagram(acc);
    const inbound = await app.admin('POST', '/sandbox/social-inbound', {
      socialAccountId: social.body.id,
      userId: '5557654321',
      text: 'Hola',
    });
    expect(inbound.status).toBe(201);
    const before = ig.sends().length;
    const r = await app.admin('POST', `/accounts/${acc.id}/conversations/${inbound.body.conversationId}/messages`, {
      by: { name: 'Laura' },
      text: 'ñ'.repeat(600),
    });
    expect(r.status).toBe(400);
    const [problem] = JSON.parse(r.body.error.message);
    expect(problem).toEqual({
      path: ['text'],
      message: expect.stringMatching(/^El texto ocupa 1\.200 bytes y Instagram acepta hasta 1\.000 por mensaje/),
    });
    expect(ig.sends().length).toBe(before);
    expect(await outbound(inbound.body.conversationId)).toEqual([]);
  });
});

describe('"a longer flow send fails the step with a clear reason"', () => {
  it('a flow `send` of {{webhook.big}} with 200,011 characters: the step fails with the Spanish reason, no message is stored', async () => {
    const acct = await app.createAccount();
    const phone = freshPhone();
    const { conversationId } = await writes(acct, phone, 'Hola');
    const flow = await createFlow(acct, {
      name: 'Eco',
      trigger: { type: 'webhook' },
      steps: [{ id: 'eco', type: 'send', text: '{{webhook.big}}' }],
    });
    const hook = await request(`${app.url}${new URL(flow.webhookUrl).pathname}`, 'POST', { phone, big: 'x'.repeat(200_011) });
    expect(hook.status, JSON.stringify(hook.body)).toBe(202);
    await runDue();
    const e = await execution(acct, flow.id, hook.body.executionId);
    expect(e.status).toBe('failed');
    expect(e.error).toMatch(/200\.011 caracteres/);
    expect(e.error).toMatch(/4\.096/);
    const step = e.steps.find((s: any) => s.stepId === 'eco');
    expect(step.outcome).toBe('failed');
    expect(JSON.stringify(step.detail).length).toBeLessThan(1000);
    expect(await outbound(conversationId)).toEqual([]);
  });

  it('a template send whose variable is {{webhook.big}} (200,011 characters) fails the step too: nothing huge is stored', async () => {
    const acct = await app.createAccount();
    const t = await app.admin('POST', `/accounts/${acct.id}/templates`, {
      name: 'eco',
      category: 'UTILITY',
      status: 'APPROVED',
      body: 'Hola, {{texto}}',
      variables: [{ name: 'texto', label: 'Texto', example: 'hola' }],
    });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    const phone = freshPhone();
    const flow = await createFlow(acct, {
      name: 'Eco plantilla',
      trigger: { type: 'webhook' },
      steps: [{ id: 'eco', type: 'send', template: { id: t.body.id, variables: { texto: '{{webhook.big}}' } } }],
    });
    const hook = await request(`${app.url}${new URL(flow.webhookUrl).pathname}`, 'POST', { phone, big: 'x'.repeat(200_011) });
    expect(hook.status).toBe(202);
    await runDue();
    const e = await execution(acct, flow.id, hook.body.executionId);
    expect(e.status).toBe('failed');
    expect(e.error).toMatch(/^La variable texto tiene 200\.011 caracteres/);
    const stored = await app.rt.services.db.selectFrom('messages').select('id').where('account_id', '=', acct.id).execute();
    expect(stored).toEqual([]);
    // The API refuses the same variable with a 400 at it.
    const api = await acct.call('POST', '/messages', { to: phone, template: { id: t.body.id, variables: { texto: 'x'.repeat(4097) } } });
    expect(api.status).toBe(400);
    expect(JSON.parse(api.body.error.message)[0].path).toEqual(['template', 'variables', 'texto']);
  });

  it('a send of exactly 4,096 characters goes out', async () => {
    const acct = await app.createAccount();
    const phone = freshPhone();
    const { conversationId } = await writes(acct, phone, 'Hola');
    const flow = await createFlow(acct, {
      name: 'Eco',
      trigger: { type: 'webhook' },
      steps: [{ id: 'eco', type: 'send', text: '{{webhook.big}}' }],
    });
    const hook = await request(`${app.url}${new URL(flow.webhookUrl).pathname}`, 'POST', { phone, big: 'y'.repeat(4096) });
    expect(hook.status).toBe(202);
    await runDue();
    expect((await execution(acct, flow.id, hook.body.executionId)).status).toBe('completed');
    expect((await outbound(conversationId)).map((m) => m.text?.length)).toEqual([4096]);
  });
});

describe('"count agent and flow sends against the account\'s messages-per-minute cap like every other send"', () => {
  it('flow sends use the minute: POST /api/v1/messages then answers 429; a flow send past the cap waits for the next minute, not lost', async () => {
    const acct = await app.createAccount({ limits: { messagesPerMinute: 2 } });
    const phone = freshPhone();
    const flow = await createFlow(acct, {
      name: 'Tres',
      trigger: { type: 'keyword', keywords: ['hola'] },
      steps: [
        { id: 'a', type: 'send', text: 'Uno' },
        { id: 'b', type: 'send', text: 'Dos' },
        { id: 'c', type: 'send', text: 'Tres' },
      ],
    });
    const { conversationId } = await writes(acct, phone, 'hola');
    await runDue();
    expect((await outbound(conversationId)).map((m) => m.text)).toEqual(['Uno', 'Dos']);
    expect((await lastExecution(acct, flow.id)).status).toBe('running');
    const api = await acct.call('POST', '/messages', { to: phone, text: 'Desde la API' });
    expect(api.status).toBe(429);
    expect(api.body.error).toMatch(/2 mensajes por minuto/);

    nextMinute();
    await runDue();
    expect((await outbound(conversationId)).map((m) => m.text)).toEqual(['Uno', 'Dos', 'Tres']);
    const e = await lastExecution(acct, flow.id);
    expect(e.status).toBe('completed');
    expect(e.steps.map((s: any) => [s.stepId, s.outcome])).toEqual([
      ['a', 'ok'],
      ['b', 'ok'],
      ['c', 'ok'],
    ]);
  });

  it("an agent's replies count too: past the cap the turn waits for the next minute and sends the rest", async () => {
    const acct = await agentOnNumber({ messagesPerMinute: 2 });
    const phone = freshPhone();
    llm.toolCalls([reply('Uno'), reply('Dos'), reply('Tres')]);
    const { conversationId } = await writes(acct, phone, 'Hola');
    await runAgents();
    expect((await outbound(conversationId)).map((m) => m.text)).toEqual(['Uno', 'Dos']);
    expect((await acct.call('POST', '/messages', { to: phone, text: 'Desde la API' })).status).toBe(429);
    await runAgents();
    expect(await outbound(conversationId)).toHaveLength(2);

    nextMinute();
    await runAgents();
    expect((await outbound(conversationId)).map((m) => m.text)).toEqual(['Uno', 'Dos', 'Tres']);
    expect(llm.requests).toHaveLength(1);
    expect((await turnsOf(conversationId)).map((t) => t.status)).toEqual(['done']);
  });
});
