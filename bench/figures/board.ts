// The console's Casos board with a pipeline of 10,000 open cases (issue 27 item 1; goal: its first
// column's first cards visible ≤ 1 s after the navigation). The board is paged by column
// (docs/console-app.md "Casos": each stage's `GET …/pipelines/{id}/cases?stage=…&limit=50`), so
// what it shows first does not grow with the pipeline. Seeded set-wise by SQL: on PostgreSQL
// straight into the server's database, on PGlite with the server stopped (the database is a
// directory one process opens at a time). Timed in chromium (Debian's, through playwright-core);
// without it the figure is NaN with a note. `BENCH_ONLY=board`.
import { existsSync } from 'node:fs';
import type { Browser, BrowserContext } from 'playwright-core';
import { admin, benchAccount, must, quantile, type Server, serverEnv, startServer, UNLIMITED } from '../lib.js';
import { fmt, record } from '../report.js';

const CASES = Number(process.env.BENCH_BOARD_CASES ?? 10_000);
/** Measured navigations (one more before them, not counted: the first load of the bundle). */
const RUNS = Number(process.env.BENCH_BOARD_RUNS ?? 7);
const GOAL_MS = 1_000;
const CHROMIUM = '/usr/bin/chromium';
const FIGURE = `Casos board, ${fmt(CASES)} open cases: first column's cards`;
/** The open stages share the cases 5:3:2; the won and lost stages start empty (their columns walk the pipeline index). */
const STAGES = [
  { name: 'Nuevo', kind: 'open' },
  { name: 'Contactado', kind: 'open' },
  { name: 'Presupuesto', kind: 'open' },
  { name: 'Ganado', kind: 'won' },
  { name: 'Perdido', kind: 'lost' },
];
/** The floor's board: the same pipeline with a page of cases in its first column. */
const SMALL = 100;

/**
 * Contacts, their conversations (one inbound message each) and one open case per conversation,
 * opened over the last 30 days: the statements both databases run.
 */
function seedSql(a: { id: string; phoneNumberId: string; pipelineId: string; stageIds: string[] }, cases: number, prefix: number): string {
  const { id: accountId, phoneNumberId, pipelineId } = a;
  const [s1, s2, s3] = a.stageIds;
  return `
    WITH ct AS (
      INSERT INTO contacts (id, account_id, phone, name, attributes, created_at, updated_at)
      SELECT gen_random_uuid(), '${accountId}', '549116${prefix}' || lpad(g::text, 6, '0'), 'Cliente ' || g, '{}'::jsonb, now(), now()
      FROM generate_series(1, ${cases}) g
      RETURNING id),
    cv AS (
      INSERT INTO conversations (id, account_id, contact_id, channel, phone_number_id, last_inbound_at, created_at)
      SELECT gen_random_uuid(), '${accountId}', ct.id, 'whatsapp', '${phoneNumberId}', now(), now() FROM ct
      RETURNING id, contact_id),
    ms AS (
      INSERT INTO messages (id, account_id, conversation_id, contact_id, phone_number_id, direction, type, text, status, source,
                            provider_timestamp, created_at, updated_at)
      SELECT gen_random_uuid(), '${accountId}', cv.id, cv.contact_id, '${phoneNumberId}', 'inbound', 'text', 'Hola, ¿tienen stock?',
             'received', 'inbound', now(), now(), now() FROM cv
      RETURNING id),
    numbered AS (SELECT cv.*, row_number() OVER () AS n FROM cv)
    INSERT INTO cases (id, account_id, conversation_id, contact_id, pipeline_id, stage_id, stage_entered_at, status, opened_at,
                       last_inbound_at, reason_status, handled_by, inactivity_hours, inbound_count, created_at, updated_at)
    SELECT gen_random_uuid(), '${accountId}', n.id, n.contact_id, '${pipelineId}',
           CASE WHEN n.n % 10 < 5 THEN '${s1}'::uuid WHEN n.n % 10 < 8 THEN '${s2}'::uuid ELSE '${s3}'::uuid END,
           now(), 'open', now() - random() * interval '30 days', now(), 'pending', 'none', 24, 1, now(), now()
    FROM numbered n`;
}

/** Runs the seeds in the server's database; on PGlite the server is stopped meanwhile and started again. */
async function seed(server: Server, sqls: string[]): Promise<Server> {
  if (server.env.DATABASE_URL) {
    const { default: pgmod } = await import('pg');
    const client = new pgmod.Client({ connectionString: server.env.DATABASE_URL });
    await client.connect();
    try {
      for (const sql of sqls) await client.query(sql);
      // What autovacuum does after a bulk load: statistics and the visibility map.
      await client.query('VACUUM ANALYZE');
    } finally {
      await client.end();
    }
    return server;
  }
  await server.stop();
  const { PGlite } = await import('@electric-sql/pglite');
  const db = await PGlite.create({ dataDir: `${server.env.DATA_DIR}/pglite` });
  try {
    for (const sql of sqls) await db.exec(sql);
    await db.exec('VACUUM ANALYZE');
  } finally {
    await db.close();
  }
  return startServer(server.env, { port: server.port });
}

/** ms of `n` GETs of one column's first page (what the board asks for each stage), one after another. */
async function columnTimes(server: Server, accountId: string, pipelineId: string, stageId: string, n: number): Promise<number[]> {
  const path = `/accounts/${accountId}/pipelines/${pipelineId}/cases?stage=${stageId}&status=all&limit=50`;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await must(admin(server.url, 'GET', path), 200, 'board column');
    out.push(performance.now() - t0);
  }
  return out;
}

