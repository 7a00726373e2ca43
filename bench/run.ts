// `npm run bench`: each figure next to its floor, measured in the same run on the same machine,
// printed as a ratio and written to bench/results.json (issue "Measure ourselves").
// PostgreSQL when DATABASE_URL is set (a fresh database per run), else PGlite in a temp DATA_DIR.
// Speed is measured here, never asserted in timed tests.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Agent, createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import { contactView, upsertContact } from '../src/contacts/service.js';
import { openDatabase } from '../src/db/index.js';
import { migrate } from '../src/db/migrate.js';
import { newId } from '../src/lib/ids.js';
import { emitEvent } from '../src/webhooks/outbox.js';
import {
  admin,
  benchAccount,
  call,
  freePort,
  freshDatabase,
  type LoadResult,
  load,
  must,
  quantile,
  removeTempDirs,
  type Server,
  sleep,
  startServer,
  UNLIMITED,
} from './lib.js';

interface Figure {
  figure: string;
  value: number;
  unit: string;
  floor: string;
  floorValue: number | null;
  ratio: number | null;
  goal: string;
  pass: boolean | null;
  note?: string;
}

const figures: Figure[] = [];
const base = process.env.DATABASE_URL;
const dbName = base ? 'PostgreSQL' : 'PGlite';
const DURATION = Number(process.env.BENCH_SECONDS ?? 8);
const CONNECTIONS = 32;

function record(f: Figure) {
  figures.push(f);
  const r = f.ratio === null ? '' : `ratio ${f.ratio.toFixed(2)}`;
  const verdict = f.pass === null ? 'report' : f.pass ? 'PASS' : 'MISS';
  console.log(
    `${f.figure.padEnd(58)} ${fmt(f.value).padStart(9)} ${f.unit.padEnd(6)} | floor ${f.floor}: ${f.floorValue === null ? '-' : fmt(f.floorValue)} | ${r.padEnd(11)} goal ${f.goal.padEnd(8)} ${verdict}${f.note ? `  (${f.note})` : ''}`,
  );
}
const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2));

async function serverEnv(tag: string) {
  const db = await freshDatabase(base, tag);
  const env: Record<string, string> = { ...(db ? { DATABASE_URL: db.url } : {}) };
  if (process.env.REDIS_URL) env.REDIS_URL = process.env.REDIS_URL;
  env.REDIS_KEY_PREFIX = `chasqui-bench-${Date.now()}`;
  return { env, db };
}

/**
 * Figure 1 and the limits figure of issue 3: GET /me against bare node:http, and caps on vs off.
 * Returns the bench server, started again (the rounds run their own processes on its data).
 */
