// Cases and pipelines (api.md §2 "Case", §3 "Case", §4; decisions.md "Resources", "Endpoints",
// "Event data keys"; operator.md "Pipelines, cases and campaigns"; the case-timeouts job).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobs } from '../../src/jobs/registry.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

const events = (accountId: string, kind?: string) => app.events(accountId, kind);

const SALES = {
  name: 'Ventas',
  stages: [
    { name: 'Nuevo', kind: 'open' },
    { name: 'Cotizado', kind: 'open' },
    { name: 'Ganado', kind: 'won' },
    { name: 'Perdido', kind: 'lost' },
  ],
};

async function pipeline(acc: TestAccount, body: Record<string, unknown> = SALES) {
  const res = await app.admin('POST', `/accounts/${acc.id}/pipelines`, body);
  expect(res.status).toBe(201);
  return res.body;
}

/** A customer writes; returns the open case of that conversation (read through the API). */
async function customerWrites(acc: TestAccount, from: string, extra: Record<string, unknown> = {}) {
  const res = await app.inbound({ accountId: acc.id, from, text: 'Hola, quiero saber precios', name: 'Ana Pérez', ...extra });
  expect(res.status).toBe(201);
  const row = await app.rt.services.db
    .selectFrom('cases')
    .select('id')
    .where('conversation_id', '=', res.body.conversationId)
    .orderBy('opened_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
  const c = await acc.call('GET', `/cases/${row.id}`);
  expect(c.status).toBe(200);
  return { inbound: res.body, case: c.body };
}

const runJob = async (name: string) => {
  const res = await app.admin('POST', `/jobs/${name}/run`);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ ran: name, changed: expect.any(Number) });
  return res.body.changed as number;
};