/** A browser context with a member of the account logged in through the login page. */
async function loggedIn(browser: Browser, url: string, member: { email: string; password: string }): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const login = await context.newPage();
  await login.goto(`${url}/console/login`);
  await login.getByLabel('Email', { exact: true }).fill(member.email);
  await login.getByLabel('Contraseña', { exact: true }).fill(member.password);
  await login.getByRole('button', { name: 'Ingresar' }).click();
  await login.waitForURL(`${url}/console/conversaciones`);
  await login.close();
  return context;
}

/**
 * From `page.goto(/console/casos)` (the bundle cached after the first run) to the first card of
 * the first stage's list visible, as the bench sees it (playwright's own round trips included);
 * a new tab each time. Returns the time and the cards the column shows.
 */
async function navigation(context: BrowserContext, url: string): Promise<{ ms: number; cards: number }> {
  const page = await context.newPage();
  try {
    const t0 = performance.now();
    if (process.env.BENCH_BOARD_TRACE) {
      page.on('request', (q) => console.log(`  ${(performance.now() - t0).toFixed(0)} ms → ${q.method()} ${q.url().slice(22, 100)}`));
      page.on('requestfinished', (q) => console.log(`  ${(performance.now() - t0).toFixed(0)} ms ← ${q.url().slice(22, 100)}`));
    }
    await page.goto(`${url}/console/casos`, { waitUntil: 'commit' });
    const column = page.getByRole('list', { name: STAGES[0]!.name, exact: true });
    await column.getByRole('listitem').first().waitFor({ state: 'visible', timeout: 30_000 });
    const ms = performance.now() - t0;
    return { ms, cards: await column.getByRole('listitem').count() };
  } finally {
    await page.close();
  }
}

/**
 * The big board and the small one (the floor) in turns, ABBA, RUNS each after one uncounted
 * navigation of each: the machine's drift falls on both.
 */
async function timeBoards(url: string, big: Member, small: Member) {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    // No background connections, no first-run work (test/console.ts).
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    const a = await loggedIn(browser, url, big);
    const b = await loggedIn(browser, url, small);
    const firstBig = await navigation(a, url);
    await navigation(b, url);
    const times = { big: [] as number[], small: [] as number[] };
    let cards = 0;
    for (let i = 0; i < RUNS; i++) {
      const order = i % 2 ? (['small', 'big'] as const) : (['big', 'small'] as const);
      for (const which of order) {
        const r = await navigation(which === 'big' ? a : b, url);
        times[which].push(r.ms);
        if (which === 'big') cards = r.cards;
      }
    }
    return { ...times, firstBig: firstBig.ms, cards };
  } finally {
    await browser.close();
  }
}

interface Member {
  email: string;
  password: string;
}

/** An account with a member and a default pipeline of STAGES; returns what the seed and the browser need. */
async function boardAccount(server: Server, tag: string) {
  const acc = await benchAccount(server.url, UNLIMITED, `bench-board-${tag}`);
  const member = { email: `tablero-${tag}@bench.example`, password: `bench-password-${tag}-0123`, name: 'Tablero', role: 'agent' };
  await must(admin(server.url, 'POST', `/accounts/${acc.id}/members`, member), 201, 'create member');
  const p = await must(
    admin(server.url, 'POST', `/accounts/${acc.id}/pipelines`, { name: 'Ventas', stages: STAGES, default: true }),
    201,
    'pipeline',
  );
  return { ...acc, member, pipelineId: p.id as string, stageIds: (p.stages as { id: string }[]).map((st) => st.id) };
}

export async function boardFigure(): Promise<void> {
  const { env, db } = await serverEnv('benchboard');
  let server = await startServer(env);
  try {
    const big = await boardAccount(server, 'grande');
    const small = await boardAccount(server, 'chico');
    const t0 = performance.now();
    server = await seed(server, [seedSql(big, CASES, 0), seedSql(small, SMALL, 1)]);
    const seedS = (performance.now() - t0) / 1000;
    // The column requests alone (operator token): the first stage's, and the empty won stage's
    // (it walks the pipeline's index to find nothing).
    const firstCol = await columnTimes(server, big.id, big.pipelineId, big.stageIds[0]!, 20);
    const emptyCol = await columnTimes(server, big.id, big.pipelineId, big.stageIds[3]!, 20);
    const api = `the first column's GET alone p50 ${fmt(quantile(firstCol, 0.5))} ms, an empty column's ${fmt(quantile(emptyCol, 0.5))} ms; seeded in ${fmt(seedS)} s`;
    if (!existsSync(CHROMIUM)) {
      record({
        figure: FIGURE,
        value: Number.NaN,
        unit: 'ms p50',
        floor: '-',
        floorValue: null,
        ratio: null,
        goal: `≤ ${fmt(GOAL_MS)}`,
        pass: null,
        note: `no ${CHROMIUM} (apt-get install chromium); ${api}`,
      });
      return;
    }
    const r = await timeBoards(server.url, big.member, small.member);
    const p50 = quantile(r.big, 0.5);
    const max = Math.max(...r.big);
    const floor = quantile(r.small, 0.5);
    record({
      figure: FIGURE,
      value: p50,
      unit: 'ms p50',
      floor: `${SMALL} cases, same run`,
      floorValue: floor,
      ratio: p50 / floor,
      goal: `≤ ${fmt(GOAL_MS)}`,
      pass: max <= GOAL_MS,
      note: `max ${fmt(max)} ms of ${r.big.length} navigations (${SMALL} cases: max ${fmt(Math.max(...r.small))}); the first, bundle not cached: ${fmt(r.firstBig)} ms; ${r.cards} cards shown; ${api}`,
    });
  } finally {
    await server.stop();
    await db?.drop();
  }
}
