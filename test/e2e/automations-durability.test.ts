// Issue 14, rule 3: "Durable and exactly-once in effect: executions, position and timers are rows
// claimed with SKIP LOCKED; two processes never run one execution at once; restart resumes every
// running execution and fires every due timer; a send or http step found started-but-unfinished
// after a crash fails the execution ("interrumpida")."
//
// A restart is a second process on the same data: on PostgreSQL a second app on the same database
// (startTestApp({ sameDataAs })), on embedded PGlite the same file data directory opened again
// (as test/e2e/webhooks-kill.test.ts does). The state a crash leaves (a claim whose lease is still
// held, an outbound effect started and not finished) is written to the database as the dead
// process would have left it.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LEASE_MS } from '../../src/automations/step-writes.js';
import { loadConfig } from '../../src/config.js';
import { ManualClock } from '../../src/lib/clock.js';
import { newId } from '../../src/lib/ids.js';
import { startRuntime } from '../../src/runtime.js';
import { type Receiver, startReceiver } from '../fakes/receiver.js';
import { ADMIN_TOKEN, freshPhone, request, startTestApp, type TestAccount, type TestApp } from '../harness.js';
import { serverEnv, spawnServer } from '../server-process.js';

const onPostgres = !!process.env.DATABASE_URL;
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
});

/** The parts of a process the tests use: HTTP as the operator, the database, the clock. */
type Proc = Pick<TestApp, 'url' | 'rt' | 'clock' | 'admin' | 'api' | 'inbound' | 'events' | 'close'>;

/** A first process whose data outlives it: PostgreSQL (a fresh database), or PGlite in a file directory. */
async function firstProcess(): Promise<TestApp> {
  if (onPostgres) {
    const app = await startTestApp();
    cleanup.push(() => app.close());
    return app;
  }
  const dir = mkdtempSync(join(tmpdir(), 'chasqui-auto-durable-'));
  cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
  const app = await startTestApp({ env: { DATABASE_URL: `file://${dir}/pg`, DATA_DIR: dir } });
  cleanup.push(() => app.close());
  return app;
}

/**
 * The first process stops (it gives its executions back, as a shutdown does) and a new one
 * starts on the same data with the same clock; the new one runs its own runner.
 */
async function restart(first: TestApp): Promise<Proc> {
  if (onPostgres) {
    const next = await startTestApp({ sameDataAs: first, clock: first.clock });
    cleanup.push(() => next.close());
    await first.close();
    return next;
  }
  await first.close();
  const rt = await startRuntime(loadConfig(first.env), { clock: first.clock, usageFlushMs: 0 });
  cleanup.push(() => rt.close());
  const url = (await rt.listen()).replace('[::1]', '127.0.0.1');
  const admin = (method: string, path: string, body?: unknown) =>
    request(`${url}/admin/v1${path}`, method, body, { authorization: `Bearer ${ADMIN_TOKEN}` });
  return {
    url,
    rt,
    clock: first.clock,
    admin,
    api: (key, method, path, body, headers = {}) =>
      request(`${url}/api/v1${path}`, method, body, { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers }),
    inbound: (body) => admin('POST', '/sandbox/inbound', body),
    events: async (accountId, kind) => {
      let q = rt.services.db.selectFrom('events').select(['kind', 'data']).where('account_id', '=', accountId);
      if (kind) q = q.where('kind', '=', kind);
      return q.orderBy('created_at').orderBy('id').execute();
    },
    close: () => rt.close(),
  };
}