describe('pipelines (decisions.md "Resources": Pipeline; operator.md)', () => {
  it('POST /admin/v1/accounts/{id}/pipelines → 201 Pipeline with stage ids; "the first pipeline of an account becomes default"', async () => {
    const acc = await app.createAccount();
    const p = await pipeline(acc);
    expect(p).toMatchObject({ id: expect.any(String), name: 'Ventas', inactivityHours: 24, staleDays: 30, default: true });
    expect(p.stages.map((st: any) => [st.name, st.kind, st.position])).toEqual([
      ['Nuevo', 'open', 0],
      ['Cotizado', 'open', 1],
      ['Ganado', 'won', 2],
      ['Perdido', 'lost', 3],
    ]);
    for (const st of p.stages) expect(st.id).toMatch(/^[0-9a-f-]{36}$/);
    const second = await pipeline(acc, { name: 'Soporte', stages: [{ name: 'Abierto', kind: 'open' }], inactivityHours: 48, staleDays: 7 });
    expect(second).toMatchObject({ default: false, inactivityHours: 48, staleDays: 7 });
  });

  it('a pipeline needs an open stage, and kinds are open/won/lost → 400 validation', async () => {
    const acc = await app.createAccount();
    const noOpen = await app.admin('POST', `/accounts/${acc.id}/pipelines`, { name: 'X', stages: [{ name: 'Ganado', kind: 'won' }] });
    expect(noOpen.status).toBe(400);
    expect(JSON.parse(noOpen.body.error.message)[0].path).toEqual(['stages']);
    const badKind = await app.admin('POST', `/accounts/${acc.id}/pipelines`, { name: 'X', stages: [{ name: 'A', kind: 'maybe' }] });
    expect(badKind.status).toBe(400);
    expect(JSON.parse(badKind.body.error.message)[0].path).toEqual(['stages', 0, 'kind']);
  });

  it('GET /pipelines: "cursor pagination with limit and after" (decisions.md "Endpoints")', async () => {
    const acc = await app.createAccount();
    const a = await pipeline(acc, { ...SALES, name: 'A' });
    const b = await pipeline(acc, { ...SALES, name: 'B' });
    const c = await pipeline(acc, { ...SALES, name: 'C' });
    const first = await acc.call('GET', '/pipelines?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data.map((p: any) => p.id)).toEqual([a.id, b.id]);
    expect(first.body.hasMore).toBe(true);
    expect(first.body.data[0]).toEqual(a);
    const next = await acc.call('GET', `/pipelines?limit=2&after=${b.id}`);
    expect(next.body.data.map((p: any) => p.id)).toEqual([c.id]);
    expect(next.body.hasMore).toBe(false);
    expect((await acc.call('GET', '/pipelines?limit=0')).status).toBe(400);
    expect((await acc.call('GET', '/pipelines?after=nope')).status).toBe(400);
    // Another account sees only its own pipelines.
    const other = await app.createAccount();
    expect((await other.call('GET', '/pipelines')).body.data).toEqual([]);
  });
});

describe('a customer writes (api.md §3 Case: "(none) → open, case.opened")', () => {
  it('opens a case in the default pipeline’s first open stage, with every api.md §2 Case field and the stage object', async () => {
    const acc = await app.createAccount();
    const p = await pipeline(acc, { ...SALES, inactivityHours: 12 });
    const from = freshPhone();
    const { inbound, case: c } = await customerWrites(acc, from);
    expect(c).toEqual({
      id: expect.any(String),
      conversationId: inbound.conversationId,
      contactId: inbound.contactId,
      contactName: 'Ana Pérez',
      status: 'open',
      openedAt: expect.stringMatching(/Z$/),
      lastInboundAt: c.openedAt,
      closedAt: null,
      closeReason: null,
      closedBy: null,
      reasonId: null,
      reason: null,
      subreasonId: null,
      subreason: null,
      reasonSource: null,
      reasonStatus: 'pending',
      reasonConfidence: null,
      reasonSetBy: null,
      reasonSetAt: null,
      handledBy: 'none',
      agentId: null,
      agentName: null,
      handedOffAt: null,
      goalAt: null,
      inactivityHours: 12,
      ad: null,
      score: null,
      scoreBucket: null,
      scoreDetail: [],
      scoredReason: false,
      outcome: null,
      outcomeAmount: null,
      outcomeCurrency: null,
      outcomeNote: null,
      outcomeSource: null,
      outcomeBy: null,
      outcomeAt: null,
      outcomeExternalId: null,
      stage: {
        pipeline: { id: p.id, name: 'Ventas' },
        stage: { id: p.stages[0].id, name: 'Nuevo', kind: 'open' },
        enteredAt: c.openedAt,
        fields: {},
      },
      pipelineId: p.id,
    });

    // case.opened, then case.stage_changed (it entered a pipeline), each with the whole case.
    const kinds = (await events(acc.id)).map((e) => e.kind).filter((k) => k.startsWith('case.'));
    expect(kinds).toEqual(['case.opened', 'case.stage_changed']);
    const [opened] = await events(acc.id, 'case.opened');
    expect(opened!.data).toMatchObject({
      id: c.id,
      conversationId: inbound.conversationId,
      contactId: inbound.contactId,
      contactName: 'Ana Pérez',
      status: 'open',
      openedAt: c.openedAt,
      lastInboundAt: c.lastInboundAt,
      closedAt: null,
      closeReason: null,
      reason: null,
      subreason: null,
      reasonSource: null,
      handledBy: 'none',
      ad: null,
      score: null,
      outcome: null,
      stage: c.stage,
    });
  });

  it('a second message while the case is open updates lastInboundAt and opens nothing', async () => {
    const acc = await app.createAccount();
    await pipeline(acc);
    const from = freshPhone();
    const first = await customerWrites(acc, from);
    app.clock.advance(5 * 60 * 1000);
    const second = await customerWrites(acc, from, { text: '¿y envíos?' });
    expect(second.case.id).toBe(first.case.id);
    expect(new Date(second.case.lastInboundAt).getTime()).toBe(new Date(first.case.lastInboundAt).getTime() + 5 * 60 * 1000);
    expect(second.case.openedAt).toBe(first.case.openedAt);
    expect(await events(acc.id, 'case.opened')).toHaveLength(1);
  });

  it('"No default pipeline → case with stage null" and only case.opened', async () => {
    const acc = await app.createAccount();
    const { case: c } = await customerWrites(acc, freshPhone());
    expect(c).toMatchObject({ status: 'open', stage: null, pipelineId: null, inactivityHours: 24 });
    const kinds = (await events(acc.id)).map((e) => e.kind).filter((k) => k.startsWith('case.'));
    expect(kinds).toEqual(['case.opened']);
  });

  it('"ad: the ad that brought the customer, if within the previous 7 days" — from the message referral; the event carries the headline', async () => {
    const acc = await app.createAccount();
    await pipeline(acc);
    const referral = { id: 'ad-123', headline: 'Zapatillas 2x1', sourceUrl: 'https://fb.me/ad-123' };
    const { case: c } = await customerWrites(acc, freshPhone(), { referral });
    expect(c.ad).toEqual(referral);
    const [opened] = await events(acc.id, 'case.opened');
    expect(opened!.data.ad).toBe('Zapatillas 2x1');

    // A referral on a message older than 7 days does not count.
    const old = new Date(app.clock.now().getTime() - 8 * DAY).toISOString();
    const { case: late } = await customerWrites(acc, freshPhone(), { referral, timestamp: old });
    expect(late.ad).toBeNull();
  });

  it('the ad of a click within 7 days carries to the next case of the contact; after 7 days it does not', async () => {
    const acc = await app.createAccount();
    const p = await pipeline(acc);
    const from = freshPhone();
    const referral = { id: 'ad-9', headline: 'Promo', sourceUrl: 'https://fb.me/ad-9' };
    const first = await customerWrites(acc, from, { referral });
    await app.admin('POST', `/accounts/${acc.id}/cases/${first.case.id}/close`, {});
    app.clock.advance(3 * DAY);
    const second = await customerWrites(acc, from);
    expect(second.case.id).not.toBe(first.case.id);
    expect(second.case.ad).toEqual(referral);
    await app.admin('POST', `/accounts/${acc.id}/cases/${second.case.id}/close`, {});
    app.clock.advance(5 * DAY);
    const third = await customerWrites(acc, from);
    expect(third.case.ad).toBeNull();
    expect(third.case.stage.pipeline.id).toBe(p.id);
  });
});

describe('GET /pipelines/{id}/cases (decisions.md "Endpoints")', () => {
  it('newest first; status and stage filters; limit/offset with hasMore and nextOffset = offset + returned', async () => {
    const acc = await app.createAccount();
    const p = await pipeline(acc);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await customerWrites(acc, freshPhone())).case.id);
      app.clock.advance(1000);
    }
    const newestFirst = [...ids].reverse();
    // Close one by hand, move another to Cotizado.
    expect((await app.admin('POST', `/accounts/${acc.id}/cases/${ids[0]}/close`, {})).status).toBe(200);
    expect((await acc.call('POST', `/cases/${ids[1]}/stage`, { stageId: p.stages[1].id })).status).toBe(200);

    const all = await acc.call('GET', `/pipelines/${p.id}/cases`);
    expect(all.status).toBe(200);
    expect(all.body.data.map((c: any) => c.id)).toEqual(newestFirst);
    expect(all.body).toMatchObject({ hasMore: false, nextOffset: 5 });
    expect(all.body.data[0].stage.pipeline.id).toBe(p.id);

    const page1 = await acc.call('GET', `/pipelines/${p.id}/cases?limit=2`);
    expect(page1.body.data.map((c: any) => c.id)).toEqual(newestFirst.slice(0, 2));
    expect(page1.body).toMatchObject({ hasMore: true, nextOffset: 2 });
    const page3 = await acc.call('GET', `/pipelines/${p.id}/cases?limit=2&offset=4`);
    expect(page3.body.data.map((c: any) => c.id)).toEqual(newestFirst.slice(4));
    expect(page3.body).toMatchObject({ hasMore: false, nextOffset: 5 });

    const open = await acc.call('GET', `/pipelines/${p.id}/cases?status=open`);
    expect(open.body.data.map((c: any) => c.id)).toEqual(newestFirst.filter((id) => id !== ids[0]));
    const closed = await acc.call('GET', `/pipelines/${p.id}/cases?status=closed`);
    expect(closed.body.data.map((c: any) => c.id)).toEqual([ids[0]]);
    const quoted = await acc.call('GET', `/pipelines/${p.id}/cases?stage=${p.stages[1].id}`);
    expect(quoted.body.data.map((c: any) => c.id)).toEqual([ids[1]]);
    expect(quoted.body.data[0].stage.stage).toEqual({ id: p.stages[1].id, name: 'Cotizado', kind: 'open' });
  });

  it('bad params → 400 validation naming the parameter; unknown or another account’s pipeline → 404', async () => {
    const acc = await app.createAccount();
    const p = await pipeline(acc);
    for (const [q, path] of [
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['offset=-1', 'offset'],
      ['status=pending', 'status'],
      ['stage=nope', 'stage'],
    ] as const) {
      const res = await acc.call('GET', `/pipelines/${p.id}/cases?${q}`);
      expect(res.status, q).toBe(400);
      expect(JSON.parse(res.body.error.message)[0].path).toEqual([path]);
    }
    const unknown = await acc.call('GET', '/pipelines/0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e/cases');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: expect.any(String), cause: null });
    const other = await app.createAccount();
    expect((await other.call('GET', `/pipelines/${p.id}/cases`)).status).toBe(404);
    // docs/decisions.md: a path id that is not a UUID names nothing in the account → 404.
    expect((await acc.call('GET', '/pipelines/not-a-uuid/cases')).status).toBe(404);
  });

  it('GET /cases/{id} of another account → 404 (api.md §1)', async () => {
    const acc = await app.createAccount();
    await pipeline(acc);
    const { case: c } = await customerWrites(acc, freshPhone());
    const other = await app.createAccount();
    expect((await other.call('GET', `/cases/${c.id}`)).status).toBe(404);
    expect((await acc.call('GET', '/cases/0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e')).status).toBe(404);
  });
});