async function meFigures(server: Server): Promise<Server> {
  const limited = await benchAccount(server.url, {
    ...UNLIMITED,
    requestsPerMinute: 1_000_000_000,
    apiCallsPerMonth: 1_000_000_000_000,
  });
  // The same server's account without caps or quota: its requests skip the limiter's work and
  // carry no rate-limit headers, so "limited vs unlimited" is the limits' cost inside one process.
  const unlimited = await benchAccount(server.url, UNLIMITED, 'bench-unlimited');
  const me = await call(server.url, 'GET', '/api/v1/me', undefined, { authorization: `Bearer ${limited.key}` });
  const bodyFile = join(tmpdir(), `chasqui-me-${process.pid}.json`);
  writeFileSync(bodyFile, JSON.stringify(me.body));
  const port = await freePort();
  const floor = spawn(process.execPath, [new URL('./floor-http.mjs', import.meta.url).pathname, String(port), bodyFile], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((r) => floor.stdout?.once('data', r));
  // "Limits off": the same server code with LIMITS=off (no caps, quota or IP block at all), on a
  // database of the same kind.
  const { env: offEnv, db: offDb } = await serverEnv('benchoff');
  let offServer = await startServer({ ...offEnv, LIMITS: 'off' });
  try {
    const offAccount = await benchAccount(offServer.url, UNLIMITED, 'bench-off');
    await offServer.stop();
    // Two processes running the same code differ here by up to ±15 % for their whole life (where
    // V8 puts things), more than the limits cost. So each round starts a fresh process for /me
    // (on the bench database) and for limits off, warms every target up (JIT; bare node:http
    // too), and measures the targets in turn in short slices: the machine's speed drifts over
    // seconds (other tenants of the host), and every target sees the same drift. Each figure is
    // the mean of all its slices; each server's CPU time per request is read from /proc too
    // (docs/performance.md).
    const runs: Record<'bare' | 'on' | 'off' | 'framework' | 'same', LoadResult[]> = { bare: [], on: [], off: [], framework: [], same: [] };
    // One process at a time on a data directory (PGlite): the bench server rests meanwhile.
    await server.stop();
    for (let round = 0; round < ROUNDS; round++) {
      const onServer = await startServer(server.env, { port: server.port });
      offServer = await startServer(offServer.env, { port: offServer.port });
      try {
        const targets = {
          bare: { url: `http://127.0.0.1:${port}/api/v1/me`, pid: floor.pid },
          on: { url: `${onServer.url}/api/v1/me`, headers: { authorization: `Bearer ${limited.key}` }, pid: onServer.proc.pid },
          off: { url: `${offServer.url}/api/v1/me`, headers: { authorization: `Bearer ${offAccount.key}` }, pid: offServer.proc.pid },
          // Where the gap to bare node:http goes: the framework alone (GET /healthz: Fastify,
          // request id, no auth, no database), then auth + limits + the account's view.
          framework: { url: `${onServer.url}/healthz`, pid: onServer.proc.pid },
          same: { url: `${onServer.url}/api/v1/me`, headers: { authorization: `Bearer ${unlimited.key}` }, pid: onServer.proc.pid },
        };
        for (let slice = 0; slice < SLICES; slice++) {
          for (const name of Object.keys(targets) as (keyof typeof targets)[]) {
            const warmup = slice === 0 && ME_WARMUP_SECONDS;
            runs[name].push(await load({ ...targets[name], duration: DURATION / SLICES, connections: CONNECTIONS, warmup }));
          }
        }
      } finally {
        await onServer.stop();
        await offServer.stop();
      }
    }
    const [bare, on, off, framework] = (['bare', 'on', 'off', 'framework'] as const).map((name) => meanOf(runs[name]));
    const rounds = (name: keyof typeof runs) => {
      const rps = runs[name].map((r) => r.rps);
      return `${fmt(Math.min(...rps))}–${fmt(Math.max(...rps))}`;
    };
    const cpu = (r: LoadResult) => (r.cpuUs === undefined ? '?' : r.cpuUs.toFixed(1));
    console.log(
      `  ${ROUNDS} processes × ${SLICES} interleaved slices of ${DURATION / SLICES} s, req/s range — bare ${rounds('bare')}; /me ${rounds('on')}; limits off ${rounds('off')}; /healthz ${rounds('framework')}`,
    );
    console.log(`  server CPU per request (µs) — bare ${cpu(bare)}; /me ${cpu(on)}; limits off ${cpu(off)}; /healthz ${cpu(framework)}`);
    checkClean('GET /me', on);
    checkClean('GET /me (limits off)', off);
    record({
      figure: 'GET /healthz req/s (Fastify, no auth, no database)',
      value: framework.rps,
      unit: 'req/s',
      floor: 'bare node:http',
      floorValue: bare.rps,
      ratio: framework.rps / bare.rps,
      goal: 'report',
      pass: null,
    });
    const ratio = on.rps / bare.rps;
    record({
      figure: 'GET /api/v1/me req/s (auth + caps + quota)',
      value: on.rps,
      unit: 'req/s',
      floor: 'bare node:http',
      floorValue: bare.rps,
      ratio,
      goal: '≥ 0.60',
      pass: ratio >= 0.6,
      note: `p99 ${on.p99} ms`,
    });
    record({
      figure: 'GET /me with limits on vs LIMITS=off',
      value: on.rps,
      unit: 'req/s',
      floor: 'limits off',
      floorValue: off.rps,
      ratio: on.rps / off.rps,
      goal: '≥ 0.90',
      pass: on.rps / off.rps >= 0.9,
      note: `overhead ${((off.rps / on.rps - 1) * 100).toFixed(1)} % by throughput, ${cpuOverhead(on, off)} by server CPU per request${process.env.REDIS_URL ? ', Redis counters' : ', memory counters'}`,
    });
    const same = meanOf(runs.same);
    record({
      figure: 'GET /me, limited vs unlimited account, same process',
      value: on.rps,
      unit: 'req/s',
      floor: 'unlimited account',
      floorValue: same.rps,
      ratio: on.rps / same.rps,
      goal: 'report',
      pass: null,
      note: `overhead ${cpuOverhead(on, same)} by server CPU per request; no process-to-process spread`,
    });
  } finally {
    floor.kill();
    await offServer.stop();
    await offDb?.drop();
  }
  return startServer(server.env, { port: server.port });
}

/** Rounds of the GET /me figures (fresh server processes each round, targets measured in turn). */
const ROUNDS = 4;
/** Each round's measurement of a target, cut into this many slices taken in turn with the others. */
const SLICES = 4;
/**
 * Load before a fresh process's first slice, not counted. After 2 s a third of the processes
 * still ran their first measurement 10–60 % slower than their later ones (V8 still optimizing);
 * the figures are of a server that has been up for a while.
 */
const ME_WARMUP_SECONDS = 5;

/** Mean throughput of several runs (CPU per request over all of them); worst latency; errors summed. */
function meanOf(rs: LoadResult[]): LoadResult {
  const requests = rs.reduce((t, r) => t + r.requests, 0);
  const cpu = rs.every((r) => r.cpuUs !== undefined) ? rs.reduce((t, r) => t + (r.cpuUs ?? 0) * r.requests, 0) / requests : undefined;
  return {
    ...(cpu === undefined ? {} : { cpuUs: cpu }),
    rps: rs.reduce((t, r) => t + r.rps, 0) / rs.length,
    p50: Math.max(...rs.map((r) => r.p50)),
    p99: Math.max(...rs.map((r) => r.p99)),
    requests: rs.reduce((t, r) => t + r.requests, 0),
    non2xx: rs.reduce((t, r) => t + r.non2xx, 0),
    errors: rs.reduce((t, r) => t + r.errors, 0),
  };
}

const cpuOverhead = (on: LoadResult, off: LoadResult): string =>
  on.cpuUs === undefined || off.cpuUs === undefined ? '?' : `${((on.cpuUs / off.cpuUs - 1) * 100).toFixed(1)} %`;

function checkClean(what: string, r: LoadResult) {
  if (r.non2xx > 0 || r.errors > 0) console.log(`  ! ${what}: ${r.non2xx} non-2xx answers, ${r.errors} errors in ${r.requests} requests`);
}

let phoneSeq = 0;
/** A unique valid Argentine mobile per call (the bench process's own range). */
const nextPhone = (prefix: number): string => {
  const n = phoneSeq++;
  // Last four digits 0001–0003 are the sandbox's test numbers (failed, rejected, marketing blocked).
  if (n % 10_000 >= 1 && n % 10_000 <= 3) return nextPhone(prefix);
  return `+54 9 11 ${prefix}${String(n).padStart(7, '0')}`;
};

/** POST /contacts with a new phone each request, against the same SQL without HTTP. */
async function contactFigures(server: Server) {
  const acc = await benchAccount(server.url, UNLIMITED, 'bench-contacts');
  const http = await load({
    url: `${server.url}/api/v1/contacts`,
    method: 'POST',
    duration: DURATION,
    connections: CONNECTIONS,
    headers: { authorization: `Bearer ${acc.key}`, 'content-type': 'application/json' },
    requests: [
      { setupRequest: (req: any) => ({ ...req, body: JSON.stringify({ phone: nextPhone(1), name: 'Ana', attributes: { plan: 'oro' } }) }) },
    ],
  });
  checkClean('POST /contacts', http);

  // The floor: the same service code (same SQL, same driver) at the same concurrency, no HTTP,
  // on a database of the same kind opened by this process.
  const floorDb = await freshDatabase(base, 'benchfloor');
  const database = await openDatabase(loadConfig({ DATABASE_URL: floorDb?.url ?? 'memory://', DATA_DIR: tmpdir() }).database);
  await migrate(database.db);
  const accountId = newId();
  const now = new Date();
  await database.db
    .insertInto('accounts')
    .values({
      id: accountId,
      name: 'floor',
      plan: 'enterprise',
      limits: JSON.stringify(UNLIMITED),
      created_at: now,
      updated_at: now,
    } as any)
    .execute();
  const account = await database.db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirstOrThrow();
  let done = 0;
  const end = Date.now() + DURATION * 1000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < end) {
        await database.db.transaction().execute(async (trx) => {
          const r = await upsertContact(
            trx,
            account as any,
            { phone: nextPhone(2).replace(/\D/g, ''), name: 'Ana', attributes: { plan: 'oro' } },
            new Date(),
          );
          if (r.created)
            await emitEvent(
              trx,
              { accountId, kind: 'contact.created', data: { source: 'api', contact: contactView(r.contact) } },
              new Date(),
            );
        });
        done++;
      }
    }),
  );
  const sqlRps = done / DURATION;
  await database.close();
  await floorDb?.drop();
  const ratio = http.rps / sqlRps;
  record({
    figure: 'POST /contacts new contact req/s (row + outbox event)',
    value: http.rps,
    unit: 'req/s',
    floor: 'same SQL, no HTTP',
    floorValue: sqlRps,
    ratio,
    goal: '≥ 0.50',
    pass: ratio >= 0.5,
    note: `p99 ${http.p99} ms`,
  });
  return http.rps;
}

