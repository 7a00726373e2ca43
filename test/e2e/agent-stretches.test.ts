import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { automationsOf } from '../automations.js';
import { type FakeLlm, startFakeLlm } from '../fakes/llm.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';
import { startAppWithModel } from '../model-app.js';

let llm: FakeLlm;
let app: TestApp;
const { writes, createFlow } = automationsOf(() => app);

beforeAll(async () => {
  llm = await startFakeLlm();
  app = await startAppWithModel(llm);
});
afterAll(async () => {
  await app?.close();
  await llm?.close();
});
beforeEach(() => {
  llm.requests.length = 0;
  llm.queue.length = 0;
  llm.otherwise = () => ({ text: null, toolCalls: [{ name: 'reply', args: { text: 'Respuesta por defecto' } }] });
});

const SALES = {
  name: 'Ventas',
  status: 'active',
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

/** Runs every agent turn due now (by the app's clock), waiting for the ones in flight. */
async function runAgents(a: TestApp = app) {
  const r = await a.admin('POST', '/jobs/agents/run');
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
}

/** An account whose default number is answered by a new agent. */
async function agentOnNumber(body: Record<string, unknown> = SALES): Promise<{ acct: TestAccount; agent: any }> {
  const acct = await app.createAccount();
  const agent = await app.admin('POST', `/accounts/${acct.id}/agents`, body);
  expect(agent.status, JSON.stringify(agent.body)).toBe(201);
  const patched = await app.admin('PATCH', `/accounts/${acct.id}/phone-numbers/${acct.phoneNumberId}`, { agentId: agent.body.id });
  expect(patched.status, JSON.stringify(patched.body)).toBe(200);
  expect(patched.body.agentId).toBe(agent.body.id);
  return { acct, agent: agent.body };
}

async function messagesOf(acct: TestAccount, conversationId: string): Promise<any[]> {
  const r = await acct.call('GET', `/conversations/${conversationId}/messages?limit=100`);
  expect(r.status).toBe(200);
  return r.body.data;
}

async function conversation(acct: TestAccount, id: string) {
  const r = await acct.call('GET', `/conversations/${id}`);
  expect(r.status).toBe(200);
  return r.body;
}

async function caseOf(acct: TestAccount, id: string) {
  const r = await acct.call('GET', `/cases/${id}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

const reply = (text: string) => ({ name: 'reply', args: { text } });

describe('"each inbound message produces one model turn: system prompt + the stretch\'s messages + tools"', () => {
  it("a number's agent answers: tools reply/goal_reached/hand_off, the system prompt, and `reply` → an outbound message from the agent", async () => {
    const { acct, agent } = await agentOnNumber();
    const customer = freshPhone();
    llm.toolCalls([reply('¡Hola Ana! ¿Qué yerba buscás?')]);
    const { conversationId } = await writes(acct, customer, 'Hola, quiero comprar yerba', { name: 'Ana' });
    await runAgents();

    expect(llm.requests).toHaveLength(1);
    const [req] = llm.requests;
    expect(req.toolNames).toEqual(['reply', 'goal_reached', 'hand_off']);
    expect(req.system).toContain('Sos la vendedora de la tienda de yerba.');
    expect(req.system).toContain('Una intención de compra');
    expect(req.system).toContain('- Si pide un descuento');
    expect(req.system).toContain('Nombre: Ana');
    expect(req.system).toContain('Hoy es ');
    expect(req.messages.map((m: any) => [m.role, m.content])).toEqual([
      ['system', req.system],
      ['user', 'Hola, quiero comprar yerba'],
    ]);

    const msgs = await messagesOf(acct, conversationId);
    expect(msgs.map((m) => [m.direction, m.from, m.text])).toEqual([
      ['inbound', 'contact', 'Hola, quiero comprar yerba'],
      ['outbound', 'agent', '¡Hola Ana! ¿Qué yerba buscás?'],
    ]);
    const conv = await conversation(acct, conversationId);
    expect(conv.handling).toMatchObject({ type: 'agent', id: agent.id, name: 'Ventas' });
    // "Case fields: agentId, agentName while an agent works the case; handledBy ai when only the agent answered"
    const c = await caseOf(acct, conv.openCaseId);
    expect(c).toMatchObject({ handledBy: 'ai', agentId: agent.id, agentName: 'Ventas', goalAt: null, handedOffAt: null });

    // The next message is the next turn, with the stretch's messages so far.
    llm.toolCalls([reply('Tenemos Amanda y Playadito.')]);
    await writes(acct, customer, '¿Qué marcas tienen?');
    await runAgents();
    expect(llm.requests).toHaveLength(2);
    expect(llm.requests[1].messages.slice(1).map((m: any) => [m.role, m.content])).toEqual([
      ['user', 'Hola, quiero comprar yerba'],
      ['assistant', '¡Hola Ana! ¿Qué yerba buscás?'],
      ['user', '¿Qué marcas tienen?'],
    ]);
  });

  it('"replies are sent in order; several allowed; a turn that answers nothing sends nothing"', async () => {
    const { acct } = await agentOnNumber();
    const customer = freshPhone();
    llm.toolCalls([reply('Primero'), reply('Segundo')]);
    const { conversationId } = await writes(acct, customer, 'Hola');
    await runAgents();
    llm.reply({ text: 'Solo texto, sin herramientas' });
    await writes(acct, customer, 'Gracias');
    await runAgents();
    const out = (await messagesOf(acct, conversationId)).filter((m) => m.direction === 'outbound');
    expect(out.map((m) => m.text)).toEqual(['Primero', 'Segundo']);
    expect(llm.requests).toHaveLength(2);
  });

  it('"inbound messages that arrive during a turn are answered in the next turn together"', async () => {
    const { acct } = await agentOnNumber();
    const customer = freshPhone();
    llm.queue.push({ after: 400, answer: { text: null, toolCalls: [reply('Hola, ¿cómo estás?')] } });
    llm.toolCalls([reply('Perfecto: te paso los precios.')]);
    const { conversationId } = await writes(acct, customer, 'Hola');
    await llm.waitFor(1);
    await writes(acct, customer, 'Quiero precios');
    await writes(acct, customer, 'De la yerba Amanda');
    await runAgents();
    await runAgents();
    // One turn for "Hola", then one for the two that came in while the model was answering; the
    // model reads the stretch in the order things happened (the first reply left after them).
    expect(llm.requests).toHaveLength(2);
    expect(llm.requests[0].messages.slice(1).map((m: any) => m.content)).toEqual(['Hola']);
    expect(llm.requests[1].messages.slice(1).map((m: any) => [m.role, m.content])).toEqual([
      ['user', 'Hola'],
      ['user', 'Quiero precios'],
      ['user', 'De la yerba Amanda'],
      ['assistant', 'Hola, ¿cómo estás?'],
    ]);
    const out = (await messagesOf(acct, conversationId)).filter((m) => m.direction === 'outbound');
    expect(out.map((m) => m.text)).toEqual(['Hola, ¿cómo estás?', 'Perfecto: te paso los precios.']);
  });
});

describe('"goal_reached({data, summary}) — data keeps only the goal\'s field names; ends the stretch"', () => {
  it('agent.goal_reached {agentId, agentName, conversationId, contactId, summary, goal}; the case gets goalAt and closes with agent_goal (case.closed)', async () => {
    const { acct, agent } = await agentOnNumber();
    const customer = freshPhone();
    llm.toolCalls([
      reply('¡Listo! Te reservo 2 Amanda.'),
      {
        name: 'goal_reached',
        args: {
          data: { producto: 'Amanda 1 kg', cantidad: '2', color: 'verde', direccion: 'Av. Siempreviva' },
          summary: 'Compra 2 Amanda',
        },
      },
    ]);
    const { conversationId, contactId } = await writes(acct, customer, 'Quiero 2 Amanda de 1 kg');
    await runAgents();
    // The case the message opened: its case.opened was written with the inbound message. The
    // conversation's openCaseId cannot tell: the agent's turn may have closed the case already.
    const opened = await app.events(acct.id, 'case.opened');
    expect(opened.map((e) => e.data.conversationId)).toEqual([conversationId]);
    const openCaseId = opened[0]!.data.id;

    const events = await app.events(acct.id, 'agent.goal_reached');
    expect(events.map((e) => e.data)).toEqual([
      {
        agentId: agent.id,
        agentName: 'Ventas',
        conversationId,
        contactId,
        summary: 'Compra 2 Amanda',
        goal: { producto: 'Amanda 1 kg', cantidad: '2' },
      },
    ]);
    const c = await caseOf(acct, openCaseId);
    expect(c).toMatchObject({ status: 'closed', closeReason: 'agent_goal', agentId: agent.id, agentName: 'Ventas', handledBy: 'ai' });
    expect(c.goalAt).toEqual(expect.any(String));
    const kinds = (await app.events(acct.id)).map((e) => e.kind);
    expect(kinds.indexOf('agent.goal_reached')).toBeLessThan(kinds.lastIndexOf('case.closed'));
    expect((await conversation(acct, conversationId)).handling.type).toBeNull();

    // The next message starts a new stretch of the number's agent (a new case).
    llm.toolCalls([reply('¡Hola de nuevo!')]);
    await writes(acct, customer, 'Hola otra vez');
    await runAgents();
    expect(llm.requests).toHaveLength(2);
    expect(llm.requests[1].messages.slice(1).map((m: any) => m.content)).toEqual(['Hola otra vez']);
  });
});

describe('"fields gathered so far": a goal_reached without every required field keeps what it brought and the stretch goes on', () => {
  it("the next turn's prompt shows the field obtained and the one missing; the goal is reached with both; a handoff carries what was gathered", async () => {
    const { acct } = await agentOnNumber();
    const customer = freshPhone();
    llm.toolCalls([reply('¿Cuántas querés?'), { name: 'goal_reached', args: { data: { producto: 'Amanda' }, summary: 'Quiere Amanda' } }]);
    await writes(acct, customer, 'Quiero yerba Amanda');
    await runAgents();
    expect(await app.events(acct.id, 'agent.goal_reached')).toEqual([]);
    llm.toolCalls([reply('¡Anotado!'), { name: 'goal_reached', args: { data: { cantidad: '3' }, summary: '3 Amanda' } }]);
    await writes(acct, customer, 'Tres');
    await runAgents();
    expect(llm.requests[1].system).toContain('- producto (obligatorio): Qué quiere comprar — ya obtenido: "Amanda"');
    expect(llm.requests[1].system).toContain('- cantidad (obligatorio): Cuántas unidades — falta');
    const [e] = await app.events(acct.id, 'agent.goal_reached');
    expect(e?.data).toMatchObject({ summary: '3 Amanda', goal: { producto: 'Amanda', cantidad: '3' } });

    const other = await agentOnNumber();
    const buyer = freshPhone();
    llm.toolCalls([{ name: 'goal_reached', args: { data: { producto: 'Playadito' }, summary: '' } }]);
    await writes(other.acct, buyer, 'Quiero Playadito');
    await runAgents();
    llm.toolCalls([{ name: 'hand_off', args: { reason: 'Pide factura A', summary: '' } }]);
    await writes(other.acct, buyer, '¿Me hacés factura A?');
    await runAgents();
    const [h] = await app.events(other.acct.id, 'agent.handed_off');
    expect(h?.data).toMatchObject({ summary: 'Pide factura A', goal: { producto: 'Playadito' } });
  });
});

describe('"hand_off (by the model, a phrase, maxTurns, or model failure): agent.handed_off, an internal note, handedOffAt; the conversation waits for the team"', () => {
  it('a handoff phrase hands off without a model call', async () => {
    const { acct, agent } = await agentOnNumber();
    const customer = freshPhone();
    const { conversationId, contactId } = await writes(acct, customer, 'Quiero hablar con una persona, por favor');
    const openCaseId = (await conversation(acct, conversationId)).openCaseId;
    await runAgents();
    expect(llm.requests).toHaveLength(0);
    const [e] = await app.events(acct.id, 'agent.handed_off');
    expect(e?.data).toEqual({
      agentId: agent.id,
      agentName: 'Ventas',
      conversationId,
      contactId,
      summary: 'El cliente pidió hablar con una persona',
      goal: {},
    });
    const c = await caseOf(acct, openCaseId);
    expect(c.handedOffAt).toEqual(expect.any(String));
    expect(c).toMatchObject({ status: 'open', agentId: agent.id, agentName: 'Ventas' });
    const notes = await app.admin('GET', `/accounts/${acct.id}/conversations/${conversationId}/notes`);
    expect(notes.body.data.map((n: any) => [n.text, n.by])).toEqual([
      ['El cliente pidió hablar con una persona', { type: 'agent', id: agent.id, name: 'Ventas' }],
    ]);
    expect((await conversation(acct, conversationId)).handling).toMatchObject({ type: 'team' });
    // The team has it now: the agent does not answer again in this case.
    await writes(acct, customer, '¿Hola?');
    await runAgents();
    expect(llm.requests).toHaveLength(0);
  });

  it('the model calls hand_off({reason, summary}): summary = reason + the summary', async () => {
    const { acct } = await agentOnNumber();
    llm.toolCalls([
      reply('Te paso con una persona del equipo.'),
      { name: 'hand_off', args: { reason: 'Pide un descuento', summary: 'Quiere 10% off en 5 kg' } },
    ]);
    const { conversationId } = await writes(acct, freshPhone(), '¿Me hacés un descuento?');
    await runAgents();
    const [e] = await app.events(acct.id, 'agent.handed_off');
    expect(e?.data.summary).toBe('Pide un descuento. Quiere 10% off en 5 kg');
    const out = (await messagesOf(acct, conversationId)).filter((m) => m.direction === 'outbound');
    expect(out.map((m) => m.text)).toEqual(['Te paso con una persona del equipo.']);
  });

  it('"a model failure … is tried twice more; then the agent hands off with the summary "El agente no pudo responder""', async () => {
    const { acct } = await agentOnNumber();
    llm.fail(500).fail(500).fail(500);
    const { conversationId } = await writes(acct, freshPhone(), 'Hola');
    await runAgents();
    expect(llm.requests).toHaveLength(3);
    const [e] = await app.events(acct.id, 'agent.handed_off');
    expect(e?.data.summary).toBe('El agente no pudo responder');
    expect((await conversation(acct, conversationId)).handling).toMatchObject({ type: 'team' });
    expect((await messagesOf(acct, conversationId)).filter((m) => m.direction === 'outbound')).toEqual([]);
  });

  it('"maxTurns: model turns per stretch; past it, hand off"', async () => {
    const { acct } = await agentOnNumber({ ...SALES, maxTurns: 1 });
    const customer = freshPhone();
    await writes(acct, customer, 'Hola');
    await runAgents();
    await writes(acct, customer, '¿Y?');
    await runAgents();
    expect(llm.requests).toHaveLength(1);
    const [e] = await app.events(acct.id, 'agent.handed_off');
    expect(e?.data.summary).toBe('El agente llegó a su máximo de 1 turnos en esta conversación');
  });
});

describe('"a team member who sends in the conversation ends the agent\'s part: handoff "Intervino el equipo", no agent.handed_off"', () => {
  it('the team replies: the stretch ends, no event, and the agent stays quiet while the team has the case', async () => {
    const { acct } = await agentOnNumber();
    const customer = freshPhone();
    const { conversationId } = await writes(acct, customer, 'Hola');
    await runAgents();
    const team = await app.admin('POST', `/accounts/${acct.id}/conversations/${conversationId}/messages`, {
      text: 'Hola, soy Laura del equipo',
      by: { id: 'u-1', name: 'Laura' },
    });
    expect(team.status, JSON.stringify(team.body)).toBe(201);
    expect(await app.events(acct.id, 'agent.handed_off')).toEqual([]);
    const conv = await conversation(acct, conversationId);
    expect(conv.handling).toMatchObject({ type: 'team', name: 'Laura' });
    // "handledBy … mixed when the agent and the team both answered"
    expect((await caseOf(acct, conv.openCaseId)).handledBy).toBe('mixed');
    await writes(acct, customer, 'Gracias Laura');
    await runAgents();
    expect(llm.requests).toHaveLength(1);
  });
});

describe('"idle (one hour without messages in the conversation)" ends the stretch', () => {
  it('an hour after the last message the stretch ends and the conversation is free; the next message starts a new stretch', async () => {
    const { acct } = await agentOnNumber();
    const customer = freshPhone();
    const { conversationId } = await writes(acct, customer, 'Hola');
    await runAgents();
    app.clock.advance(59 * 60_000);
    await runAgents();
    expect((await conversation(acct, conversationId)).handling).toMatchObject({ type: 'agent' });
    app.clock.advance(2 * 60_000);
    await runAgents();
    expect((await conversation(acct, conversationId)).handling.type).toBeNull();
    expect(await app.events(acct.id, 'agent.handed_off')).toEqual([]);
    await writes(acct, customer, 'Volví');
    await runAgents();
    expect(llm.requests).toHaveLength(2);
    expect(llm.requests[1].messages.slice(1).map((m: any) => m.content)).toEqual(['Volví']);
  });
});

describe('"an automation\'s agent step assigns one conversation"', () => {
  it("the flow greets, then the agent takes the conversation with the flow's messages as context", async () => {
    const acct = await app.createAccount();
    const agent = await app.admin('POST', `/accounts/${acct.id}/agents`, SALES);
    expect(agent.status).toBe(201);
    const flow = await createFlow(acct, {
      name: 'Ventas',
      trigger: { type: 'keyword', keywords: ['comprar'], match: 'contains' },
      steps: [
        { id: 'hola', type: 'send', text: 'Te paso con nuestra vendedora.' },
        { id: 'ag', type: 'agent', agentId: agent.body.id },
      ],
    });
    llm.toolCalls([reply('¡Hola! ¿Qué querés comprar?')]);
    const { conversationId } = await writes(acct, freshPhone(), 'Quiero comprar');
    await app.admin('POST', '/jobs/automations/run');
    await runAgents();
    const list = await app.admin('GET', `/accounts/${acct.id}/automations/${flow.id}/executions`);
    expect(list.body.data[0].status).toBe('completed');
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0].messages.slice(1).map((m: any) => [m.role, m.content])).toEqual([
      ['user', 'Quiero comprar'],
      ['assistant', 'Te paso con nuestra vendedora.'],
    ]);
    const out = (await messagesOf(acct, conversationId)).filter((m) => m.direction === 'outbound');
    expect(out.map((m) => [m.from, m.text])).toEqual([
      ['automation', 'Te paso con nuestra vendedora.'],
      ['agent', '¡Hola! ¿Qué querés comprar?'],
    ]);
  });

  it('a paused agent fails the execution with a clear reason', async () => {
    const acct = await app.createAccount();
    const agent = await app.admin('POST', `/accounts/${acct.id}/agents`, { ...SALES, status: 'paused' });
    const flow = await createFlow(acct, {
      name: 'Ventas',
      trigger: { type: 'keyword', keywords: ['comprar'], match: 'contains' },
      steps: [{ id: 'ag', type: 'agent', agentId: agent.body.id }],
    });
    await writes(acct, freshPhone(), 'Quiero comprar');
    await app.admin('POST', '/jobs/automations/run');
    const list = await app.admin('GET', `/accounts/${acct.id}/automations/${flow.id}/executions`);
    expect(list.body.data[0]).toMatchObject({ status: 'failed', error: expect.stringContaining('pausa') });
    expect(llm.requests).toHaveLength(0);
  });
});

describe('PATCH phone-numbers {agentId}', () => {
  it('an agent of another account, or an unknown one → 400 naming agentId; null unassigns', async () => {
    const { acct } = await agentOnNumber();
    const other = await app.createAccount();
    const theirs = await app.admin('POST', `/accounts/${other.id}/agents`, { name: 'Otro' });
    const r = await app.admin('PATCH', `/accounts/${acct.id}/phone-numbers/${acct.phoneNumberId}`, { agentId: theirs.body.id });
    expect(r.status).toBe(400);
    expect(r.body.details?.[0]?.path ?? r.body.error).toBeDefined();
    expect(JSON.stringify(r.body)).toContain('agentId');
    const off = await app.admin('PATCH', `/accounts/${acct.id}/phone-numbers/${acct.phoneNumberId}`, { agentId: null });
    expect(off.status).toBe(200);
    expect(off.body.agentId).toBeNull();
    await writes(acct, freshPhone(), 'Hola');
    await runAgents();
    expect(llm.requests).toHaveLength(0);
  });
});

describe('"one turn at a time per conversation, across processes"', () => {
  it.skipIf(!process.env.DATABASE_URL)(
    'on PostgreSQL: two processes, 20 customers writing 3 messages each through both while the model is slow → never two model calls of one conversation at once, every message answered',
    async () => {
      const two = await startTestApp({ sameDataAs: app, clock: app.clock, env: { LLM_BASE_URL: llm.url, LLM_MODEL: 'llama3.1' } });
      try {
        const { acct } = await agentOnNumber();
        // Each customer writes "<n> …": the model's calls per customer are counted while they last.
        const open = new Map<string, number>();
        let overlap = 0;
        llm.otherwise = (req) => {
          const who = (req.lastUser ?? '').split(' ')[0] ?? '';
          const now = (open.get(who) ?? 0) + 1;
          if (now > 1) overlap++;
          open.set(who, now);
          setTimeout(() => open.set(who, (open.get(who) ?? 1) - 1), 150);
          return { after: 150, answer: { text: null, toolCalls: [reply(`Respuesta a ${who}`)] } };
        };
        const N = 20;
        const phones = Array.from({ length: N }, () => freshPhone());
        const conversations = new Set<string>();
        for (let round = 0; round < 3; round++) {
          await Promise.all(
            phones.map(async (phone, i) => {
              const p = (i + round) % 2 === 0 ? app : two;
              const res = await p.inbound({ accountId: acct.id, from: phone, text: `c${i} mensaje ${round}` });
              expect(res.status, JSON.stringify(res.body)).toBe(201);
              conversations.add(res.body.conversationId);
            }),
          );
          await new Promise((r) => setTimeout(r, 50));
        }
        for (let i = 0; i < 4; i++) await Promise.all([runAgents(app), runAgents(two)]);
        expect(overlap).toBe(0);
        // Every conversation's messages were all answered: its last turn covered its last message.
        const db = app.rt.services.db;
        const rows = await db
          .selectFrom('agent_stretches')
          .select(['conversation_id', 'status', 'answered_until', 'pending', 'claim'])
          .where('account_id', '=', acct.id)
          .execute();
        expect(rows).toHaveLength(N);
        for (const r of rows) {
          const last = await db
            .selectFrom('messages')
            .select('id')
            .where('conversation_id', '=', r.conversation_id)
            .where('direction', '=', 'inbound')
            .orderBy('id', 'desc')
            .executeTakeFirstOrThrow();
          expect(r).toMatchObject({ status: 'running', answered_until: last.id, claim: null });
        }
        // Between 1 and 3 turns per conversation (bursts answered together), each with its one reply.
        const turns = await db
          .selectFrom('agent_turns as t')
          .innerJoin('agent_stretches as st', 'st.id', 't.stretch_id')
          .select(['st.conversation_id', 't.replies_started', 't.status'])
          .where('st.account_id', '=', acct.id)
          .execute();
        expect(turns.every((t) => t.status === 'done' && t.replies_started === 1)).toBe(true);
        expect(llm.requests.length).toBe(turns.length);
        expect(turns.length).toBeGreaterThanOrEqual(N);
        expect(turns.length).toBeLessThanOrEqual(3 * N);
      } finally {
        await two.close();
      }
    },
    60_000,
  );
});

describe('"each model call and each reply is a stored step: a crash never sends a reply twice and never loses a customer\'s message"', () => {
  // The state a crashed process leaves is written to the database as it would have left it: a
  // claim whose lease has lapsed, and the turn as far as it got.
  async function crashedTurn(replies: string[]) {
    const { acct } = await agentOnNumber();
    llm.toolCalls(replies.map(reply));
    const { conversationId } = await writes(acct, freshPhone(), 'Hola');
    await runAgents();
    const db = app.rt.services.db;
    const stretch = await db
      .selectFrom('agent_stretches')
      .selectAll()
      .where('conversation_id', '=', conversationId)
      .executeTakeFirstOrThrow();
    const turn = await db.selectFrom('agent_turns').selectAll().where('stretch_id', '=', stretch.id).executeTakeFirstOrThrow();
    const lapsed = { claim: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3f', run_at: new Date(app.clock.ms() - 1000), answered_until: null };
    return { acct, conversationId, db, stretch, turn, lapsed };
  }

  it('a turn whose model answer was stored, with its first reply out: the next claim sends only the second, and asks nothing', async () => {
    const { acct, conversationId, db, stretch, turn, lapsed } = await crashedTurn(['Uno', 'Dos']);
    const [first, second] = turn.message_ids;
    await db.deleteFrom('messages').where('id', '=', second!).execute();
    await db
      .updateTable('agent_turns')
      .set({ status: 'decided', replies_started: 1, message_ids: JSON.stringify([first]), ended_at: null })
      .where('id', '=', turn.id)
      .execute();
    await db.updateTable('agent_stretches').set(lapsed).where('id', '=', stretch.id).execute();
    llm.requests.length = 0;
    await runAgents();
    expect(llm.requests).toHaveLength(0);
    const out = (await messagesOf(acct, conversationId)).filter((m) => m.direction === 'outbound');
    expect(out.map((m) => m.text)).toEqual(['Uno', 'Dos']);
    const after = await db.selectFrom('agent_turns').selectAll().where('id', '=', turn.id).executeTakeFirstOrThrow();
    expect(after).toMatchObject({ status: 'done', replies_started: 2 });
  });

  it('a turn left calling the model (its answer never stored): the next claim asks again and the customer is answered once', async () => {
    const { acct, conversationId, db, stretch, turn, lapsed } = await crashedTurn(['Hola, ¿qué buscás?']);
    await db.deleteFrom('messages').where('id', 'in', turn.message_ids).execute();
    await db
      .updateTable('agent_turns')
      .set({ status: 'calling', replies_started: 0, message_ids: '[]', tool_calls: null, outcome: null, ended_at: null })
      .where('id', '=', turn.id)
      .execute();
    await db.updateTable('agent_stretches').set(lapsed).where('id', '=', stretch.id).execute();
    llm.requests.length = 0;
    llm.toolCalls([reply('Hola, ¿qué buscás?')]);
    await runAgents();
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0].lastUser).toBe('Hola');
    const out = (await messagesOf(acct, conversationId)).filter((m) => m.direction === 'outbound');
    expect(out.map((m) => m.text)).toEqual(['Hola, ¿qué buscás?']);
  });

  it('a claim still held by a process (its lease not lapsed) is not taken: no second turn meanwhile', async () => {
    const { db, stretch } = await crashedTurn(['Hola']);
    const held = { claim: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3f', run_at: new Date(app.clock.ms() + 60_000) };
    await db
      .updateTable('agent_stretches')
      .set({ ...held, pending: true })
      .where('id', '=', stretch.id)
      .execute();
    llm.requests.length = 0;
    await runAgents();
    expect(llm.requests).toHaveLength(0);
  });
});

describe('one lock order with an agent at work (docs/architecture.md "Lock order")', () => {
  it("inbound bursts ‖ the agent's turns and replies ‖ API sends ‖ a team reply on one conversation → 0 × 5xx, every message stored once, the stretch ended by the team", async () => {
    const { acct } = await agentOnNumber();
    const customer = freshPhone();
    llm.otherwise = () => ({ after: 5, answer: { text: null, toolCalls: [reply('Ya te respondo'), reply('¿Algo más?')] } });
    const first = await writes(acct, customer, 'Hola');
    const calls: Promise<{ status: number }>[] = [];
    for (let i = 0; i < 20; i++) {
      calls.push(app.inbound({ accountId: acct.id, from: customer, text: `pregunta ${i}` }));
      calls.push(acct.call('POST', '/messages', { to: customer, text: `aviso ${i}` }));
      if (i === 10) {
        calls.push(
          app.admin('POST', `/accounts/${acct.id}/conversations/${first.conversationId}/messages`, {
            text: 'Soy Laura',
            by: { name: 'Laura' },
          }),
        );
      }
      if (i % 5 === 0) calls.push(app.admin('POST', '/jobs/agents/run'));
    }
    const statuses = (await Promise.all(calls)).map((c) => c.status);
    expect(statuses.filter((st) => st >= 300)).toEqual([]);
    await runAgents();
    const db = app.rt.services.db;
    const inbound = await db
      .selectFrom('messages')
      .select('text')
      .where('conversation_id', '=', first.conversationId)
      .where('direction', '=', 'inbound')
      .execute();
    expect(inbound).toHaveLength(21);
    const stretches = await db.selectFrom('agent_stretches').selectAll().where('conversation_id', '=', first.conversationId).execute();
    expect(stretches).toHaveLength(1);
    expect(stretches[0]).toMatchObject({ status: 'ended', ended_by: 'handoff', summary: 'Intervino el equipo' });
    // Every reply the agent started is one message: no turn sent one twice.
    const turns = await db.selectFrom('agent_turns').selectAll().where('stretch_id', '=', stretches[0]!.id).execute();
    const ids = turns.flatMap((t) => t.message_ids);
    expect(new Set(ids).size).toBe(ids.length);
    const agentMessages = await db
      .selectFrom('messages')
      .select('id')
      .where('conversation_id', '=', first.conversationId)
      .where('source', '=', 'agent')
      .execute();
    expect(agentMessages.map((m) => m.id).sort()).toEqual([...ids].sort());
  });
});