describe('POST /cases/{id}/outcome (decisions.md: "sets outcomeSource api, emits case.outcome")', () => {
  it('sets result, amount, currency, note, externalId; status unchanged; the event carries the outcome object', async () => {
    const acc = await app.createAccount();
    await pipeline(acc);
    const { case: c } = await customerWrites(acc, freshPhone());
    const res = await acc.call('POST', `/cases/${c.id}/outcome`, {
      result: 'won',
      amount: 15999.5,
      currency: 'ars',
      note: 'Pagó con transferencia',
      externalId: 'ORD-1001',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: c.id,
      status: 'open',
      outcome: 'won',
      outcomeAmount: 15999.5,
      outcomeCurrency: 'ARS',
      outcomeNote: 'Pagó con transferencia',
      outcomeExternalId: 'ORD-1001',
      outcomeSource: 'api',
      outcomeBy: null,
      outcomeAt: app.clock.now().toISOString(),
    });
    expect((await acc.call('GET', `/cases/${c.id}`)).body).toEqual(res.body);
    const [ev] = await events(acc.id, 'case.outcome');
    expect(ev!.data.outcome).toMatchObject({
      result: 'won',
      amount: 15999.5,
      currency: 'ARS',
      note: 'Pagó con transferencia',
      externalId: 'ORD-1001',
      source: 'api',
    });
  });

  it('an outcome may be marked after the case closed (the sale is often confirmed later)', async () => {
    const acc = await app.createAccount();
    await pipeline(acc);
    const { case: c } = await customerWrites(acc, freshPhone());
    await app.admin('POST', `/accounts/${acc.id}/cases/${c.id}/close`, {});
    const res = await acc.call('POST', `/cases/${c.id}/outcome`, { result: 'lost' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'closed', closeReason: 'manual', outcome: 'lost', outcomeAmount: null });
  });

  it('result other than won/lost, or a negative amount → 400 validation', async () => {
    const acc = await app.createAccount();
    await pipeline(acc);
    const { case: c } = await customerWrites(acc, freshPhone());
    const bad = await acc.call('POST', `/cases/${c.id}/outcome`, { result: 'maybe' });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body.error.message)[0].path).toEqual(['result']);
    expect((await acc.call('POST', `/cases/${c.id}/outcome`, { result: 'won', amount: -1 })).status).toBe(400);
    expect((await acc.call('POST', '/cases/0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e/outcome', { result: 'won' })).status).toBe(404);
  });
});

