// Automations (issue 14): a keyword flow's first reply under 100 new conversations/s, and the
// steps/s of a long flow with no sends. BENCH_AUTOMATION_RATE / _LOW_RATE set the two rates (0 skips
// one), BENCH_AUTOMATION_RUNS=0 skips the long flow.
import pg from 'pg';
import {
  admin,
  BASE_URL,
  benchAccount,
  call,
  cpuMs,
  must,
  nextPhone,
  postgresCpuMs,
  quantile,
  type Server,
  sleep,
  UNLIMITED,
} from '../lib.js';
import { record } from '../report.js';

const RATE = Number(process.env.BENCH_AUTOMATION_RATE ?? 100);
const LOW_RATE = Number(process.env.BENCH_AUTOMATION_LOW_RATE ?? 30);
const SECONDS = Number(process.env.BENCH_AUTOMATION_SECONDS ?? 10);
/** Executions of the long flow run at once (0: the long flow's figure is skipped), and steps in it. */
const LONG_RUNS = Number(process.env.BENCH_AUTOMATION_RUNS ?? 20);
const LONG_STEPS = 150;

/**
 * Keyword inbound → first reply sent, p99, at RATE new conversations/s for SECONDS. Open loop: one
 * POST /admin/v1/sandbox/inbound every 1000/RATE ms from a new phone, whatever the answers do.
 * Measured per conversation from the moment the bench sends the inbound request (its wall clock,
 * taken just before the request) to the reply's `sent_at` in the database (the server's wall clock
 * when the sandbox provider accepted it; same machine, same clock). So it includes the inbound
 * request itself, the trigger, the runner's claim, the send and the provider call.
 */
async function keywordFigure(server: Server, db: pg.Client, rate: number, goal: boolean) {
  const acc = await benchAccount(server.url, UNLIMITED, `bench-automations-keyword-${rate}`);
  await must(
    admin(server.url, 'POST', `/accounts/${acc.id}/automations`, {
      name: 'Bienvenida',
      status: 'active',
      // 100/s for 10 s is 1,000 starts in a minute: past the default 600 (automations.md), the
      // rest would be skipped, not slow.
      startsPerMinute: 100_000,
      trigger: { type: 'keyword', keywords: ['hola'], match: 'contains' },
      steps: [
        { id: 'saludo', type: 'send', text: '¡Hola! Ya te respondemos.' },
        { id: 'fin', type: 'end' },
      ],
    }),
    201,
    'create keyword flow',
  );
  // Warm-up: a few conversations, not counted.
  for (let i = 0; i < 20; i++) await admin(server.url, 'POST', '/sandbox/inbound', { accountId: acc.id, from: nextPhone(8), text: 'Hola' });
  await sleep(500);
  const sentAt = new Map<string, number>(); // conversationId → when the bench sent the inbound (epoch ms)
  const inboundMs: number[] = [];
  let failures = 0;
  const total = rate * SECONDS;
  const interval = 1000 / rate;
  const cpu0 = cpuMs(server.proc.pid);
  const pgCpu0 = postgresCpuMs();
  const sampler = lockSampler(server.env.DATABASE_URL!);
  const t0 = performance.now();
  const startWall = Date.now();
  const inflight: Promise<void>[] = [];
  let lagMax = 0;
  for (let i = 0; i < total; i++) {
    const due = t0 + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    lagMax = Math.max(lagMax, performance.now() - due);
    const from = nextPhone(5);
    inflight.push(
      (async () => {
        const at = Date.now();
        const p0 = performance.now();
        const r = await admin(server.url, 'POST', '/sandbox/inbound', { accountId: acc.id, from, text: 'Hola, ¿tienen envío?' });
        inboundMs.push(performance.now() - p0);
        if (r.status === 201) sentAt.set(r.body.conversationId, at);
        else failures++;
      })(),
    );
  }
  const offeredSeconds = (Date.now() - startWall) / 1000;
  await Promise.all(inflight);
  // Every reply sent (or 30 s).
  const ids = [...sentAt.keys()];
  const deadline = Date.now() + 30_000;
  let rows: { conversation_id: string; sent: Date | null; created: Date }[] = [];
  for (;;) {
    const r = await db.query(
      `SELECT conversation_id, min(sent_at) AS sent, min(created_at) AS created FROM messages
       WHERE direction = 'outbound' AND conversation_id = ANY($1::uuid[]) GROUP BY conversation_id`,
      [ids],
    );
    rows = r.rows;
    if ((rows.length === ids.length && rows.every((x) => x.sent)) || Date.now() > deadline) break;
    await sleep(250);
  }
  const cpuPerConversation = (cpuMs(server.proc.pid) - cpu0) / total;
  const pgCpuPerConversation = (postgresCpuMs() - pgCpu0) / total;
  const waits = await sampler.stop();
  const latencies: number[] = [];
  const toCreated: number[] = [];
  for (const x of rows) {
    const at = sentAt.get(x.conversation_id)!;
    if (x.sent) latencies.push(x.sent.getTime() - at);
    toCreated.push(x.created.getTime() - at);
  }
  const missing = ids.length - latencies.length;
  const p99 = quantile(latencies, 0.99);
  record({
    figure: `keyword inbound → first reply sent at ${rate} new conv/s`,
    value: p99,
    unit: 'ms p99',
    floor: '-',
    floorValue: null,
    ratio: null,
    goal: goal ? '≤ 100' : 'report',
    pass: goal ? missing === 0 && failures === 0 && p99 <= 100 : null,
    note:
      `p50 ${quantile(latencies, 0.5).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms; reply stored (created_at) p99 ${quantile(toCreated, 0.99).toFixed(0)} ms; ` +
      `inbound answered p99 ${quantile(inboundMs, 0.99).toFixed(0)} ms; ${latencies.length} replies, ${missing} missing, ${failures} inbound refused; ` +
      `${(total / offeredSeconds).toFixed(0)} conv/s offered (scheduler lag max ${lagMax.toFixed(0)} ms); ` +
      `CPU per conversation: server ${cpuPerConversation.toFixed(1)} ms, PostgreSQL ${pgCpuPerConversation.toFixed(1)} ms; ${waits}`,
  });
}