/** POST /messages (sandbox, approved template, new recipient each time) against POST /contacts. */
async function messageFigure(server: Server, contactsRps: number) {
  const acc = await benchAccount(server.url, UNLIMITED, 'bench-messages');
  const t = await must(
    admin(server.url, 'POST', `/accounts/${acc.id}/templates`, {
      name: 'bench_pedido',
      category: 'UTILITY',
      body: 'Hola {{nombre}}, tu pedido está en camino.',
      variables: [{ name: 'nombre', label: 'Nombre', example: 'Ana' }],
      status: 'APPROVED',
    }),
    201,
    'create template',
  );
  const http = await load({
    url: `${server.url}/api/v1/messages`,
    method: 'POST',
    duration: DURATION,
    connections: CONNECTIONS,
    headers: { authorization: `Bearer ${acc.key}`, 'content-type': 'application/json' },
    requests: [
      {
        setupRequest: (req: any) => ({
          ...req,
          body: JSON.stringify({ to: nextPhone(3), template: { id: t.id, variables: { nombre: 'Ana' } } }),
        }),
      },
    ],
  });
  checkClean('POST /messages', http);
  record({
    figure: 'POST /messages (sandbox template) req/s',
    value: http.rps,
    unit: 'req/s',
    floor: 'POST /contacts',
    floorValue: contactsRps,
    ratio: http.rps / contactsRps,
    goal: 'report',
    pass: null,
    note: `p99 ${http.p99} ms`,
  });
}

