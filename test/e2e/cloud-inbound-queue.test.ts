// The WhatsApp Cloud API receiver acknowledges at once and processes from a durable queue (issue 18,
// docs/cloud.md "Inbound: acknowledged at once"). Processes started with `workers: false` run no
// inbound worker of their own: what a receipt queued waits until a test drains it through the real
// worker (POST /admin/v1/jobs/inbound/run) or a restarted process's worker finds it.
//
// A restart is a second process on the same data: on PostgreSQL a second app on the same database
// (startTestApp({ sameDataAs })), on embedded PGlite the same file data directory opened again (as
// test/e2e/automations-durability.test.ts does). A claim held by a process that died is written to
// the queue row as that process would have left it.
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { LEASE_MS } from '../../src/channel/inbound-queue.js';
import { loadConfig } from '../../src/config.js';
import { newId } from '../../src/lib/ids.js';
import { startRuntime } from '../../src/runtime.js';
import { cloudCredentials, startFakeGraph } from '../fakes/graph.js';
import { ADMIN_TOKEN, freshPhone, request, type StartOptions, startTestApp, type TestApp } from '../harness.js';
import { until } from '../poll.js';

const onPostgres = !!process.env.DATABASE_URL;
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
});

/** What the tests use of a process: its URL, the operator API, the database and the clock. */
type Proc = Pick<TestApp, 'url' | 'rt' | 'clock' | 'admin' | 'close'>;

/** A first process whose data outlives it: PostgreSQL (a fresh database), or PGlite in a file directory. */
async function firstProcess(opts: StartOptions = {}): Promise<TestApp> {
  if (onPostgres) {
    const app = await startTestApp(opts);
    cleanup.push(() => app.close());
    return app;
  }
  const dir = mkdtempSync(join(tmpdir(), 'chasqui-inbound-queue-'));
  cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
  const app = await startTestApp({ ...opts, env: { ...opts.env, DATABASE_URL: `file://${dir}/pg`, DATA_DIR: dir } });
  cleanup.push(() => app.close());
  return app;
}

/** The first process stops and a new one (with its workers) starts on the same data and clock. */
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
  return {
    url,
    rt,
    clock: first.clock,
    admin: (method, path, body) => request(`${url}/admin/v1${path}`, method, body, { authorization: `Bearer ${ADMIN_TOKEN}` }),
    close: () => rt.close(),
  };
}

interface CloudNumber {
  accountId: string;
  graphId: string;
  wabaId: string;
  phone: string;
  appSecret: string;
}

/** An account with a Cloud API number connected through the operator API (operator.md). */
async function cloudNumber(app: TestApp): Promise<CloudNumber> {
  const acc = await app.createAccount();
  const cloud = cloudCredentials();
  const phone = freshPhone({ spelling: 'digits' });
  const res = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone, name: 'WhatsApp', provider: 'cloud', cloud });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { accountId: acc.id, graphId: cloud.phoneNumberId, wabaId: cloud.wabaId, phone: res.body.phone, appSecret: cloud.appSecret };
}

let wamidSeq = 0;
const wamid = () => `wamid.HBgN${Date.now().toString(36)}${++wamidSeq}${randomBytes(6).toString('hex')}`;

/** One signed batch of text messages `[from, text]` to the number, in that order. */
function batch(p: Pick<Proc, 'clock'>, n: CloudNumber, msgs: [string, string][]) {
  const ts = String(Math.floor(p.clock.now().getTime() / 1000));
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: n.wabaId,
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: n.phone, phone_number_id: n.graphId },
              messages: msgs.map(([from, text]) => ({ from, id: wamid(), timestamp: ts, type: 'text', text: { body: text } })),
            },
          },
        ],
      },
    ],
  };
}

/** POSTs the batch as Meta does (the exact bytes, signed); the receiver answers before processing. */
function post(p: Pick<Proc, 'url'>, n: CloudNumber, payload: unknown) {
  const raw = JSON.stringify(payload);
  const signature = `sha256=${createHmac('sha256', n.appSecret).update(raw).digest('hex')}`;
  return request(`${p.url}/channels/whatsapp/webhook`, 'POST', raw, {
    'content-type': 'application/json',
    'x-hub-signature-256': signature,
  });
}