/** A flow of LONG_STEPS steps: condition and set_attribute alternating, then end (no sends). */
function longFlow() {
  const steps: Record<string, unknown>[] = [];
  for (let i = 0; i < LONG_STEPS - 1; i++) {
    steps.push(
      i % 2 === 0
        ? { id: `c${i}`, type: 'condition', if: { var: 'origen', op: 'equals', value: 'bench' } }
        : { id: `a${i}`, type: 'set_attribute', attribute: 'paso', value: String(i) },
    );
  }
  steps.push({ id: 'fin', type: 'end' });
  return steps;
}

/**
 * Steps/s of LONG_RUNS executions of a LONG_STEPS-step flow started at once through the public
 * API, from the first execution's start to the last one's end (database timestamps). Floor: the
 * single-row transactions/s this database commits at the same concurrency (BEGIN; UPDATE one row
 * by key; COMMIT, each client its own row), because every step is at least one committed
 * transaction: the ratio says how close the engine gets to "one commit per step".
 */
async function longFlowFigure(server: Server, db: pg.Client) {
  const one = await longRuns(server, db, 1);
  // The same runs, each in its own account: what the account's one monthly counter row costs.
  const many = await longRuns(server, db, LONG_RUNS);
  const floor = await commitsPerSecond(server.env.DATABASE_URL!, Math.min(LONG_RUNS, 20), 5);
  record({
    figure: `steps/s, ${LONG_RUNS} runs of a ${LONG_STEPS}-step flow (no sends)`,
    value: one.stepsPerSecond,
    unit: 'step/s',
    floor: `1-row commits/s, ${Math.min(LONG_RUNS, 20)} clients`,
    floorValue: floor,
    ratio: one.stepsPerSecond / floor,
    goal: 'report',
    pass: null,
    note:
      `one account: ${one.steps} steps in ${one.seconds.toFixed(1)} s, ${one.notCompleted} not completed, ${one.waits}; ` +
      `the same runs in ${LONG_RUNS} accounts: ${Math.round(many.stepsPerSecond)} step/s (ratio ${(many.stepsPerSecond / floor).toFixed(2)}), ${many.notCompleted} not completed, ${many.waits}`,
  });
}

/** LONG_RUNS executions of the long flow started at once, in `accounts` accounts (spread evenly). */
async function longRuns(server: Server, db: pg.Client, accounts: number) {
  const flows: { id: string; key: string }[] = [];
  for (let i = 0; i < accounts; i++) {
    const acc = await benchAccount(server.url, UNLIMITED, `bench-automations-long-${accounts}-${i}`);
    const a = await must(
      admin(server.url, 'POST', `/accounts/${acc.id}/automations`, {
        name: 'Larga',
        status: 'active',
        trigger: { type: 'api' },
        steps: longFlow(),
      }),
      201,
      'create long flow',
    );
    flows.push({ id: a.id, key: acc.key });
  }
  const ids = flows.map((f) => f.id);
  const start = (f: { id: string; key: string }) =>
    call(
      server.url,
      'POST',
      `/api/v1/automations/${f.id}/executions`,
      { to: nextPhone(7), variables: { origen: 'bench' } },
      { authorization: `Bearer ${f.key}` },
    );
  // Warm-up: two executions, not counted.
  await Promise.all([start(flows[0]!), start(flows[flows.length - 1]!)]);
  await waitEnded(db, ids, 60_000);
  const before = new Set(
    (await db.query('SELECT id FROM automation_executions WHERE automation_id = ANY($1::uuid[])', [ids])).rows.map((r) => r.id),
  );
  const sampler = lockSampler(server.env.DATABASE_URL!);
  const started = await Promise.all(Array.from({ length: LONG_RUNS }, (_, i) => start(flows[i % flows.length]!)));
  const refused = started.filter((r) => r.status !== 201).length;
  if (refused) console.log(`  ! long flow: ${refused} starts refused`);
  await waitEnded(db, ids, 300_000);
  const waits = await sampler.stop();
  const r = await db.query(
    `SELECT e.id, e.status, e.started_at, e.ended_at, (SELECT count(*)::int FROM automation_steps s WHERE s.execution_id = e.id) AS steps
     FROM automation_executions e WHERE automation_id = ANY($1::uuid[])`,
    [ids],
  );
  const runs = r.rows.filter((x) => !before.has(x.id));
  const steps = runs.reduce((t, x) => t + x.steps, 0);
  const t0 = Math.min(...runs.map((x) => x.started_at.getTime()));
  const t1 = Math.max(...runs.map((x) => (x.ended_at ?? new Date()).getTime()));
  const seconds = (t1 - t0) / 1000;
  return { steps, seconds, stepsPerSecond: steps / seconds, notCompleted: runs.filter((x) => x.status !== 'completed').length, waits };
}