/** RSS of the server holding 1,000 open keep-alive connections. */
async function rssFigure(server: Server) {
  const before = server.rssMb();
  const agent = new Agent({ keepAlive: true, maxSockets: 1000, maxFreeSockets: 1000 });
  const url = new URL(`${server.url}/healthz`);
  await Promise.all(
    Array.from(
      { length: 1000 },
      () =>
        new Promise<void>((resolve, reject) => {
          const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, agent }, (res: IncomingMessage) => {
            res.resume();
            res.on('end', () => resolve());
          });
          req.on('error', reject);
          req.end();
        }),
    ),
  );
  await sleep(500);
  const sockets = Object.values(agent.freeSockets).reduce((n, s) => n + (s?.length ?? 0), 0);
  const rss = server.rssMb();
  agent.destroy();
  record({
    figure: `RSS with ${sockets} open keep-alive connections`,
    value: rss,
    unit: 'MB',
    floor: 'idle server',
    floorValue: before,
    ratio: null,
    goal: '≤ 200',
    pass: rss <= 200,
  });
}

/** GET /pipelines/{id}/cases at offset 10,000 with 1,000,000 cases in 1,000 accounts (PostgreSQL). */
async function casesFigure(server: Server) {
  if (!base) {
    record({
      figure: 'GET /pipelines/{id}/cases offset 10,000, 1 M cases',
      value: Number.NaN,
      unit: 'ms p99',
      floor: '-',
      floorValue: null,
      ratio: null,
      goal: '≤ 20',
      pass: null,
      note: 'PostgreSQL only: set DATABASE_URL',
    });
    return;
  }
  const owner = await benchAccount(server.url, UNLIMITED, 'bench-cases');
  const p = await must(
    admin(server.url, 'POST', `/accounts/${owner.id}/pipelines`, {
      name: 'Ventas',
      stages: [
        { name: 'Consulta', kind: 'open' },
        { name: 'Ganado', kind: 'won' },
        { name: 'Perdido', kind: 'lost' },
      ],
    }),
    201,
    'create pipeline',
  );
  const t0 = Date.now();
  const { default: pgmod } = await import('pg');
  const client = new pgmod.Client({ connectionString: server.env.DATABASE_URL });
  await client.connect();
  // Set-based seed: 999 other accounts with 900 cases each, and the target with 100,900.
  await client.query(`
    INSERT INTO accounts (id, name, plan, limits, created_at, updated_at)
    SELECT gen_random_uuid(), 'seed ' || g, 'escala', '{}'::jsonb, now(), now() FROM generate_series(1, 999) g`);
  await client.query(`
    INSERT INTO pipelines (id, account_id, name, is_default, inactivity_hours, stale_days, created_at)
    SELECT gen_random_uuid(), a.id, 'Ventas', true, 24, 30, now() FROM accounts a
    WHERE NOT EXISTS (SELECT 1 FROM pipelines p WHERE p.account_id = a.id)`);
  await client.query(`
    INSERT INTO stages (id, pipeline_id, name, kind, position)
    SELECT gen_random_uuid(), p.id, 'Consulta', 'open', 0 FROM pipelines p
    WHERE NOT EXISTS (SELECT 1 FROM stages s WHERE s.pipeline_id = p.id)`);
  const seedSql = (accountFilter: string, perAccount: number) => `
    WITH acc AS (
      SELECT a.id AS account_id, p.id AS pipeline_id, s.id AS stage_id FROM accounts a
      JOIN pipelines p ON p.account_id = a.id AND p.is_default
      JOIN LATERAL (SELECT id FROM stages WHERE pipeline_id = p.id ORDER BY position LIMIT 1) s ON true
      WHERE ${accountFilter}),
    ct AS (
      INSERT INTO contacts (id, account_id, phone, name, attributes, opted_out, marketing_opt_out, created_at, updated_at)
      SELECT gen_random_uuid(), acc.account_id, '5491150' || lpad(g::text, 6, '0'), 'Cliente ' || g, '{}'::jsonb, false, false, now(), now()
      FROM acc, generate_series(1, ${perAccount}) g
      RETURNING id, account_id),
    cv AS (
      INSERT INTO conversations (id, account_id, contact_id, channel, phone_number_id, created_at)
      SELECT gen_random_uuid(), ct.account_id, ct.id, 'whatsapp', NULL, now() FROM ct
      RETURNING id, account_id, contact_id)
    INSERT INTO cases (id, account_id, conversation_id, contact_id, pipeline_id, stage_id, stage_entered_at, status, opened_at, last_inbound_at,
                       closed_at, close_reason, handled_by, reason_status, inactivity_hours, created_at, updated_at)
    SELECT gen_random_uuid(), cv.account_id, cv.id, cv.contact_id, acc.pipeline_id, acc.stage_id, now(),
           'closed', now() - (random() * interval '300 days'), now(), now(), 'inactivity', 'none', 'pending', 24, now(), now()
    FROM cv JOIN acc ON acc.account_id = cv.account_id`;
  try {
    await client.query(seedSql(`a.id <> '${owner.id}' AND a.name LIKE 'seed %'`, 900));
    await client.query(seedSql(`a.id = '${owner.id}'`, 100_900));
    // What autovacuum does to a table after a bulk load: statistics and the visibility map
    // (index-only scans of the pipeline index need it).
    await client.query('VACUUM ANALYZE');
  } catch (err) {
    console.log(`  ! cases seed failed (schema changed?): ${(err as Error).message}`);
    await client.end();
    return;
  }
  const count = await client.query('SELECT count(*)::int AS n FROM cases');
  await client.end();
  const seedSeconds = (Date.now() - t0) / 1000;
  const target = `${server.url}/api/v1/pipelines/${p.id}/cases?offset=10000&limit=50&status=all`;
  const headers = { authorization: `Bearer ${owner.key}` };
  // The figure is the latency of one client (the query's own cost); 4 concurrent clients on
  // this 2-CPU machine (server, PostgreSQL and the load generator share it) go in the note.
  const r = await load({ url: target, headers, duration: DURATION, connections: 1 });
  const r4 = await load({ url: target, headers, duration: DURATION, connections: 4 });
  checkClean('GET cases', r);
  checkClean('GET cases (4 clients)', r4);
  record({
    figure: `GET /pipelines/{id}/cases offset 10,000 (${(count.rows[0].n / 1e6).toFixed(2)} M cases)`,
    value: r.p99,
    unit: 'ms p99',
    floor: '-',
    floorValue: null,
    ratio: null,
    goal: '≤ 20',
    pass: r.p99 <= 20,
    note: `p50 ${r.p50} ms; 4 clients: p50 ${r4.p50} ms, p99 ${r4.p99} ms, ${Math.round(r4.rps)} req/s; seeded in ${seedSeconds.toFixed(1)} s`,
  });
}

