// Dead letters of the durable queues other than inbound batches (docs/operating.md "Dead letters:
// nothing held forever, nothing dropped in silence"; the inbound queue's are proven in
// cloud-inbound-queue.test.ts): webhook deliveries, automation executions, agent stretches and
// classifications. Each failure is a real database failure (a PL/pgSQL trigger that raises for the
// item's rows, as an unexpected bug of ours would); the harness sets QUEUE_RETRY_SCHEDULE=1,1,1
// (four tries a second apart) and time moves by the ManualClock.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LEASE_MS } from '../../src/automations/step-writes.js';
import { agentTexts, executionErrors } from '../../src/http/messages.es-AR.js';
import { newId } from '../../src/lib/ids.js';
import { leaseMsFor } from '../../src/webhooks/dispatcher.js';
import { automationsOf } from '../automations.js';
import { type FakeLlm, startFakeLlm } from '../fakes/llm.js';
import { type Receiver, startReceiver } from '../fakes/receiver.js';
import { ADMIN_TOKEN, freshPhone, type TestAccount, type TestApp } from '../harness.js';
import { startAppWithModel } from '../model-app.js';

let llm: FakeLlm;
let app: TestApp;
const lines: string[] = [];
const receivers: Receiver[] = [];
const { runDue, createFlow, executions, execution, writes } = automationsOf(() => app);

beforeAll(async () => {
  llm = await startFakeLlm();
  app = await startAppWithModel(llm, {
    workers: false,
    env: { LOG_LEVEL: 'info' },
    logDestination: { write: (l: string) => void lines.push(l) },
  });
});
afterAll(async () => {
  await app?.close();
  await llm?.close();
  await Promise.all(receivers.map((r) => r.close()));
});
beforeEach(() => {
  llm.requests.length = 0;
  llm.queue.length = 0;
  llm.otherwise = () => ({ text: null, toolCalls: [{ name: 'reply', args: { text: 'Hola, ¿en qué te ayudo?' } }] });
});

/**
 * The rows of `table` for which `when` holds fail in the database (BEFORE `op`, FOR EACH ROW), as an
 * unexpected bug of ours would; the function returned removes the cause (the operator's fix).
 */