/**
 * Samples pg_stat_activity of the database every 50 ms (its own connection): how many server
 * connections were, on average, waiting for a lock, and for which statement most often.
 */
function lockSampler(url: string) {
  const datname = new URL(url).pathname.slice(1);
  const c = new pg.Client({ connectionString: url });
  let stop = false;
  let samples = 0;
  let waiting = 0;
  let busy = 0;
  const byQuery = new Map<string, number>();
  const run = (async () => {
    await c.connect();
    while (!stop) {
      const r = await c.query(
        `SELECT state, wait_event_type, left(regexp_replace(query, '\\s+', ' ', 'g'), 40) AS q FROM pg_stat_activity
         WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
        [datname],
      );
      samples++;
      for (const x of r.rows) {
        if (x.state !== 'idle') busy++;
        if (x.wait_event_type === 'Lock') {
          waiting++;
          byQuery.set(x.q, (byQuery.get(x.q) ?? 0) + 1);
        }
      }
      await sleep(50);
    }
    await c.end();
  })();
  return {
    async stop(): Promise<string> {
      stop = true;
      await run;
      const top = [...byQuery.entries()].sort((a, b) => b[1] - a[1])[0];
      return `connections waiting on a lock ${(waiting / Math.max(1, samples)).toFixed(1)} on average of ${(busy / Math.max(1, samples)).toFixed(1)} not idle${top ? ` (mostly "${top[0].trim()}…")` : ''}`;
    },
  };
}

async function waitEnded(db: pg.Client, automationIds: string[], maxMs: number) {
  const until = Date.now() + maxMs;
  while (Date.now() < until) {
    const r = await db.query(
      `SELECT count(*)::int AS n FROM automation_executions WHERE automation_id = ANY($1::uuid[]) AND status = 'running'`,
      [automationIds],
    );
    if (r.rows[0].n === 0) return;
    await sleep(100);
  }
}

/** Single-row transactions/s (BEGIN; UPDATE one row; COMMIT) with `clients` connections, each its own row. */
async function commitsPerSecond(url: string, clients: number, seconds: number): Promise<number> {
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  await setup.query('CREATE TABLE IF NOT EXISTS bench_commit_floor (id int PRIMARY KEY, n bigint NOT NULL, at timestamptz)');
  await setup.query('INSERT INTO bench_commit_floor SELECT g, 0, now() FROM generate_series(1, $1::int) g ON CONFLICT DO NOTHING', [
    clients,
  ]);
  let done = 0;
  const end = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      while (Date.now() < end) {
        await c.query('BEGIN');
        await c.query('UPDATE bench_commit_floor SET n = n + 1, at = now() WHERE id = $1', [i + 1]);
        await c.query('COMMIT');
        done++;
      }
      await c.end();
    }),
  );
  await setup.query('DROP TABLE bench_commit_floor');
  await setup.end();
  return done / seconds;
}

export async function automationFigures(server: Server) {
  if (!BASE_URL || !server.env.DATABASE_URL) {
    record({
      figure: 'automations (keyword first reply, steps/s)',
      value: Number.NaN,
      unit: '',
      floor: '-',
      floorValue: null,
      ratio: null,
      goal: 'report',
      pass: null,
      note: 'PostgreSQL only: set DATABASE_URL',
    });
    return;
  }
  const db = new pg.Client({ connectionString: server.env.DATABASE_URL });
  await db.connect();
  try {
    if (RATE > 0) await keywordFigure(server, db, RATE, true);
    // The same at a rate this machine sustains, to show the latency when it is not saturated.
    if (LOW_RATE > 0) await keywordFigure(server, db, LOW_RATE, false);
    if (LONG_RUNS > 0) await longFlowFigure(server, db);
  } finally {
    await db.end();
  }
}