/** Processes every due batch through the real inbound worker of that process. */
async function drain(p: Pick<Proc, 'admin'>): Promise<number> {
  const r = await p.admin('POST', '/jobs/inbound/run');
  expect(r.status).toBe(200);
  return r.body.changed;
}

/** Texts of one customer's inbound messages, in the order they were stored. */
async function texts(p: Pick<Proc, 'rt'>, n: CloudNumber, from: string): Promise<string[]> {
  const rows = await p.rt.services.db
    .selectFrom('messages')
    .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
    .select('messages.text')
    .where('messages.account_id', '=', n.accountId)
    .where('contacts.phone', '=', from)
    .where('messages.direction', '=', 'inbound')
    .orderBy('messages.id')
    .execute();
  return rows.map((r) => String(r.text));
}

const queued = async (p: Pick<Proc, 'rt'>) =>
  (await p.rt.services.db.selectFrom('inbound_queue').select(['id', 'attempts', 'claim', 'run_at']).orderBy('id').execute()).map((r) => ({
    ...r,
    id: String(r.id),
  }));

const received = async (p: Pick<Proc, 'rt'>, n: CloudNumber) =>
  (
    await p.rt.services.db
      .selectFrom('events')
      .select('id')
      .where('account_id', '=', n.accountId)
      .where('kind', '=', 'message.received')
      .execute()
  ).length;