describe('POST /cases/{id}/stage (decisions.md: "emits case.stage_changed; a won/lost stage closes the case with closeReason stage")', () => {
  it('an open stage moves the case and emits case.stage_changed with the new stage', async () => {
    const acc = await app.createAccount();
    const p = await pipeline(acc);
    const { case: c } = await customerWrites(acc, freshPhone());
    app.clock.advance(60_000);
    const res = await acc.call('POST', `/cases/${c.id}/stage`, { stageId: p.stages[1].id });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'open', closeReason: null });
    expect(res.body.stage).toEqual({
      pipeline: { id: p.id, name: 'Ventas' },
      stage: { id: p.stages[1].id, name: 'Cotizado', kind: 'open' },
      enteredAt: app.clock.now().toISOString(),
      fields: {},
    });
    const changes = await events(acc.id, 'case.stage_changed');
    expect(changes).toHaveLength(2);
    expect(changes[1]!.data.stage.stage.name).toBe('Cotizado');
  });

  it('a won stage with amount closes the case (closeReason stage, case.closed); then a stage change → 409', async () => {
    const acc = await app.createAccount();
    const p = await pipeline(acc);
    const { case: c } = await customerWrites(acc, freshPhone());
    const res = await acc.call('POST', `/cases/${c.id}/stage`, { stageId: p.stages[2].id, amount: 2500 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'closed', closeReason: 'stage', closedAt: app.clock.now().toISOString(), closedBy: null });
    expect(res.body.stage).toMatchObject({ stage: { kind: 'won', name: 'Ganado' }, amount: 2500 });
    const closed = await events(acc.id, 'case.closed');
    expect(closed).toHaveLength(1);
    expect(closed[0]!.data).toMatchObject({ id: c.id, status: 'closed', closeReason: 'stage', stage: { amount: 2500 } });

    const again = await acc.call('POST', `/cases/${c.id}/stage`, { stageId: p.stages[0].id });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: expect.stringMatching(/cerrado/), cause: null });
  });

  it('a lost stage closes it too; a stage of another pipeline or unknown → 404', async () => {
    const acc = await app.createAccount();
    const p = await pipeline(acc);
    const other = await pipeline(acc, { name: 'Soporte', stages: [{ name: 'Abierto', kind: 'open' }] });
    const { case: c } = await customerWrites(acc, freshPhone());
    expect((await acc.call('POST', `/cases/${c.id}/stage`, { stageId: other.stages[0].id })).status).toBe(404);
    expect((await acc.call('POST', `/cases/${c.id}/stage`, { stageId: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e' })).status).toBe(404);
    expect((await acc.call('POST', `/cases/${c.id}/stage`, { stageId: 'nope' })).status).toBe(400);
    const lost = await acc.call('POST', `/cases/${c.id}/stage`, { stageId: p.stages[3].id });
    expect(lost.body).toMatchObject({ status: 'closed', closeReason: 'stage', stage: { stage: { kind: 'lost' } } });
  });

  it('a case in no pipeline "enters a pipeline" with a stage of any of the account’s pipelines', async () => {
    const acc = await app.createAccount();
    const { case: c } = await customerWrites(acc, freshPhone());
    expect(c.stage).toBeNull();
    const p = await pipeline(acc);
    const res = await acc.call('POST', `/cases/${c.id}/stage`, { stageId: p.stages[0].id });
    expect(res.status).toBe(200);
    expect(res.body.stage.pipeline.id).toBe(p.id);
    expect(await events(acc.id, 'case.stage_changed')).toHaveLength(1);
  });
});

describe('operator actions on cases (operator.md)', () => {
  it('close {by} → closeReason manual, closedBy {id, name}, case.closed; closing again → 409', async () => {
    const acc = await app.createAccount();
    await pipeline(acc);
    const { case: c } = await customerWrites(acc, freshPhone());
    const by = { id: 'u-1', name: 'Laura' };
    const res = await app.admin('POST', `/accounts/${acc.id}/cases/${c.id}/close`, { by });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'closed', closeReason: 'manual', closedBy: by, closedAt: app.clock.now().toISOString() });
    const [ev] = await events(acc.id, 'case.closed');
    expect(ev!.data).toMatchObject({ closeReason: 'manual', closedBy: by });
    expect((await app.admin('POST', `/accounts/${acc.id}/cases/${c.id}/close`, {})).status).toBe(409);
    const other = await app.createAccount();
    expect((await app.admin('POST', `/accounts/${other.id}/cases/${c.id}/close`, {})).status).toBe(404);
  });

  it('reason {reason, subreason, by} → reasonSource person, reasonStatus set, reasonSetBy/At, case.classified with {id, name} objects', async () => {
    const acc = await app.createAccount();
    await pipeline(acc);
    const { case: c } = await customerWrites(acc, freshPhone());
    const by = { id: 'u-2', name: 'Marcos' };
    const res = await app.admin('POST', `/accounts/${acc.id}/cases/${c.id}/reason`, {
      reason: 'Consulta de precio',
      subreason: 'Mayorista',
      by,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      reason: 'Consulta de precio',
      reasonId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      subreason: 'Mayorista',
      subreasonId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      reasonSource: 'person',
      reasonStatus: 'set',
      reasonSetBy: by,
      reasonSetAt: app.clock.now().toISOString(),
      status: 'open',
    });
    const [ev] = await events(acc.id, 'case.classified');
    expect(ev!.data).toMatchObject({
      reason: { id: res.body.reasonId, name: 'Consulta de precio' },
      subreason: { id: res.body.subreasonId, name: 'Mayorista' },
      reasonSource: 'person',
    });
    expect((await app.admin('POST', `/accounts/${acc.id}/cases/${c.id}/reason`, {})).status).toBe(400);
  });
});