async function createFlow(p: Pick<Proc, 'admin'>, acct: TestAccount, body: Record<string, unknown>) {
  const r = await p.admin('POST', `/accounts/${acct.id}/automations`, { status: 'active', name: 'Durable', ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

async function execution(p: Pick<Proc, 'admin'>, acct: TestAccount, automationId: string, id: string) {
  const r = await p.admin('GET', `/accounts/${acct.id}/automations/${automationId}/executions/${id}`);
  expect(r.status).toBe(200);
  return r.body;
}

async function onlyExecution(p: Pick<Proc, 'admin'>, acct: TestAccount, automationId: string) {
  const list = await p.admin('GET', `/accounts/${acct.id}/automations/${automationId}/executions`);
  expect(list.body.data).toHaveLength(1);
  return execution(p, acct, automationId, list.body.data[0].id);
}

/** Texts the automation sent in a conversation (from the database: the process may be another). */
async function automationTexts(p: Pick<Proc, 'rt'>, conversationId: string): Promise<string[]> {
  const rows = await p.rt.services.db
    .selectFrom('messages')
    .select(['text', 'source'])
    .where('conversation_id', '=', conversationId)
    .where('direction', '=', 'outbound')
    .orderBy('id')
    .execute();
  return rows.filter((m) => m.source === 'automation').map((m) => String(m.text));
}

const runDue = (p: Pick<Proc, 'admin'>) => p.admin('POST', '/jobs/automations/run');

describe('"restart resumes every running execution and fires every due timer"', () => {
  it('a wait timer, an ask timeout and an execution held by a dead claim all go on in the next process once due', async () => {
    const app = await firstProcess();
    const acct = await app.createAccount();
    const waiting = await createFlow(app, acct, {
      name: 'Espera',
      trigger: { type: 'keyword', keywords: ['espera'], match: 'exact' },
      steps: [
        { id: 'w', type: 'wait', minutes: 30 },
        { id: 's', type: 'send', text: 'Pasó la espera' },
      ],
    });
    const asking = await createFlow(app, acct, {
      name: 'Pregunta',
      trigger: { type: 'keyword', keywords: ['pregunta'], match: 'exact' },
      steps: [
        { id: 'q', type: 'ask', text: '¿Seguís ahí?', save: 'r', timeoutMinutes: 10, timeoutNext: 't' },
        { id: 'ok', type: 'end' },
        { id: 't', type: 'send', text: 'Te esperamos cuando quieras' },
      ],
    });
    const held = await createFlow(app, acct, {
      name: 'Tomada',
      trigger: { type: 'keyword', keywords: ['tomada'], match: 'exact' },
      steps: [
        { id: 'w', type: 'wait', minutes: 600 },
        { id: 'c', type: 'condition', if: { var: 'x', op: 'exists' } },
        { id: 's', type: 'send', text: 'Seguimos' },
      ],
    });
    const w = await app.inbound({ accountId: acct.id, from: freshPhone(), text: 'espera' });
    const q = await app.inbound({ accountId: acct.id, from: freshPhone(), text: 'pregunta' });
    const h = await app.inbound({ accountId: acct.id, from: freshPhone(), text: 'tomada' });
    for (const r of [w, q, h]) expect(r.status).toBe(201);
    await runDue(app);
    const ew = await onlyExecution(app, acct, waiting.id);
    const eq = await onlyExecution(app, acct, asking.id);
    const eh = await onlyExecution(app, acct, held.id);
    expect([ew.status, ew.currentStepId, eq.status, eq.currentStepId]).toEqual(['running', 'w', 'running', 'q']);
    // The third one was in the middle of its condition step when its process died: claimed, the
    // lease (run_at) not over yet.
    const db = app.rt.services.db;
    await db
      .updateTable('automation_executions')
      .set({ current_step_id: 'c', state: 'ready', deadline_at: null, claim: randomUUID(), run_at: new Date(app.clock.ms() + LEASE_MS) })
      .where('id', '=', eh.id)
      .execute();

    const next = await restart(app);
    // Nothing is due yet: the timers are in the future and the dead claim's lease holds.
    await runDue(next);
    expect((await execution(next, acct, waiting.id, ew.id)).status).toBe('running');
    expect((await execution(next, acct, asking.id, eq.id)).status).toBe('running');
    expect((await execution(next, acct, held.id, eh.id)).status).toBe('running');
    expect(await automationTexts(next, h.body.conversationId)).toEqual([]);

    next.clock.advance(LEASE_MS + 1_000); // the dead claim lapses
    await runDue(next);
    const heldDone = await execution(next, acct, held.id, eh.id);
    expect(heldDone.status, JSON.stringify(heldDone)).toBe('completed');
    expect(await automationTexts(next, h.body.conversationId)).toEqual(['Seguimos']);
    expect((await execution(next, acct, asking.id, eq.id)).status).toBe('running');

    next.clock.advance(10 * 60_000); // the ask's timeout is due (12 minutes after it asked)
    await runDue(next);
    const asked = await execution(next, acct, asking.id, eq.id);
    expect(asked.status, JSON.stringify(asked)).toBe('completed');
    expect(asked.steps.map((x: any) => `${x.stepId}:${x.outcome}`)).toEqual(['q:asked', 'q:timeout', 't:ok']);
    expect(await automationTexts(next, q.body.conversationId)).toEqual(['¿Seguís ahí?', 'Te esperamos cuando quieras']);
    expect((await execution(next, acct, waiting.id, ew.id)).status).toBe('running');

    next.clock.advance(20 * 60_000); // the 30-minute wait is due
    await runDue(next);
    const waited = await execution(next, acct, waiting.id, ew.id);
    expect(waited.status).toBe('completed');
    expect(await automationTexts(next, w.body.conversationId)).toEqual(['Pasó la espera']);
    // Each ended once, with one event each.
    const done = (await next.events(acct.id, 'automation.completed')).map((e) => e.data.executionId).sort();
    expect(done).toEqual([ew.id, eq.id, eh.id].sort());
  }, 60_000);
});

describe('"a send or http step found started-but-unfinished after a crash fails the execution (interrumpida)"', () => {
  it('the next process fails them with the Spanish "interrumpido" error and automation.failed, and neither the message nor the request goes out again', async () => {
    const r: Receiver = await startReceiver({ status: 200, body: '{"ok":true}', headers: { 'content-type': 'application/json' } });
    cleanup.push(() => r.close());
    const app = await firstProcess();
    const acct = await app.createAccount();
    const sendFlow = await createFlow(app, acct, {
      name: 'Envío',
      trigger: { type: 'keyword', keywords: ['envio'], match: 'exact' },
      steps: [
        { id: 'w', type: 'wait', minutes: 60 },
        { id: 'aviso', type: 'send', text: 'Tu pedido salió' },
        { id: 'fin', type: 'send', text: 'Gracias' },
      ],
    });
    const httpFlow = await createFlow(app, acct, {
      name: 'Pedido',
      trigger: { type: 'keyword', keywords: ['pedido'], match: 'exact' },
      steps: [
        { id: 'w', type: 'wait', minutes: 60 },
        { id: 'crm', type: 'http', method: 'POST', url: `${r.url}/crm`, body: { phone: '{{contact.phone}}' }, save: 'crm' },
        { id: 'fin', type: 'send', text: 'Listo' },
      ],
    });
    const a = await app.inbound({ accountId: acct.id, from: freshPhone(), text: 'envio' });
    const b = await app.inbound({ accountId: acct.id, from: freshPhone(), text: 'pedido' });
    await runDue(app);
    const ea = await onlyExecution(app, acct, sendFlow.id);
    const eb = await onlyExecution(app, acct, httpFlow.id);
    // The crash: each had committed its effect step as started (the step log row open, effect_step
    // set), and died before recording its end; the claim's lease has lapsed.
    const db = app.rt.services.db;
    const crashAt = app.clock.now();
    for (const [e, step, type] of [
      [ea, 'aviso', 'send'],
      [eb, 'crm', 'http'],
    ] as const) {
      // A step log id as the runner makes it (UUIDv7: the log lists in creation order, after `w`).
      const logId = newId();
      await db
        .insertInto('automation_steps')
        .values({ id: logId, execution_id: e.id, step_id: step, type, started_at: crashAt, ended_at: null, outcome: null, detail: null })
        .execute();
      await db
        .updateTable('automation_executions')
        .set({
          current_step_id: step,
          state: 'ready',
          deadline_at: null,
          effect_step: logId,
          claim: randomUUID(),
          run_at: new Date(crashAt.getTime() - 1_000),
        })
        .where('id', '=', e.id)
        .execute();
    }

    const next = await restart(app);
    await runDue(next);
    for (const [e, automationId, step] of [
      [ea, sendFlow.id, 'aviso'],
      [eb, httpFlow.id, 'crm'],
    ] as const) {
      const got = await execution(next, acct, automationId, e.id);
      expect(got.status).toBe('failed');
      expect(got.error).toBe(
        `El paso "${step}" quedó interrumpido: el servicio se reinició mientras lo hacía y no lo repetimos para no enviar dos veces.`,
      );
      const log = got.steps.find((x: any) => x.stepId === step);
      expect(log).toMatchObject({ outcome: 'interrupted', endedAt: expect.any(String) });
      // Nothing after the interrupted step ran either.
      expect(got.steps.map((x: any) => x.stepId)).toEqual(['w', step]);
    }
    expect(await automationTexts(next, a.body.conversationId)).toEqual([]);
    expect(await automationTexts(next, b.body.conversationId)).toEqual([]);
    expect(r.received).toHaveLength(0);
    const failed = await next.events(acct.id, 'automation.failed');
    expect(failed.map((e) => e.data.executionId).sort()).toEqual([ea.id, eb.id].sort());
    expect(failed[0]?.data).toMatchObject({ status: 'failed', error: expect.stringMatching(/interrumpido/) });
    // Running everything due again changes nothing.
    await runDue(next);
    expect(r.received).toHaveLength(0);
    expect(await automationTexts(next, a.body.conversationId)).toEqual([]);
  }, 60_000);
});

describe('a process killed (SIGKILL) in the middle of an http step', () => {
  it('the next process, once the dead claim lapses, fails the execution "interrumpida" and the request is not sent again', async () => {
    const r: Receiver = await startReceiver({ hang: true });
    cleanup.push(() => r.close());
    const dir = mkdtempSync(join(tmpdir(), 'chasqui-auto-kill-'));
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    let dbEnv: Record<string, string> = { DATA_DIR: dir, DATABASE_URL: `file://${dir}/pg` };
    if (!onPostgres) {
      // The data directory made from the migrated template (faster than a first start's initdb).
      const seed = await startTestApp({ env: dbEnv, workers: false });
      await seed.close();
    } else {
      const holder = await startTestApp({ workers: false }); // a fresh, migrated database
      cleanup.push(() => holder.close());
      dbEnv = { DATA_DIR: dir, DATABASE_URL: holder.databaseUrl };
    }
    const env = serverEnv({
      ...dbEnv,
      ALLOW_PRIVATE_WEBHOOKS: 'on',
      REDIS_KEY_PREFIX: `chasqui-auto-kill-${process.pid}`,
    });
    const first = await spawnServer(env, (fn) => cleanup.push(fn));
    const admin = (method: string, path: string, body?: unknown) =>
      request(`${first.url}/admin/v1${path}`, method, body, { authorization: `Bearer ${ADMIN_TOKEN}` });
    const acc = (await admin('POST', '/accounts', { name: 'Kill', plan: 'escala' })).body;
    const key = (await admin('POST', `/accounts/${acc.id}/keys`, { name: 'k' })).body.key;
    const pn = await admin('POST', `/accounts/${acc.id}/phone-numbers`, {
      phone: freshPhone({ spelling: 'digits' }),
      name: 'Principal',
      provider: 'sandbox',
    });
    expect(pn.status).toBe(201);
    const flow = await admin('POST', `/accounts/${acc.id}/automations`, {
      name: 'CRM',
      status: 'active',
      trigger: { type: 'api' },
      steps: [
        { id: 'crm', type: 'http', method: 'POST', url: `${r.url}/crm`, body: { phone: '{{contact.phone}}' } },
        { id: 'fin', type: 'end' },
      ],
    });
    expect(flow.status).toBe(201);
    const started = await request(
      `${first.url}/api/v1/automations/${flow.body.id}/executions`,
      'POST',
      { to: freshPhone() },
      {
        authorization: `Bearer ${key}`,
      },
    );
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ status: 'running', currentStepId: 'crm' });
    await r.waitFor(1, 10_000); // the request is out; the receiver never answers
    const exited = new Promise((res) => first.child.once('exit', res));
    first.child.kill('SIGKILL');
    await exited;

    const clock = new ManualClock();
    const next = await startRuntime(loadConfig(env), { clock, usageFlushMs: 0 });
    cleanup.push(() => next.close());
    const row = () =>
      next.services.db.selectFrom('automation_executions').selectAll().where('id', '=', started.body.id).executeTakeFirstOrThrow();
    // The dead process's lease holds: nothing to run yet.
    await next.automations.runOnce();
    expect((await row()).status).toBe('running');
    clock.advance(LEASE_MS + 1_000);
    await next.automations.runOnce();
    const e = await row();
    expect(e.status).toBe('failed');
    expect(e.error).toMatch(/^El paso "crm" quedó interrumpido/);
    const log = await next.services.db.selectFrom('automation_steps').selectAll().where('execution_id', '=', e.id).execute();
    expect(log.map((x) => `${x.step_id}:${x.outcome}`)).toEqual(['crm:interrupted']);
    expect(r.received).toHaveLength(1);
    const failed = await next.services.db.selectFrom('events').select('data').where('kind', '=', 'automation.failed').execute();
    expect(failed.map((x) => (x.data as { executionId: string }).executionId)).toEqual([e.id]);
    await next.close();
  }, 150_000);
});

describe('"two processes never run one execution at once"', () => {
  it.skipIf(!onPostgres)(
    'on PostgreSQL: 50 executions due at once, both processes claiming → exactly one http request and one message per execution',
    async () => {
      const r: Receiver = await startReceiver({ status: 200, body: 'ok' });
      cleanup.push(() => r.close());
      const one = await startTestApp();
      cleanup.push(() => one.close());
      const two = await startTestApp({ sameDataAs: one, clock: one.clock });
      cleanup.push(() => two.close());
      const acct = await one.createAccount();
      const flow = await createFlow(one, acct, {
        name: 'Carrera',
        trigger: { type: 'keyword', keywords: ['carrera'], match: 'exact' },
        steps: [
          { id: 'w', type: 'wait', minutes: 1 },
          { id: 'h', type: 'http', method: 'POST', url: `${r.url}/hit`, body: { phone: '{{contact.phone}}' } },
          { id: 's', type: 'send', text: 'Una sola vez' },
        ],
      });
      const N = 50;
      const conversations: string[] = [];
      for (let i = 0; i < N; i++) {
        const p = i % 2 === 0 ? one : two;
        const res = await p.inbound({ accountId: acct.id, from: freshPhone(), text: 'carrera' });
        expect(res.status).toBe(201);
        conversations.push(res.body.conversationId);
      }
      // Every execution parks at its wait; then all fall due at once for both processes (their
      // background runners poll too) and both are told to run everything due.
      await Promise.all([runDue(one), runDue(two)]);
      one.clock.advance(61_000);
      await Promise.all([runDue(one), runDue(two), runDue(one), runDue(two)]);
      await Promise.all([runDue(one), runDue(two)]);
      const rows = await one.rt.services.db
        .selectFrom('automation_executions')
        .select(['status'])
        .where('automation_id', '=', flow.id)
        .execute();
      expect(rows).toHaveLength(N);
      expect(rows.every((x) => x.status === 'completed')).toBe(true);
      // One request per execution (per contact phone), none twice.
      expect(r.received).toHaveLength(N);
      expect(new Set(r.received.map((x) => x.json?.phone)).size).toBe(N);
      // One message per conversation.
      const sent = await one.rt.services.db
        .selectFrom('messages')
        .select(['conversation_id'])
        .where('account_id', '=', acct.id)
        .where('direction', '=', 'outbound')
        .where('source', '=', 'automation')
        .execute();
      expect(sent).toHaveLength(N);
      expect(new Set(sent.map((m) => m.conversation_id))).toEqual(new Set(conversations));
      // Each execution's step log has its http and send step once.
      const logs = await one.rt.services.db
        .selectFrom('automation_steps')
        .innerJoin('automation_executions', 'automation_executions.id', 'automation_steps.execution_id')
        .select(['automation_steps.step_id'])
        .where('automation_executions.automation_id', '=', flow.id)
        .execute();
      expect(logs.filter((x) => x.step_id === 'h')).toHaveLength(N);
      expect(logs.filter((x) => x.step_id === 's')).toHaveLength(N);
    },
    90_000,
  );
});