describe('"answer 200 at once, process from a durable queue" (docs/cloud.md "Inbound: acknowledged at once")', () => {
  it('the 200 comes before processing, the batch is committed with it, and a restarted process processes it', async () => {
    const app = await firstProcess({ workers: false });
    const n = await cloudNumber(app);
    const from = freshPhone({ spelling: 'digits' });
    const res = await post(app, n, batch(app, n, [[from, 'hola, ¿tienen stock?']]));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true });
    // Acknowledged, not processed: the batch is a row, the message is not stored yet.
    expect(await queued(app)).toHaveLength(1);
    expect(await texts(app, n, from)).toEqual([]);

    // The next process's own worker finds it (no job run): stored once, one message.received.
    const next = await restart(app);
    expect(
      await until(
        async () => {
          const t = await texts(next, n, from);
          return t.length > 0 && t;
        },
        { what: 'messages' },
      ),
    ).toEqual(['hola, ¿tienen stock?']);
    await until(async () => (await queued(next)).length === 0, { what: 'queue' });
    expect(await received(next, n)).toBe(1);
  });

  it('batches processed together (their numbers read once for all) each keep what their own receipt verified: a number re-pointed since its receipt is skipped, the other batch stored', async () => {
    const app = await firstProcess({ workers: false });
    const a = await cloudNumber(app);
    const b = await cloudNumber(app);
    const fromA = freshPhone({ spelling: 'digits' });
    const fromB = freshPhone({ spelling: 'digits' });
    expect((await post(app, a, batch(app, a, [[fromA, 'para A']]))).status).toBe(200);
    expect((await post(app, b, batch(app, b, [[fromB, 'para B']]))).status).toBe(200);
    // The operator points B's row at another Graph number before the worker runs.
    await app.rt.services.db
      .updateTable('phone_numbers')
      .set({ cloud_phone_number_id: `otro-${randomBytes(6).toString('hex')}` })
      .where('cloud_phone_number_id', '=', b.graphId)
      .execute();
    expect(await drain(app)).toBeGreaterThan(0);
    expect(await texts(app, a, fromA)).toEqual(['para A']);
    expect(await texts(app, b, fromB)).toEqual([]);
    expect(await received(app, b)).toBe(0);
    expect(await queued(app)).toEqual([]);
  });

  it('"a later batch of a customer never runs before an earlier one": a batch held by a dead claim holds back that customer only, until its lease lapses', async () => {
    const app = await firstProcess({ workers: false });
    const n = await cloudNumber(app);
    const [x, y] = [freshPhone({ spelling: 'digits' }), freshPhone({ spelling: 'digits' })];
    expect((await post(app, n, batch(app, n, [[x, 'x1']]))).status).toBe(200);
    expect((await post(app, n, batch(app, n, [[x, 'x2']]))).status).toBe(200);
    expect((await post(app, n, batch(app, n, [[y, 'y1']]))).status).toBe(200);
    const [first] = await queued(app);
    // The first batch was claimed by a process that died: its lease still runs.
    await sql`UPDATE inbound_queue SET claim = ${newId()}, attempts = 1, run_at = ${new Date(app.clock.ms() + LEASE_MS)}
              WHERE id = ${first!.id}`.execute(app.rt.services.db);

    await drain(app);
    // Y went on; X's second batch waits for the first.
    expect(await texts(app, n, y)).toEqual(['y1']);
    expect(await texts(app, n, x)).toEqual([]);
    expect((await queued(app)).map((q) => q.id)).toHaveLength(2);

    app.clock.advance(LEASE_MS + 1);
    await drain(app);
    expect(await texts(app, n, x)).toEqual(['x1', 'x2']);
    expect(await queued(app)).toEqual([]);
  });

  it('"one customer\'s messages keep receipt order across batches and workers": 40 batches of 4 customers drained by two workers at once', async () => {
    const app = await firstProcess({ workers: false });
    const other: Proc = onPostgres ? await startTestApp({ sameDataAs: app, clock: app.clock, workers: false }) : app;
    if (other !== app) cleanup.push(() => other.close());
    const n = await cloudNumber(app);
    const customers = Array.from({ length: 4 }, () => freshPhone({ spelling: 'digits' }));
    const sent = new Map<string, string[]>(customers.map((c) => [c, []]));
    for (let b = 0; b < 40; b++) {
      // Each batch: two customers, two messages each (payload order within a batch holds too).
      const msgs: [string, string][] = [];
      for (const c of [customers[b % 4]!, customers[(b + 1) % 4]!]) {
        for (const k of [0, 1]) {
          const text = `b${b}-${k}`;
          msgs.push([c, text]);
          sent.get(c)!.push(text);
        }
      }
      expect((await post(b % 2 === 0 ? app : other, n, batch(app, n, msgs))).status).toBe(200);
    }
    const [a, b] = await Promise.all([drain(app), drain(other)]);
    expect(a + b).toBeGreaterThanOrEqual(40);
    expect(await queued(app)).toEqual([]);
    for (const c of customers) expect(await texts(app, n, c)).toEqual(sent.get(c));
    expect(await received(app, n)).toBe(160);
  });

  it('Meta re-sending a batch (queued twice, and again after processing) stores each message once, with one message.received', async () => {
    const app = await firstProcess({ workers: false });
    const n = await cloudNumber(app);
    const from = freshPhone({ spelling: 'digits' });
    const payload = batch(app, n, [
      [from, 'uno'],
      [from, 'dos'],
    ]);
    expect((await post(app, n, payload)).status).toBe(200);
    expect((await post(app, n, payload)).status).toBe(200);
    expect(await queued(app)).toHaveLength(2);
    await drain(app);
    expect((await post(app, n, payload)).status).toBe(200);
    await drain(app);
    expect(await texts(app, n, from)).toEqual(['uno', 'dos']);
    expect(await received(app, n)).toBe(2);
    expect(await queued(app)).toEqual([]);
  });

  it('"an unexpected failure is tried again later, never lost, never spinning": the database refusing the inbound write puts the batch back with a back-off', async () => {
    const app = await firstProcess({ workers: false });
    const n = await cloudNumber(app);
    const from = freshPhone({ spelling: 'digits' });
    expect((await post(app, n, batch(app, n, [[from, 'hola']]))).status).toBe(200);
    const db = app.rt.services.db;
    // Not one of our refusals: the table the inbound path writes is not there for a while.
    await sql`ALTER TABLE conversations RENAME TO conversations_away`.execute(db);
    try {
      expect(await drain(app)).toBe(1);
      const [row] = await queued(app);
      expect(row).toMatchObject({ attempts: 1, claim: null });
      // The first delay of QUEUE_RETRY_SCHEDULE (the harness sets 1,1,1).
      expect(new Date(row!.run_at).getTime()).toBe(app.clock.ms() + 1000);
      // Not due again before its back-off: the next pass runs nothing.
      expect(await drain(app)).toBe(0);
    } finally {
      await sql`ALTER TABLE conversations_away RENAME TO conversations`.execute(db);
    }
    expect(await texts(app, n, from)).toEqual([]);
    app.clock.advance(1000);
    expect(await drain(app)).toBe(1);
    expect(await texts(app, n, from)).toEqual(['hola']);
    expect(await received(app, n)).toBe(1);
    expect(await queued(app)).toEqual([]);
  });
});