describe('the case-timeouts job (POST /admin/v1/jobs/{name}/run)', () => {
  it('"a case closes after inactivityHours without messages" → closeReason inactivity + case.closed; a recent one stays open', async () => {
    const acc = await app.createAccount();
    const p = await pipeline(acc, { ...SALES, inactivityHours: 2 });
    const quiet = await customerWrites(acc, freshPhone());
    app.clock.advance(HOUR);
    const talking = await customerWrites(acc, freshPhone());
    app.clock.advance(HOUR - 1);
    await runJob('case-timeouts');
    expect((await acc.call('GET', `/cases/${quiet.case.id}`)).body.status).toBe('open');
    app.clock.advance(1);
    // The job is global: `changed` counts the cases of every account the clock moved past.
    expect(await runJob('case-timeouts')).toBeGreaterThanOrEqual(1);
    const closed = (await acc.call('GET', `/cases/${quiet.case.id}`)).body;
    expect(closed).toMatchObject({ status: 'closed', closeReason: 'inactivity', closedAt: app.clock.now().toISOString(), closedBy: null });
    expect(closed.stage.stage.id).toBe(p.stages[0].id);
    expect((await acc.call('GET', `/cases/${talking.case.id}`)).body.status).toBe('open');
    const ev = await events(acc.id, 'case.closed');
    expect(ev.map((e) => [e.data.id, e.data.closeReason])).toEqual([[quiet.case.id, 'inactivity']]);
    // Running again changes nothing.
    expect(await runJob('case-timeouts')).toBe(0);
    expect(await events(acc.id, 'case.closed')).toHaveLength(1);
  });

  it('after an inactivity close, the customer writing again opens a new case', async () => {
    const acc = await app.createAccount();
    await pipeline(acc, { ...SALES, inactivityHours: 1 });
    const from = freshPhone();
    const first = await customerWrites(acc, from);
    app.clock.advance(HOUR);
    await runJob('case-timeouts');
    const second = await customerWrites(acc, from);
    expect(second.case.id).not.toBe(first.case.id);
    expect(second.case.status).toBe('open');
    expect(second.case.conversationId).toBe(first.case.conversationId);
  });

  it('a message after the inactivity deadline opens a new case even before the job ran (the old one closes for inactivity)', async () => {
    const acc = await app.createAccount();
    await pipeline(acc, { ...SALES, inactivityHours: 1 });
    const from = freshPhone();
    const first = await customerWrites(acc, from);
    app.clock.advance(2 * HOUR);
    const second = await customerWrites(acc, from);
    expect(second.case.id).not.toBe(first.case.id);
    expect((await acc.call('GET', `/cases/${first.case.id}`)).body).toMatchObject({ status: 'closed', closeReason: 'inactivity' });
  });

  it('"an open-stage case with no customer reply for staleDays moves to the lost stage (stale)"', async () => {
    const acc = await app.createAccount();
    const p = await pipeline(acc, { ...SALES, inactivityHours: 24 * 10, staleDays: 3 });
    const { case: c } = await customerWrites(acc, freshPhone());
    app.clock.advance(3 * DAY - 1);
    await runJob('case-timeouts');
    expect((await acc.call('GET', `/cases/${c.id}`)).body.status).toBe('open');
    app.clock.advance(1);
    expect(await runJob('case-timeouts')).toBeGreaterThanOrEqual(1);
    const stale = (await acc.call('GET', `/cases/${c.id}`)).body;
    expect(stale).toMatchObject({ status: 'closed', closeReason: 'stale', closedAt: app.clock.now().toISOString() });
    expect(stale.stage).toMatchObject({
      pipeline: { id: p.id },
      stage: { id: p.stages[3].id, kind: 'lost' },
      enteredAt: app.clock.now().toISOString(),
    });
    const kinds = (await events(acc.id)).map((e) => e.kind).filter((k) => k.startsWith('case.'));
    expect(kinds).toEqual(['case.opened', 'case.stage_changed', 'case.stage_changed', 'case.closed']);
  });

  it('a case closed for inactivity and still in an open stage turns to lost (stale) when staleDays pass', async () => {
    const acc = await app.createAccount();
    const p = await pipeline(acc, { ...SALES, inactivityHours: 24, staleDays: 2 });
    const { case: c } = await customerWrites(acc, freshPhone());
    app.clock.advance(DAY);
    await runJob('case-timeouts');
    expect((await acc.call('GET', `/cases/${c.id}`)).body).toMatchObject({ closeReason: 'inactivity', stage: { stage: { kind: 'open' } } });
    const closedAt = app.clock.now().toISOString();
    app.clock.advance(DAY);
    await runJob('case-timeouts');
    const stale = (await acc.call('GET', `/cases/${c.id}`)).body;
    expect(stale).toMatchObject({ status: 'closed', closeReason: 'stale', closedAt, stage: { stage: { id: p.stages[3].id } } });
    expect(await events(acc.id, 'case.closed')).toHaveLength(1);
  });

  it('cases in won stages, with an outcome, or in cases that got a reply are not stale', async () => {
    const acc = await app.createAccount();
    const p = await pipeline(acc, { ...SALES, inactivityHours: 24 * 30, staleDays: 1 });
    const won = await customerWrites(acc, freshPhone());
    await acc.call('POST', `/cases/${won.case.id}/stage`, { stageId: p.stages[2].id });
    const marked = await customerWrites(acc, freshPhone());
    await acc.call('POST', `/cases/${marked.case.id}/outcome`, { result: 'won' });
    const from = freshPhone();
    const replied = await customerWrites(acc, from);
    app.clock.advance(DAY - 1000);
    await customerWrites(acc, from, { text: 'sigo interesada' });
    app.clock.advance(1000);
    await runJob('case-timeouts');
    expect((await acc.call('GET', `/cases/${replied.case.id}`)).body).toMatchObject({ status: 'open', stage: { stage: { kind: 'open' } } });
    expect((await acc.call('GET', `/cases/${won.case.id}`)).body).toMatchObject({
      closeReason: 'stage',
      stage: { stage: { kind: 'won' } },
    });
    expect((await acc.call('GET', `/cases/${marked.case.id}`)).body).toMatchObject({ status: 'open', stage: { stage: { kind: 'open' } } });
  });

  it('unknown job → 404 job_not_found, whose text names every job (operator.md "Jobs")', async () => {
    const res = await app.admin('POST', '/jobs/nope/run');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), cause: null });
    for (const name of Object.keys(jobs)) expect(res.body.error).toContain(name);
    expect((await app.admin('POST', '/jobs/constructor/run')).status).toBe(404);
  });
});