async function poison(table: string, op: 'INSERT' | 'UPDATE' | 'DELETE', when: string): Promise<() => Promise<void>> {
  const db = app.rt.services.db;
  const fn = `poison_${randomBytes(4).toString('hex')}`;
  const row = op === 'DELETE' ? 'OLD' : 'NEW';
  await sql
    .raw(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF ${when} THEN RAISE EXCEPTION 'poisoned row'; END IF; RETURN ${row}; END $$;
      CREATE TRIGGER ${fn} BEFORE ${op} ON ${table} FOR EACH ROW EXECUTE FUNCTION ${fn}();`)
    .execute(db);
  return async () => {
    await sql.raw(`DROP TRIGGER ${fn} ON ${table}; DROP FUNCTION ${fn}();`).execute(db);
  };
}

async function deadLetters(queue: string): Promise<any[]> {
  const r = await app.admin('GET', `/dead-letters?queue=${queue}`);
  expect(r.status).toBe(200);
  return r.body.data;
}

/** The error lines that announced the death of `itemId`. */
const deathLines = (itemId: string) =>
  lines.map((l) => JSON.parse(l)).filter((l) => typeof l.msg === 'string' && l.msg.startsWith('dead letter:') && l.item === itemId);

/** The dead letter as GET /admin/v1/dead-letters lists it, after `attempts` tries ending now. */
const listed = (queue: string, itemId: string, accountId: string, firstFailedAt: Date, attempts = 4) => ({
  id: expect.any(String),
  queue,
  itemId,
  accountId,
  firstFailedAt: firstFailedAt.toISOString(),
  diedAt: app.clock.now().toISOString(),
  attempts,
  lastError: expect.stringContaining('poisoned row'),
});

/** Retries the dead letter (200), then a second retry of the same id: 404 in Spanish. */
async function retryOnce(id: string) {
  const r = await app.admin('POST', `/dead-letters/${id}/retry`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body).toMatchObject({ id, retriedAt: app.clock.now().toISOString() });
  return r.body;
}

async function goneIn404(id: string) {
  for (const [method, path] of [
    ['POST', `/dead-letters/${id}/retry`],
    ['DELETE', `/dead-letters/${id}`],
  ] as const) {
    const r = await app.admin(method, path);
    expect(r.status).toBe(404);
    expect(r.body.error).toMatch(/No existe ese mensaje muerto/);
  }
}

describe('webhook deliveries: "after the last try the item is dead" (status dead in the delivery log)', () => {
  const runWebhooks = async () => expect((await app.admin('POST', '/jobs/webhooks/run')).status).toBe(200);
  const lease = leaseMsFor(15_000);

  async function poisonedWebhook() {
    const acct = await app.createAccount();
    const rcv = await startReceiver();
    receivers.push(rcv);
    const wh = await app.admin('POST', `/accounts/${acct.id}/webhooks`, { url: rcv.url, events: ['contact.created'] });
    expect(wh.status).toBe(201);
    // The attempt is made (the receiver gets it) but its record cannot be written: our own failure.
    const cure = await poison(
      'webhook_attempts',
      'INSERT',
      `NEW.delivery_id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = '${wh.body.id}')`,
    );
    const phone = freshPhone();
    expect((await acct.call('POST', '/contacts', { phone })).status).toBe(201);
    const log = async () => (await app.admin('GET', `/accounts/${acct.id}/webhooks/${wh.body.id}/deliveries`)).body.data;
    const [d] = await log();
    return { acct, rcv, wh: wh.body, cure, phone, log, deliveryId: d.id as string };
  }

  /** Four tries, each sent and never recorded; dead after the last one. */
  async function killDelivery(p: Awaited<ReturnType<typeof poisonedWebhook>>) {
    const firstFailedAt = app.clock.now();
    await runWebhooks();
    for (let i = 1; i < 4; i++) {
      expect(p.rcv.received).toHaveLength(i);
      expect(await deadLetters('webhook_deliveries')).not.toContainEqual(expect.objectContaining({ itemId: p.deliveryId }));
      // QUEUE_RETRY_SCHEDULE, not WEBHOOK_RETRY_SCHEDULE nor the lease: the failure is ours.
      app.clock.advance(1000);
      await runWebhooks();
    }
    expect(p.rcv.received).toHaveLength(4);
    return firstFailedAt;
  }

  it('a delivery whose attempts cannot be recorded is tried on QUEUE_RETRY_SCHEDULE, then dead: listed, logged once, status dead; retried after the fix → received once more', async () => {
    const p = await poisonedWebhook();
    const firstFailedAt = await killDelivery(p);
    const [dead] = (await deadLetters('webhook_deliveries')).filter((x) => x.itemId === p.deliveryId);
    expect(dead).toEqual(listed('webhook_deliveries', p.deliveryId, p.acct.id, firstFailedAt));
    // Not sent again, by any later pass.
    app.clock.advance(lease);
    await runWebhooks();
    expect(p.rcv.received).toHaveLength(4);
    expect(JSON.stringify(dead)).not.toContain(p.phone);
    expect(deathLines(p.deliveryId)).toEqual([expect.objectContaining({ level: 50, queue: 'webhook_deliveries' })]);
    expect((await p.log())[0]).toMatchObject({ id: p.deliveryId, status: 'dead' });

    await p.cure();
    await retryOnce(dead.id);
    await runWebhooks();
    expect(p.rcv.received).toHaveLength(5);
    // The same event (same webhook-id), once more.
    expect(p.rcv.received[4]!.headers['webhook-id']).toBe(p.rcv.received[0]!.headers['webhook-id']);
    expect(p.rcv.received[4]!.json).toEqual(p.rcv.received[0]!.json);
    expect((await p.log())[0]).toMatchObject({ id: p.deliveryId, status: 'succeeded', attempts: 1 });
    app.clock.advance(lease);
    await runWebhooks();
    expect(p.rcv.received).toHaveLength(5);
    expect((await deadLetters('webhook_deliveries')).filter((x) => x.itemId === p.deliveryId)).toEqual([]);
    await goneIn404(dead.id);
  });

  it('a dead delivery redelivered from the delivery log (POST …/redeliver) is sent once more and is no longer a dead letter', async () => {
    const p = await poisonedWebhook();
    await killDelivery(p);
    await p.cure();
    const [dead] = (await deadLetters('webhook_deliveries')).filter((x) => x.itemId === p.deliveryId);
    const r = await app.admin('POST', `/accounts/${p.acct.id}/webhooks/${p.wh.id}/deliveries/${p.deliveryId}/redeliver`);
    expect(r.status).toBe(202);
    await runWebhooks();
    expect(p.rcv.received).toHaveLength(5);
    expect((await p.log())[0]).toMatchObject({ id: p.deliveryId, status: 'succeeded' });
    expect((await deadLetters('webhook_deliveries')).filter((x) => x.itemId === p.deliveryId)).toEqual([]);
    await goneIn404(dead.id);
  });

  it('DELETE discards a dead delivery: failed in the delivery log, never sent again', async () => {
    const p = await poisonedWebhook();
    await killDelivery(p);
    app.clock.advance(lease);
    await runWebhooks();
    await p.cure();
    const [dead] = (await deadLetters('webhook_deliveries')).filter((x) => x.itemId === p.deliveryId);
    expect((await app.admin('DELETE', `/dead-letters/${dead.id}`)).status).toBe(204);
    expect((await p.log())[0]).toMatchObject({ id: p.deliveryId, status: 'failed' });
    app.clock.advance(lease);
    await runWebhooks();
    expect(p.rcv.received).toHaveLength(4);
    await goneIn404(dead.id);
  });
});

describe('automation executions: dead = failed with automation.failed, the conversation free for a new execution', () => {
  /** A flow whose first step fails in the database for this account's contacts (our own failure). */
  async function poisonedFlow(acct: TestAccount) {
    const flow = await createFlow(acct, {
      name: 'Pedido',
      trigger: { type: 'keyword', keywords: ['pedido'], match: 'exact' },
      steps: [
        { id: 'a', type: 'set_attribute', attribute: 'pedido', value: 'sí' },
        { id: 's', type: 'send', text: 'Anotamos tu pedido' },
      ],
    });
    const cure = await poison('contacts', 'UPDATE', `NEW.account_id = '${acct.id}' AND NEW.attributes ? 'pedido'`);
    return { flow, cure };
  }

  /** The customer starts it; four tries a second apart; dead after the fourth. */
  async function killExecution(acct: TestAccount, flowId: string, phone: string) {
    const started = await writes(acct, phone, 'pedido');
    const firstFailedAt = app.clock.now();
    await runDue();
    const [x] = await executions(acct, flowId);
    for (let i = 1; i < 4; i++) {
      expect((await execution(acct, flowId, x.id)).status).toBe('running');
      expect(await deadLetters('executions')).not.toContainEqual(expect.objectContaining({ itemId: x.id }));
      app.clock.advance(1000);
      await runDue();
    }
    return { ...started, executionId: x.id as string, firstFailedAt };
  }

  it('failing on every try: failed ("error de nuestro lado"), automation.failed, listed and logged once; another execution may start; retry → 409 while it runs, then completes from the step where it stopped', async () => {
    const acct = await app.createAccount();
    const { flow, cure } = await poisonedFlow(acct);
    const ask = await createFlow(acct, {
      name: 'Otra',
      trigger: { type: 'keyword', keywords: ['otra'], match: 'exact' },
      steps: [
        { id: 'q', type: 'ask', text: '¿Número de pedido?', save: 'n' },
        { id: 'r', type: 'send', text: 'Gracias por el {{n}}' },
      ],
    });
    const phone = freshPhone();
    const x = await killExecution(acct, flow.id, phone);
    const dead = await execution(acct, flow.id, x.executionId);
    expect(dead).toMatchObject({ status: 'failed', error: executionErrors.ourFailure });
    const failedEvents = await app.events(acct.id, 'automation.failed');
    expect(failedEvents).toHaveLength(1);
    expect(failedEvents[0]!.data).toMatchObject({ executionId: x.executionId });
    const [dl] = (await deadLetters('executions')).filter((d) => d.itemId === x.executionId);
    expect(dl).toEqual(listed('executions', x.executionId, acct.id, x.firstFailedAt));
    expect(JSON.stringify(dl)).not.toMatch(new RegExp(`${phone.slice(1)}|pedido`));
    expect(deathLines(x.executionId)).toEqual([expect.objectContaining({ level: 50, queue: 'executions', attempts: 4 })]);

    // The conversation takes a new execution: it waits for the customer's answer (running).
    await writes(acct, phone, 'otra');
    await runDue();
    const [other] = await executions(acct, ask.id);
    expect(other.status).toBe('running');
    // The fix is in, but the conversation has another running execution: 409 in Spanish.
    await cure();
    const busy = await app.admin('POST', `/dead-letters/${dl.id}/retry`);
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatch(/la conversación ya tiene otra automatización/);
    expect((await deadLetters('executions')).map((d) => d.id)).toContain(dl.id);
    await writes(acct, phone, '123');
    await runDue();
    expect((await execution(acct, ask.id, other.id)).status).toBe('completed');

    await retryOnce(dl.id);
    await runDue();
    expect((await execution(acct, flow.id, x.executionId)).status).toBe('completed');
    const contact = await acct.call('GET', `/contacts/${x.contactId}`);
    expect(contact.body.attributes).toMatchObject({ pedido: 'sí' });
    const msgs = await acct.call('GET', `/conversations/${x.conversationId}/messages?limit=100`);
    expect(msgs.body.data.filter((m: any) => m.text === 'Anotamos tu pedido')).toHaveLength(1);
    expect(await app.events(acct.id, 'automation.completed')).toHaveLength(2);
    await goneIn404(dl.id);
  });

  it("retry → 409 while the number's agent answers the conversation (one execution or stretch runs in a conversation)", async () => {
    const acct = await app.createAccount();
    const { flow, cure } = await poisonedFlow(acct);
    const agent = await app.admin('POST', `/accounts/${acct.id}/agents`, {
      name: 'Ventas',
      status: 'active',
      instructions: 'Vendé yerba.',
    });
    await app.admin('PATCH', `/accounts/${acct.id}/phone-numbers/${acct.phoneNumberId}`, { agentId: agent.body.id });
    const phone = freshPhone();
    const x = await killExecution(acct, flow.id, phone);
    const [dl] = (await deadLetters('executions')).filter((d) => d.itemId === x.executionId);
    // The conversation is free: the number's agent takes the customer's next message.
    await writes(acct, phone, 'hola');
    const handling = (await acct.call('GET', `/conversations/${x.conversationId}`)).body.handling;
    expect(handling).toMatchObject({ type: 'agent', id: agent.body.id });
    await cure();
    const busy = await app.admin('POST', `/dead-letters/${dl.id}/retry`);
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatch(/o agente en curso/);
    expect((await execution(acct, flow.id, x.executionId)).status).toBe('failed');
    expect((await acct.call('GET', `/conversations/${x.conversationId}`)).body.handling).toMatchObject({ type: 'agent' });
    // The agent answers (nothing of this test left due for the next ones).
    expect((await app.admin('POST', '/jobs/agents/run')).status).toBe(200);
  });

  it('DELETE discards a dead execution: it stays failed, not run again', async () => {
    const acct = await app.createAccount();
    const { flow, cure } = await poisonedFlow(acct);
    const x = await killExecution(acct, flow.id, freshPhone());
    const [dl] = (await deadLetters('executions')).filter((d) => d.itemId === x.executionId);
    await cure();
    expect((await app.admin('DELETE', `/dead-letters/${dl.id}`)).status).toBe(204);
    app.clock.advance(60_000);
    await runDue();
    expect((await execution(acct, flow.id, x.executionId)).status).toBe('failed');
    await goneIn404(dl.id);
  });
});

describe('"a claim that lapses counts" (decisions.md "Dead letters"): an item whose process dies holding it on every try is parked, not tried once more', () => {
  /** As four processes leave it: claimed four times, the last claim's lease not lapsed yet. */
  const diedHolding = (table: 'automation_executions' | 'agent_stretches', id: string, leaseMs: number) =>
    sql`UPDATE ${sql.table(table)} SET tries = 4, claim = ${newId()}, run_at = ${new Date(app.clock.ms() + leaseMs)}
      WHERE id = ${id}`.execute(app.rt.services.db);

  it('an execution: failed with automation.failed and a dead letter "interrupted"; retried, it completes', async () => {
    const acct = await app.createAccount();
    const flow = await createFlow(acct, {
      name: 'Saludo',
      trigger: { type: 'keyword', keywords: ['hola'], match: 'exact' },
      steps: [{ id: 's', type: 'send', text: '¡Hola!' }],
    });
    await writes(acct, freshPhone(), 'hola');
    const [x] = await executions(acct, flow.id);
    await diedHolding('automation_executions', x.id, LEASE_MS);
    await runDue();
    expect((await execution(acct, flow.id, x.id)).status).toBe('running');
    app.clock.advance(LEASE_MS);
    await runDue();
    expect(await execution(acct, flow.id, x.id)).toMatchObject({ status: 'failed', error: executionErrors.ourFailure });
    expect(await app.events(acct.id, 'automation.failed')).toHaveLength(1);
    const [dl] = (await deadLetters('executions')).filter((d) => d.itemId === x.id);
    expect(dl).toMatchObject({ attempts: 4, lastError: expect.stringMatching(/^interrupted/) });
    await retryOnce(dl.id);
    await runDue();
    expect((await execution(acct, flow.id, x.id)).status).toBe('completed');
  });

  it('a stretch: handed off with agent.handed_off and a dead letter "interrupted", the model never called', async () => {
    const acct = await app.createAccount();
    const agent = await app.admin('POST', `/accounts/${acct.id}/agents`, {
      name: 'Ventas',
      status: 'active',
      instructions: 'Vendé yerba.',
    });
    await app.admin('PATCH', `/accounts/${acct.id}/phone-numbers/${acct.phoneNumberId}`, { agentId: agent.body.id });
    const { conversationId } = await writes(acct, freshPhone(), 'Hola');
    const st = await app.rt.services.db
      .selectFrom('agent_stretches')
      .select('id')
      .where('conversation_id', '=', conversationId)
      .executeTakeFirstOrThrow();
    const lease = 3 * app.rt.services.config.LLM_TIMEOUT_MS + 65_000;
    await diedHolding('agent_stretches', st.id, lease);
    app.clock.advance(lease);
    expect((await app.admin('POST', '/jobs/agents/run')).status).toBe(200);
    expect(llm.requests).toHaveLength(0);
    expect((await app.events(acct.id, 'agent.handed_off')).map((e) => e.data.summary)).toEqual([agentTexts.ourFailure]);
    const [dl] = (await deadLetters('agent_turns')).filter((d) => d.itemId === st.id);
    expect(dl).toMatchObject({ attempts: 4, lastError: expect.stringMatching(/^interrupted/) });
  });
});

describe('agent stretches ("agent_turns"): dead = handed off to the team with agent.handed_off', () => {
  const runAgents = async () => expect((await app.admin('POST', '/jobs/agents/run')).status).toBe(200);

  async function agentOnNumber() {
    const acct = await app.createAccount();
    const agent = await app.admin('POST', `/accounts/${acct.id}/agents`, {
      name: 'Ventas',
      status: 'active',
      instructions: 'Vendé yerba.',
    });
    expect(agent.status, JSON.stringify(agent.body)).toBe(201);
    const patched = await app.admin('PATCH', `/accounts/${acct.id}/phone-numbers/${acct.phoneNumberId}`, { agentId: agent.body.id });
    expect(patched.status).toBe(200);
    return { acct, agent: agent.body };
  }

  async function killStretch(acct: TestAccount, phone: string) {
    const cure = await poison(
      'agent_turns',
      'INSERT',
      `NEW.stretch_id IN (SELECT id FROM agent_stretches WHERE account_id = '${acct.id}')`,
    );
    const started = await writes(acct, phone, 'Hola, quiero yerba');
    const firstFailedAt = app.clock.now();
    await runAgents();
    const stretch = await app.rt.services.db
      .selectFrom('agent_stretches')
      .select('id')
      .where('conversation_id', '=', started.conversationId)
      .executeTakeFirstOrThrow();
    for (let i = 1; i < 4; i++) {
      expect(await app.events(acct.id, 'agent.handed_off')).toEqual([]);
      expect(await deadLetters('agent_turns')).not.toContainEqual(expect.objectContaining({ itemId: stretch.id }));
      app.clock.advance(1000);
      await runAgents();
    }
    return { ...started, cure, stretchId: stretch.id, firstFailedAt };
  }

  const handling = async (acct: TestAccount, conversationId: string) =>
    (await acct.call('GET', `/conversations/${conversationId}`)).body.handling;

  it('failing on every try: handed off ("El agente no pudo seguir…"), agent.handed_off, the team\'s note, listed and logged once; retry after the fix → the stretch answers', async () => {
    const { acct, agent } = await agentOnNumber();
    const phone = freshPhone();
    const x = await killStretch(acct, phone);
    expect(llm.requests).toHaveLength(0);
    const handedOff = await app.events(acct.id, 'agent.handed_off');
    expect(handedOff).toHaveLength(1);
    expect(handedOff[0]!.data).toMatchObject({ agentId: agent.id, conversationId: x.conversationId, summary: agentTexts.ourFailure });
    expect(await handling(acct, x.conversationId)).toMatchObject({ type: 'team' });
    const notes = await app.admin('GET', `/accounts/${acct.id}/conversations/${x.conversationId}/notes`);
    expect(notes.body.data.map((n: any) => n.text)).toEqual([agentTexts.ourFailure]);
    const [dl] = (await deadLetters('agent_turns')).filter((d) => d.itemId === x.stretchId);
    expect(dl).toEqual(listed('agent_turns', x.stretchId, acct.id, x.firstFailedAt));
    expect(JSON.stringify(dl)).not.toMatch(new RegExp(`${phone.slice(1)}|yerba`));
    expect(deathLines(x.stretchId)).toEqual([expect.objectContaining({ level: 50, queue: 'agent_turns', attempts: 4 })]);

    await x.cure();
    await retryOnce(dl.id);
    expect(await handling(acct, x.conversationId)).toMatchObject({ type: 'agent', id: agent.id });
    await runAgents();
    expect(llm.requests).toHaveLength(1);
    const msgs = await acct.call('GET', `/conversations/${x.conversationId}/messages?limit=100`);
    expect(msgs.body.data.filter((m: any) => m.direction === 'outbound').map((m: any) => m.text)).toEqual(['Hola, ¿en qué te ayudo?']);
    // Answered once: a later pass calls the model no more.
    app.clock.advance(1000);
    await runAgents();
    expect(llm.requests).toHaveLength(1);
    await goneIn404(dl.id);
  });

  it('DELETE discards a dead stretch: the conversation stays with the team, the agent does not answer', async () => {
    const { acct } = await agentOnNumber();
    const x = await killStretch(acct, freshPhone());
    await x.cure();
    const [dl] = (await deadLetters('agent_turns')).filter((d) => d.itemId === x.stretchId);
    expect((await app.admin('DELETE', `/dead-letters/${dl.id}`)).status).toBe(204);
    app.clock.advance(1000);
    await runAgents();
    expect(llm.requests).toHaveLength(0);
    expect(await handling(acct, x.conversationId)).toMatchObject({ type: 'team' });
    await goneIn404(dl.id);
  });
});

describe("classification: a dead classification no longer holds the case's next one", () => {
  const runClassification = async () => {
    const r = await app.admin('POST', '/jobs/classification/run');
    expect(r.status).toBe(200);
  };
  const queuedOf = (caseId: string) =>
    app.rt.services.db.selectFrom('case_classifications').select(['nth', 'dead_at']).where('case_id', '=', caseId).orderBy('nth').execute();

  async function accountWithReason() {
    const acct = await app.createAccount();
    const r = await app.admin('POST', `/accounts/${acct.id}/reasons`, { name: 'Reclamo', keywords: ['reclamo', 'roto'] });
    expect(r.status).toBe(201);
    // The case's first classification cannot be finished (its queue row cannot be removed).
    const cure = await poison(
      'case_classifications',
      'DELETE',
      `OLD.nth = 1 AND OLD.case_id IN (SELECT id FROM cases WHERE account_id = '${acct.id}')`,
    );
    return { acct, cure };
  }

  const caseIdOf = async (conversationId: string) =>
    (await app.rt.services.db.selectFrom('cases').select('id').where('conversation_id', '=', conversationId).executeTakeFirstOrThrow()).id;

  async function killClassification(acct: TestAccount, phone: string, text: string, later?: string) {
    const { conversationId } = await writes(acct, phone, text);
    const caseId = await caseIdOf(conversationId);
    if (later) await writes(acct, phone, later);
    const [row] = await app.rt.services.db
      .selectFrom('case_classifications')
      .select('id')
      .where('case_id', '=', caseId)
      .where('nth', '=', 1)
      .execute();
    const firstFailedAt = app.clock.now();
    await runClassification();
    for (let i = 1; i < 4; i++) {
      expect(await deadLetters('classification')).not.toContainEqual(expect.objectContaining({ itemId: row!.id }));
      // Until it dies, it holds the case's later classification.
      expect((await queuedOf(caseId)).map((q) => q.nth)).toEqual(later ? [1, 2] : [1]);
      app.clock.advance(1000);
      await runClassification();
    }
    return { caseId, conversationId, itemId: row!.id, firstFailedAt };
  }

  const caseView = async (acct: TestAccount, caseId: string) => (await acct.call('GET', `/cases/${caseId}`)).body;

  it('failing on every try: parked (listed, logged once), the next message of the case is classified; retry after the fix → processed once', async () => {
    const { acct, cure } = await accountWithReason();
    const phone = freshPhone();
    const x = await killClassification(acct, phone, 'Tengo un reclamo', 'el paquete llegó roto');
    const [dl] = (await deadLetters('classification')).filter((d) => d.itemId === x.itemId);
    expect(dl).toEqual(listed('classification', x.itemId, acct.id, x.firstFailedAt));
    expect(JSON.stringify(dl)).not.toMatch(new RegExp(`${phone.slice(1)}|reclamo`));
    expect(deathLines(x.itemId)).toEqual([expect.objectContaining({ level: 50, queue: 'classification', attempts: 4 })]);
    // The dead one no longer holds the second: classified by the next pass.
    await runClassification();
    expect(await caseView(acct, x.caseId)).toMatchObject({ reason: 'Reclamo', reasonStatus: 'set' });
    expect(await app.events(acct.id, 'case.classified')).toHaveLength(1);
    expect((await queuedOf(x.caseId)).map((q) => [q.nth, q.dead_at !== null])).toEqual([[1, true]]);

    await cure();
    await retryOnce(dl.id);
    await runClassification();
    expect(await queuedOf(x.caseId)).toEqual([]);
    expect(await caseView(acct, x.caseId)).toMatchObject({ reason: 'Reclamo', reasonStatus: 'set' });
    expect(await app.events(acct.id, 'case.classified')).toHaveLength(1);
    await goneIn404(dl.id);
  });

  it('retried alone, a dead classification classifies its case once; DELETE discards one: the case keeps what it has', async () => {
    const { acct, cure } = await accountWithReason();
    const kept = await killClassification(acct, freshPhone(), 'Quiero hacer un reclamo');
    const dropped = await killClassification(acct, freshPhone(), 'Tengo un reclamo también');
    const all = await deadLetters('classification');
    const [dlKept] = all.filter((d) => d.itemId === kept.itemId);
    const [dlDropped] = all.filter((d) => d.itemId === dropped.itemId);
    expect(await caseView(acct, kept.caseId)).toMatchObject({ reasonStatus: 'pending' });
    await cure();

    await retryOnce(dlKept.id);
    await runClassification();
    expect(await caseView(acct, kept.caseId)).toMatchObject({ reason: 'Reclamo', reasonStatus: 'set' });
    expect((await app.events(acct.id, 'case.classified')).map((e) => e.data.id)).toEqual([kept.caseId]);

    expect((await app.admin('DELETE', `/dead-letters/${dlDropped.id}`)).status).toBe(204);
    await runClassification();
    expect(await queuedOf(dropped.caseId)).toEqual([]);
    expect(await caseView(acct, dropped.caseId)).toMatchObject({ reasonStatus: 'pending' });
    expect(await app.events(acct.id, 'case.classified')).toHaveLength(1);
    await goneIn404(dlKept.id);
    await goneIn404(dlDropped.id);
  });
});

describe('CLI: npx chasqui dead-letters list|retry|discard (operator.md "CLI")', () => {
  const ROOT = fileURLToPath(new URL('../..', import.meta.url));
  function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const env: NodeJS.ProcessEnv = { ...process.env, CHASQUI_URL: app.url, ADMIN_TOKEN };
    for (const k of ['DATABASE_URL', 'REDIS_URL', 'DATA_DIR']) delete env[k];
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...args],
        { cwd: ROOT, env, timeout: 30_000 },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });
  }

  it('lists the dead letters of a queue, retries one (processed once) and discards another', async () => {
    const acct = await app.createAccount();
    await app.admin('POST', `/accounts/${acct.id}/reasons`, { name: 'Reclamo', keywords: ['reclamo'] });
    const cure = await poison('case_classifications', 'DELETE', `OLD.case_id IN (SELECT id FROM cases WHERE account_id = '${acct.id}')`);
    const a = await writes(acct, freshPhone(), 'un reclamo');
    const b = await writes(acct, freshPhone(), 'otro reclamo');
    for (let i = 0; i < 4; i++) {
      expect((await app.admin('POST', '/jobs/classification/run')).status).toBe(200);
      app.clock.advance(1000);
    }
    await cure();
    const list = await cli(['dead-letters', 'list', '--queue', 'classification']);
    expect(list.code, list.stderr).toBe(0);
    const ours = (JSON.parse(list.stdout).data as any[]).filter((d) => d.accountId === acct.id);
    expect(ours).toHaveLength(2);
    expect(ours.every((d) => d.queue === 'classification' && d.attempts === 4)).toBe(true);

    const retried = await cli(['dead-letters', 'retry', ours[0].id]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(JSON.parse(retried.stdout)).toMatchObject({ id: ours[0].id, retriedAt: expect.any(String) });
    const discarded = await cli(['dead-letters', 'discard', ours[1].id]);
    expect(discarded.code, discarded.stderr).toBe(0);
    expect((await app.admin('POST', '/jobs/classification/run')).status).toBe(200);
    expect(await app.events(acct.id, 'case.classified')).toHaveLength(1);
    const again = await cli(['dead-letters', 'retry', ours[0].id]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/No existe ese mensaje muerto/);
    const left = await cli(['dead-letters', 'list', '--queue', 'classification']);
    expect((JSON.parse(left.stdout).data as any[]).filter((d) => d.accountId === acct.id)).toEqual([]);
    expect([a.conversationId, b.conversationId]).toHaveLength(2);
  });
});