/** Inbound messages whose text is `text` fail in the database, as an unexpected bug of ours would (a real failure, not a mock). */
async function poison(p: Pick<Proc, 'rt'>, text: string): Promise<() => Promise<void>> {
  const db = p.rt.services.db;
  const fn = `poison_${randomBytes(4).toString('hex')}`;
  await sql
    .raw(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.text = '${text}' THEN RAISE EXCEPTION 'poisoned row'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER ${fn} BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION ${fn}();`)
    .execute(db);
  return async () => {
    await sql.raw(`DROP TRIGGER ${fn} ON messages; DROP FUNCTION ${fn}();`).execute(db);
  };
}

describe('dead letters (docs/operating.md "Dead letters": nothing held forever, nothing dropped in silence)', () => {
  it('"after the last try the item is dead … A dead inbound batch no longer holds back the later messages of its customers"; retry processes it once', async () => {
    const lines: string[] = [];
    const app = await firstProcess({
      workers: false,
      env: { LOG_LEVEL: 'info' },
      logDestination: { write: (l: string) => void lines.push(l) },
    });
    const n = await cloudNumber(app);
    const [ana, beto] = [freshPhone({ spelling: 'digits' }), freshPhone({ spelling: 'digits' })];
    const cure = await poison(app, 'VENENO 5491100000000');
    // Ana's first batch fails on every try; her next one and Beto's (same batch as hers) wait or go on.
    expect(
      (
        await post(
          app,
          n,
          batch(app, n, [
            [ana, 'VENENO 5491100000000'],
            [beto, 'hola'],
          ]),
        )
      ).status,
    ).toBe(200);
    expect((await post(app, n, batch(app, n, [[ana, 'sigo acá']]))).status).toBe(200);
    expect((await post(app, n, batch(app, n, [[beto, 'y yo']]))).status).toBe(200);
    expect(await drain(app)).toBe(1); // only the first: the others share its customers' keys
    expect(await texts(app, n, ana)).toEqual([]);
    // QUEUE_RETRY_SCHEDULE=1,1,1: three more tries, a second apart; the fourth failure parks it.
    for (let i = 0; i < 3; i++) {
      expect((await app.admin('GET', '/dead-letters')).body.data).toEqual([]);
      app.clock.advance(1000);
      expect(await drain(app)).toBeGreaterThanOrEqual(1);
    }
    const list = await app.admin('GET', '/dead-letters?queue=inbound');
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([
      {
        id: expect.any(String),
        queue: 'inbound',
        itemId: expect.any(String),
        accountId: n.accountId,
        firstFailedAt: expect.any(String),
        diedAt: app.clock.now().toISOString(),
        attempts: 4,
        lastError: expect.stringContaining('poisoned row'),
      },
    ]);
    // "last error text without personal data": the customer's phone and text are not in it.
    expect(JSON.stringify(list.body)).not.toMatch(/VENENO|5491100000000/);
    // "logged once at error level"
    const deaths = lines.map((l) => JSON.parse(l)).filter((l) => l.msg?.startsWith('dead letter'));
    expect(deaths).toEqual([expect.objectContaining({ level: 50, queue: 'inbound', attempts: 4 })]);
    // Its customers' later batches went on. Each message of a batch commits on its own, so Beto's
    // message in the dead batch was stored by its first try; only Ana's failed each time.
    expect(await texts(app, n, ana)).toEqual(['sigo acá']);
    expect(await texts(app, n, beto)).toEqual(['hola', 'y yo']);
    expect(await queued(app)).toHaveLength(1);
    expect(await drain(app)).toBe(0);

    // The operator fixes the cause and puts it back: processed once, by the same dedupe.
    await cure();
    const dead = list.body.data[0];
    const retried = await app.admin('POST', `/dead-letters/${dead.id}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id: dead.id, queue: 'inbound', retriedAt: app.clock.now().toISOString() });
    expect(await drain(app)).toBe(1);
    expect(await texts(app, n, ana)).toEqual(['sigo acá', 'VENENO 5491100000000']);
    // Beto's, already stored, is not stored twice (wamid dedupe): four messages, four message.received.
    expect(await texts(app, n, beto)).toEqual(['hola', 'y yo']);
    expect(await received(app, n)).toBe(4);
    expect(await queued(app)).toEqual([]);
    expect((await app.admin('GET', '/dead-letters')).body.data).toEqual([]);
    // A second retry of the same id: it is gone (404 in Spanish).
    const again = await app.admin('POST', `/dead-letters/${dead.id}/retry`);
    expect(again.status).toBe(404);
    expect(again.body.error).toMatch(/No existe ese mensaje muerto/);
  });

  it('DELETE discards a dead batch (logged): nothing of it is processed, the queue is empty', async () => {
    const app = await firstProcess({ workers: false });
    const n = await cloudNumber(app);
    const ana = freshPhone({ spelling: 'digits' });
    const cure = await poison(app, 'veneno');
    expect((await post(app, n, batch(app, n, [[ana, 'veneno']]))).status).toBe(200);
    for (let i = 0; i < 4; i++) {
      await drain(app);
      app.clock.advance(1000);
    }
    const [dead] = (await app.admin('GET', '/dead-letters?queue=inbound')).body.data;
    expect(dead).toMatchObject({ queue: 'inbound', attempts: 4 });
    expect((await app.admin('DELETE', `/dead-letters/${dead.id}`)).status).toBe(204);
    await cure();
    expect(await queued(app)).toEqual([]);
    expect(await drain(app)).toBe(0);
    expect(await texts(app, n, ana)).toEqual([]);
    expect((await app.admin('DELETE', `/dead-letters/${dead.id}`)).status).toBe(404);
    // Bad input is a clear 4xx: a queue that does not exist, an id that is not one.
    expect((await app.admin('GET', '/dead-letters?queue=nope')).status).toBe(400);
    expect((await app.admin('POST', '/dead-letters/nope/retry')).status).toBe(404);
  });

  it('"a claim that lapses counts": a batch whose process dies holding it every time is parked after the schedule, not tried once more', async () => {
    const app = await firstProcess({ workers: false });
    const n = await cloudNumber(app);
    const ana = freshPhone({ spelling: 'digits' });
    expect((await post(app, n, batch(app, n, [[ana, 'hola']]))).status).toBe(200);
    // Four processes each claimed it and died holding it (the claim as a worker writes it).
    await sql`UPDATE inbound_queue SET attempts = 4, claim = ${newId()}, run_at = ${new Date(app.clock.ms() + LEASE_MS)}`.execute(
      app.rt.services.db,
    );
    app.clock.advance(LEASE_MS);
    expect(await drain(app)).toBe(1);
    expect(await texts(app, n, ana)).toEqual([]);
    const [dead] = (await app.admin('GET', '/dead-letters?queue=inbound')).body.data;
    expect(dead).toMatchObject({ attempts: 4, lastError: expect.stringMatching(/^interrupted/) });
    // Retried, it runs (the cause was the dying process, not the batch).
    expect((await app.admin('POST', `/dead-letters/${dead.id}/retry`)).status).toBe(200);
    expect(await drain(app)).toBe(1);
    expect(await texts(app, n, ana)).toEqual(['hola']);
  });

  it('"the out-of-range status code is a 200 with the item skipped and logged, not a retry loop"', async () => {
    const app = await firstProcess({ workers: false });
    const n = await cloudNumber(app);
    const ana = freshPhone({ spelling: 'digits' });
    const payload = batch(app, n, [[ana, 'hola']]);
    const value = payload.entry[0]!.changes[0]!.value as Record<string, unknown>;
    value.statuses = [
      { id: 'wamid.unknown1', status: 'failed', timestamp: '1700000000', recipient_id: ana, errors: [{ code: 99999999999 }] },
      { id: 'wamid.unknown2', status: 'failed', timestamp: '1700000000', recipient_id: ana, errors: [{ code: '4294967296' }] },
    ];
    expect((await post(app, n, payload)).status).toBe(200);
    expect(await drain(app)).toBe(1);
    expect(await texts(app, n, ana)).toEqual(['hola']);
    expect(await queued(app)).toEqual([]);
    expect((await app.admin('GET', '/dead-letters')).body.data).toEqual([]);
  });
});