/** Webhook deliveries/s to a loopback receiver, and event-to-delivery latency at 500 events/s. */
async function webhookFigures() {
  const arrivals: { at: number; createdAt: number; id: string }[] = [];
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      try {
        arrivals.push({ at: Date.now(), createdAt: Date.parse(JSON.parse(body).createdAt), id: String(req.headers['webhook-id']) });
      } catch {
        /* count only envelopes */
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const port = (receiver.address() as { port: number }).port;

  // Throughput: a backlog of N pending deliveries written while the server is stopped, then
  // drained by a fresh process; deliveries/s from the first to the last arrival.
  const { env, db } = await serverEnv('benchwh');
  let server = await startServer(env);
  const acc = await benchAccount(server.url, UNLIMITED, 'bench-webhooks');
  await must(admin(server.url, 'POST', `/accounts/${acc.id}/webhooks`, { url: `http://127.0.0.1:${port}/hook` }), 201, 'create webhook');
  await server.stop();
  const N = 10_000;
  const database = await openDatabase(loadConfig({ DATABASE_URL: env.DATABASE_URL ?? '', DATA_DIR: server.env.DATA_DIR }).database);
  for (let i = 0; i < N; i += 500) {
    await database.db.transaction().execute(async (trx) => {
      for (let j = 0; j < 500; j++) {
        await emitEvent(
          trx,
          { accountId: acc.id, kind: 'contact.created', data: { source: 'api', contact: { id: newId(), n: i + j } } },
          new Date(),
        );
      }
    });
  }
  await database.close();
  arrivals.length = 0;
  const started = Date.now();
  server = await startServer(server.env, { port: server.port });
  const deadline = Date.now() + 120_000;
  while (arrivals.length < N && Date.now() < deadline) await sleep(50);
  const first = arrivals[0]?.at ?? started;
  const last = arrivals[arrivals.length - 1]?.at ?? Date.now();
  const dps = arrivals.length / Math.max(0.001, (last - first) / 1000);
  record({
    figure: `webhook deliveries/s to a loopback receiver (${N.toLocaleString('en-US')} queued)`,
    value: dps,
    unit: 'del/s',
    floor: '-',
    floorValue: null,
    ratio: null,
    goal: '≥ 2,000',
    pass: arrivals.length >= N && dps >= 2000,
    note: `${arrivals.length} arrived`,
  });

  // Latency: POST /contacts at a fixed 500 req/s → one contact.created each → one delivery each.
  arrivals.length = 0;
  const keyed = await benchAccount(server.url, UNLIMITED, 'bench-webhooks-latency');
  await must(admin(server.url, 'POST', `/accounts/${keyed.id}/webhooks`, { url: `http://127.0.0.1:${port}/hook` }), 201, 'create webhook');
  const r = await load({
    url: `${server.url}/api/v1/contacts`,
    method: 'POST',
    duration: DURATION,
    connections: 64,
    overallRate: 500,
    headers: { authorization: `Bearer ${keyed.key}`, 'content-type': 'application/json' },
    requests: [{ setupRequest: (req: any) => ({ ...req, body: JSON.stringify({ phone: nextPhone(4) }) }) }],
  });
  // autocannon counts the answers it read; requests in flight when it stops still create
  // contacts, so a few more events than `expected` may arrive. Duplicates are told apart by
  // webhook-id (a second send of one event).
  const expected = r.requests - r.non2xx;
  const until = Date.now() + 30_000;
  while (arrivals.length < expected && Date.now() < until) await sleep(50);
  await sleep(500);
  const unique = new Set(arrivals.map((a) => a.id)).size;
  const lat = arrivals.map((a) => a.at - a.createdAt);
  record({
    figure: 'event-to-delivery latency at 500 events/s',
    value: quantile(lat, 0.99),
    unit: 'ms p99',
    floor: '-',
    floorValue: null,
    ratio: null,
    goal: '≤ 250',
    pass: quantile(lat, 0.99) <= 250 && unique >= expected,
    note: `p50 ${quantile(lat, 0.5)} ms, ${unique} events delivered (${expected} answered 201), ${arrivals.length - unique} duplicates, ${Math.round(r.rps)} events/s`,
  });
  await server.stop();
  receiver.close();
  await db?.drop();
}

async function main() {
  console.log(
    `Chasqui bench on ${dbName}${process.env.REDIS_URL ? ' + Redis' : ''} — ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), Node ${process.version}`,
  );
  const only = process.env.BENCH_ONLY?.split(',');
  const want = (name: string) => !only || only.includes(name);
  const { env, db } = await serverEnv('bench');
  let server = await startServer(env);
  try {
    if (want('me')) server = await meFigures(server);
    let contactsRps = Number.NaN;
    if (want('contacts')) contactsRps = await contactFigures(server);
    if (want('messages')) await messageFigure(server, contactsRps);
    if (want('rss')) await rssFigure(server);
    if (want('cases')) await casesFigure(server);
  } finally {
    await server.stop();
    await db?.drop();
  }
  if (want('webhooks')) await webhookFigures();
  removeTempDirs();
  const out = new URL('./results.json', import.meta.url).pathname;
  writeFileSync(
    out,
    `${JSON.stringify({ at: new Date().toISOString(), database: dbName, redis: Boolean(process.env.REDIS_URL), cpus: cpus().length, figures }, null, 2)}\n`,
  );
  console.log(`\nWritten ${out}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