describe('"set-wise inbound processing" (issue 30, docs/architecture.md "Inbound, set-wise")', () => {
  it('a batch mixing known and new customers, a customer writing twice, a re-sent wamid, one already stored and a status: each message stored once and in order, each event once', async () => {
    const fake = await startFakeGraph();
    cleanup.push(() => fake.close());
    const app = await firstProcess({ workers: false, env: { GRAPH_API_URL: fake.url } });
    const n = await cloudNumber(app);
    const db = app.rt.services.db;
    const numberId = (
      await db.selectFrom('phone_numbers').select('id').where('cloud_phone_number_id', '=', n.graphId).executeTakeFirstOrThrow()
    ).id;
    const key = (await app.admin('POST', `/accounts/${n.accountId}/keys`, { name: 'mixed' })).body.key as string;
    const [known, ana, beto] = [freshPhone({ spelling: 'digits' }), freshPhone({ spelling: 'digits' }), freshPhone({ spelling: 'digits' })];

    // The known customer wrote before (a batch of one) and got an answer through the Cloud API.
    const first = batch(app, n, [[known, 'hola']]);
    expect((await post(app, n, first)).status).toBe(200);
    expect(await drain(app)).toBe(1);
    const sent = await request(
      `${app.url}/api/v1/messages`,
      'POST',
      { to: known, text: '¡Hola! ¿En qué te ayudo?', phoneNumberId: numberId },
      {
        authorization: `Bearer ${key}`,
      },
    );
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    const sentWamid = (await db.selectFrom('messages').select('wamid').where('id', '=', sent.body.id).executeTakeFirstOrThrow()).wamid!;

    // One batch: the known customer again, Ana twice (in order), Beto, Ana's first message re-sent
    // by Meta in the same batch, the known customer's first message re-sent, and the answer delivered.
    const mixed = batch(app, n, [
      [known, 'sigo acá'],
      [ana, 'a1'],
      [beto, 'b1'],
      [ana, 'a2'],
    ]);
    const value = mixed.entry[0]!.changes[0]!.value as Record<string, any>;
    const msgs = value.messages as { id: string }[];
    msgs.push({ ...msgs[1]! }, { ...(first.entry[0]!.changes[0]!.value.messages[0] as { id: string }) });
    value.statuses = [{ id: sentWamid, status: 'delivered', timestamp: String(Math.floor(app.clock.ms() / 1000)), recipient_id: known }];
    expect((await post(app, n, mixed)).status).toBe(200);
    expect(await drain(app)).toBe(1);

    expect(await texts(app, n, known)).toEqual(['hola', 'sigo acá']);
    expect(await texts(app, n, ana)).toEqual(['a1', 'a2']);
    expect(await texts(app, n, beto)).toEqual(['b1']);
    const events = await app.events(n.accountId);
    const created = events.filter((e) => e.kind === 'contact.created').map((e) => e.data.contact.phone);
    expect(created.sort()).toEqual([known, ana, beto].sort());
    const receivedTexts = events.filter((e) => e.kind === 'message.received').map((e) => e.data.text);
    expect(receivedTexts).toEqual(['hola', 'sigo acá', 'a1', 'b1', 'a2']);
    // Each new customer's events in their order: contact.created → message.received (each message) → case.opened.
    for (const [phone, expected] of [
      [ana, ['contact.created', 'message.received', 'case.opened', 'message.received']],
      [beto, ['contact.created', 'message.received', 'case.opened']],
    ] as const) {
      const contactId = events.find((e) => e.kind === 'contact.created' && e.data.contact.phone === phone)!.data.contact.id;
      const kinds = events
        .filter((e) => e.data.contact?.id === contactId || e.data.contactId === contactId)
        .map((e) => e.kind)
        .filter((k) => k !== 'case.stage_changed');
      expect(kinds).toEqual(expected);
    }
    const delivered = events.filter((e) => e.kind === 'message.status');
    expect(delivered.map((e) => [e.data.id, e.data.status])).toEqual([[sent.body.id, 'delivered']]);
    // One case per conversation: the known customer's and Ana's count both their messages.
    const cases = await db
      .selectFrom('cases')
      .innerJoin('contacts', 'contacts.id', 'cases.contact_id')
      .select(['contacts.phone', 'cases.inbound_count', 'cases.status'])
      .where('cases.account_id', '=', n.accountId)
      .execute();
    expect(Object.fromEntries(cases.map((c) => [c.phone, [c.inbound_count, c.status]]))).toEqual({
      [known]: [2, 'open'],
      [ana]: [2, 'open'],
      [beto]: [1, 'open'],
    });
    expect(events.filter((e) => e.kind === 'case.opened')).toHaveLength(3);
    expect(await queued(app)).toEqual([]);
  });
});
