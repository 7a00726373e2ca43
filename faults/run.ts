// `npm run faults`: the service under failure, on PostgreSQL + Redis (issue "Measure ourselves").
// 1. SIGKILL under write load with deliveries pending → nothing acknowledged lost, every event delivered.
// 2. PostgreSQL goes away under load → 503 in Spanish (never 500), readyz says so, recovers alone.
// 3. Redis goes away → caps fail open with a log line, the API keeps serving, counters resume.
// 4. Bad input generated from the OpenAPI document and beyond it (faults/hostile.ts) → count 5xx answers (goal 0).
// 5. Hostile clients for a minute (faults/hostile-clients.ts): races on one contact, oversized and deep
//    bodies, cut uploads → no 5xx, no deadlock, bounded memory, /healthz fast throughout.
// 6. SIGKILL with 200 automation executions mid-flow (faults/automations-kill.ts): every one ends
//    valid after the restart, no step's message sent twice, none lost.
// 7. AI agents (faults/agents-kill.ts): the model hanging, answering 500 or gone mid-conversation →
//    every customer handed off within LLM_TIMEOUT_MS × 3 + 5 s; SIGKILL mid-turn → no reply sent
//    twice, no customer message left unanswered.
// 8. The Instagram receiver (faults/instagram-fuzz.ts): malformed payloads signed with a connected
//    account's app secret, valid ones and unsigned/tampered ones → 0 × 5xx, valid 200, unsigned 401.
// 9. SIGKILL mid-campaign (faults/campaigns-kill.ts): 5,000 recipients at tier 500/s, killed after
//    3 s → after the restart the campaign completes, 0 recipients reached twice, counters exact.
// 10. The WhatsApp Cloud receiver (faults/receiver-kill.ts): SIGKILL right after some 200s with
//    batches queued → every acknowledged message stored once after the restart, none twice.
// 11. A poison batch on the Cloud receiver (faults/poison-batch.ts): one batch failing on every try
//    for our own reason among batches of 200 customers → exactly one dead letter after
//    QUEUE_RETRY_SCHEDULE, 0 customers held, nothing else lost; retried after the fix, stored once.
// 12. Hostile flows and agents (faults/hostile-flows.ts): a ReDoS pattern with a SIGKILL, a flow
//    calling its own hook, customer text in a URL, unbounded model and flow output, wrong tokens on
//    every door → 0 × 5xx, /healthz p99 ≤ 100 ms, 0 runaway executions.
// `FAULTS_ONLY=automations` (or any comma-separated list of the names in main) runs some only.
// Each prints a one-line verdict with its numbers; docs/reliability.md records them.
// PostgreSQL and Redis "go away" through a cuttable TCP proxy (faults/proxy.ts): to the server
// that is exactly a restart (refused connects, cut sockets), and the machine's own servers stay up.
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import pg from 'pg';
import { admin, benchAccount, call, freshDatabase, must, type Server, sleep, startServer, UNLIMITED } from '../bench/lib.js';
import { agentsKill, agentsModelDown } from './agents-kill.js';
import { automationsKill } from './automations-kill.js';
import { campaignsKill } from './campaigns-kill.js';
import { fuzzOpenApi } from './fuzz.js';
import { hostileClients } from './hostile-clients.js';
import { hostileFlows } from './hostile-flows.js';
import { fuzzInstagram } from './instagram-fuzz.js';
import { POISON_SCHEDULE, poisonBatch } from './poison-batch.js';
import { CuttableProxy } from './proxy.js';
import { receiverKill } from './receiver-kill.js';

const PG_BASE = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const verdicts: string[] = [];

function verdict(ok: boolean, line: string) {
  const v = `${ok ? 'PASS' : 'FAIL'}  ${line}`;
  verdicts.push(v);
  console.log(v);
}

/** A receiver that records every delivery (by webhook-id) and answers 200 after `delayMs`. */
async function receiver(delayMs = 0) {
  const seen = new Map<string, number>();
  const contactIds = new Set<string>();
  const srv = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? '');
      seen.set(id, (seen.get(id) ?? 0) + 1);
      try {
        const env = JSON.parse(body);
        if (env.event === 'contact.created') contactIds.add(env.data.contact.id);
      } catch {
        /* ignore */
      }
      setTimeout(() => res.writeHead(200).end('ok'), delayMs);
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(srv.address() as { port: number }).port}/hook`, seen, contactIds, close: () => srv.close() };
}

async function setup(tag: string, extraEnv: Record<string, string> = {}) {
  const db = await freshDatabase(PG_BASE, tag);
  if (!db) throw new Error('faults need PostgreSQL');
  const env = {
    DATABASE_URL: db.url,
    REDIS_URL: REDIS.toString(),
    REDIS_KEY_PREFIX: `chasqui-faults-${tag}-${Date.now()}`,
    WEBHOOK_RETRY_SCHEDULE: '1,1,2,2,5',
    ...extraEnv,
  };
  return { db, env };
}

let phoneSeq = 0;
const phone = (p: number) => `549115${p}${String(phoneSeq++).padStart(6, '0')}`;

/** Writers that POST /contacts until stopped; returns acknowledged contact ids. */
function writers(server: () => Server, key: string, n: number, prefix: number) {
  const acked: string[] = [];
  const statuses = new Map<number, number>();
  let stop = false;
  const done = Promise.all(
    Array.from({ length: n }, async () => {
      while (!stop) {
        try {
          const r = await call(server().url, 'POST', '/api/v1/contacts', { phone: phone(prefix) }, { authorization: `Bearer ${key}` });
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status === 201) acked.push(r.body.id);
        } catch {
          statuses.set(0, (statuses.get(0) ?? 0) + 1);
          await sleep(20);
        }
      }
    }),
  );
  return {
    acked,
    statuses,
    async stop() {
      stop = true;
      await done;
    },
  };
}

async function contactIdsInDb(url: string): Promise<Set<string>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const r = await c.query('SELECT id FROM contacts');
  await c.end();
  return new Set(r.rows.map((x) => x.id as string));
}

async function killUnderLoad() {
  const { db, env } = await setup('kill');
  const rec = await receiver(20);
  let server = await startServer(env);
  try {
    const acc = await benchAccount(server.url, UNLIMITED, 'faults-kill');
    await must(admin(server.url, 'POST', `/accounts/${acc.id}/webhooks`, { url: rec.url }), 201, 'webhook');
    const w = writers(() => server, acc.key, 16, 1);
    await sleep(3000);
    await server.kill();
    await sleep(300);
    const port = server.port;
    server = await startServer(server.env, { port });
    await sleep(1000);
    await w.stop();
    const acked = new Set(w.acked);
    const present = await contactIdsInDb(env.DATABASE_URL);
    const lost = [...acked].filter((id) => !present.has(id)).length;
    const deadline = Date.now() + 60_000;
    while ([...present].some((id) => !rec.contactIds.has(id)) && Date.now() < deadline) await sleep(200);
    const undelivered = [...present].filter((id) => !rec.contactIds.has(id)).length;
    const dupes = [...rec.seen.values()].filter((n) => n > 1).length;
    verdict(
      lost === 0 && undelivered === 0,
      `SIGKILL under write load: ${acked.size} writes acknowledged, ${lost} lost; ${present.size} contacts stored, ${undelivered} events undelivered; ${dupes} delivered more than once (at-least-once, receivers dedupe on webhook-id)`,
    );
  } finally {
    await server.stop();
    rec.close();
    await db.drop();
  }
}

async function postgresDown() {
  const pgUrl = new URL(PG_BASE);
  const proxy = new CuttableProxy(pgUrl.hostname, Number(pgUrl.port || 5432));
  await proxy.start();
  const { db, env } = await setup('pgdown');
  const viaProxy = new URL(db.url);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  const server = await startServer({ ...env, DATABASE_URL: viaProxy.toString() });
  try {
    const acc = await benchAccount(server.url, UNLIMITED, 'faults-pg');
    const w = writers(() => server, acc.key, 8, 2);
    await sleep(1500);
    await proxy.cut();
    const t0 = Date.now();
    await sleep(1500);
    const ready = await call(server.url, 'GET', '/readyz').catch((err) => {
      console.log(`server output:\n${server.output().slice(-4000)}`);
      throw err;
    });
    const during = await call(server.url, 'POST', '/api/v1/contacts', { phone: phone(2) }, { authorization: `Bearer ${acc.key}` });
    await sleep(2500);
    await proxy.restore();
    let recoveredMs = -1;
    for (let i = 0; i < 300; i++) {
      const r = await call(server.url, 'POST', '/api/v1/contacts', { phone: phone(2) }, { authorization: `Bearer ${acc.key}` });
      if (r.status === 201) {
        recoveredMs = Date.now() - t0;
        w.acked.push(r.body.id);
        break;
      }
      await sleep(100);
    }
    await sleep(1000);
    await w.stop();
    const present = await contactIdsInDb(env.DATABASE_URL);
    const lost = w.acked.filter((id) => !present.has(id)).length;
    const s500 = w.statuses.get(500) ?? 0;
    const s503 = w.statuses.get(503) ?? 0;
    const spanish = typeof during.body?.error === 'string' && /Probá|Revisá|base de datos/i.test(during.body.error);
    verdict(
      server.proc.exitCode === null &&
        s500 === 0 &&
        during.status === 503 &&
        spanish &&
        ready.status === 503 &&
        recoveredMs > 0 &&
        lost === 0,
      `PostgreSQL down 4 s under load: ${s503} answers 503 ("${String(during.body?.error ?? '').slice(0, 60)}…"), ${s500} answers 500, readyz ${ready.status} while down, recovered ${(recoveredMs / 1000).toFixed(1)} s after the cut, ${w.acked.length} writes acknowledged, ${lost} lost`,
    );
  } finally {
    await server.stop();
    await proxy.close();
    await db.drop();
  }
}

async function redisDown() {
  const proxy = new CuttableProxy(REDIS.hostname, Number(REDIS.port || 6379));
  await proxy.start();
  const { db, env } = await setup('redisdown', {});
  const server = await startServer({ ...env, REDIS_URL: `redis://127.0.0.1:${proxy.port}`, LOG_LEVEL: 'warn' });
  try {
    const acc = await benchAccount(server.url, { ...UNLIMITED, requestsPerMinute: 100_000 }, 'faults-redis');
    const get = () => fetch(`${server.url}/api/v1/me`, { headers: { authorization: `Bearer ${acc.key}` } });
    const before = await get();
    const remainingBefore = Number(before.headers.get('x-ratelimit-remaining'));
    await proxy.cut();
    const statuses = new Map<number, number>();
    for (let i = 0; i < 200; i++) {
      const r = await get();
      await r.arrayBuffer();
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
    }
    const logged = /redis/i.test(server.output());
    await proxy.restore();
    let resumed = false;
    for (let i = 0; i < 100 && !resumed; i++) {
      await sleep(200);
      const a = await get();
      const b = await get();
      const ra = Number(a.headers.get('x-ratelimit-remaining'));
      const rb = Number(b.headers.get('x-ratelimit-remaining'));
      resumed = Number.isFinite(ra) && Number.isFinite(rb) && rb < ra && rb < remainingBefore;
    }
    const ok200 = statuses.get(200) ?? 0;
    verdict(
      ok200 === 200 && logged && resumed,
      `Redis down: ${ok200}/200 requests served (fail open), log line ${logged ? 'written' : 'MISSING'}, counters ${resumed ? 'resumed' : 'did NOT resume'} after it came back`,
    );
  } finally {
    await server.stop();
    await proxy.close();
    await db.drop();
  }
}

async function badInput() {
  const { db, env } = await setup('fuzz');
  const server = await startServer(env);
  try {
    const acc = await benchAccount(server.url, UNLIMITED, 'faults-fuzz');
    const r = await fuzzOpenApi(server.url, acc.key, Number(process.env.FUZZ_REQUESTS ?? 6000), undefined, acc.id);
    verdict(
      r.fiveXX === 0 && r.total >= 10_000 && server.proc.exitCode === null,
      `Bad input from the OpenAPI document and beyond it: ${r.total} requests over ${r.operations} operations (${r.hostile} with NUL, lone surrogates, control characters, very long text, deep nesting or odd numbers), ${r.fiveXX} answered 5xx${r.samples.length ? ` (e.g. ${r.samples.slice(0, 3).join('; ')})` : ''}; status mix ${JSON.stringify(r.byStatus)}`,
    );
  } finally {
    await server.stop();
    await db.drop();
  }
}

/** An Instagram social account connected through the operator API (test/e2e/instagram-inbound.test.ts). */
async function instagramAccount(url: string, accountId: string, igUserId: string) {
  const instagram = { igUserId, accessToken: `IGAA${igUserId}`, appSecret: `secret-${igUserId}`, verifyToken: `vt-${igUserId}` };
  await must(
    admin(url, 'POST', `/accounts/${accountId}/social-accounts`, { name: 'Instagram', provider: 'instagram', instagram }),
    201,
    'social account',
  );
  return instagram;
}

async function instagramFuzz() {
  const { db, env } = await setup('igfuzz');
  const server = await startServer(env);
  try {
    const acc = await benchAccount(server.url, UNLIMITED, 'faults-igfuzz');
    const other = await benchAccount(server.url, UNLIMITED, 'faults-igfuzz-other');
    const ig = await instagramAccount(server.url, acc.id, '17841400000000001');
    const ig2 = await instagramAccount(server.url, other.id, '17841400000000002');
    const r = await fuzzInstagram(server.url, ig, ig2, Number(process.env.IG_FUZZ_REQUESTS ?? 4000));
    const c = new pg.Client({ connectionString: env.DATABASE_URL });
    await c.connect();
    const stored = Number((await c.query('SELECT count(*) AS n FROM messages WHERE wamid = ANY($1)', [[...r.acknowledgedMids]])).rows[0].n);
    await c.end();
    const alive = server.proc.exitCode === null && (await call(server.url, 'GET', '/healthz')).status === 200;
    // IG_FUZZ_DUMP=file.json keeps every payload answered 5xx (exact body and signature) to replay it.
    if (process.env.IG_FUZZ_DUMP) writeFileSync(process.env.IG_FUZZ_DUMP, JSON.stringify(r.failures, null, 2));
    const s = (n: number) => r.byStatus[n] ?? 0;
    verdict(
      r.fiveXX === 0 && r.wrong === 0 && alive && stored === r.acknowledgedMids.size && r.total >= 1_000,
      `Instagram receiver fuzzed: ${r.total} POSTs (${r.byKind.malformed} malformed and signed with the account's app secret, ${r.byKind.valid} valid, ${r.byKind.unsigned} unsigned or tampered), ${r.fiveXX} answered 5xx, ${r.wrong} valid not 200 or unsigned not 401${r.samples.length ? ` (${r.samples.join('; ')})` : ''}; 200 ×${s(200)}, 400 ×${s(400)}, 401 ×${s(401)}, status mix ${JSON.stringify(r.byStatus)}; ${stored}/${r.acknowledgedMids.size} acknowledged direct messages stored; process ${alive ? 'alive' : 'DEAD'}`,
    );
  } finally {
    await server.stop();
    await db.drop();
  }
}

async function hostile() {
  const { db, env } = await setup('hostile');
  const server = await startServer(env);
  try {
    const r = await hostileClients(server, env.DATABASE_URL);
    verdict(r.ok, r.line);
  } finally {
    await server.stop();
    await db.drop();
  }
}

async function automations() {
  const { db, env } = await setup('automations');
  try {
    const r = await automationsKill(env);
    verdict(r.ok, r.line);
  } finally {
    await db.drop();
  }
}

async function campaigns() {
  const { db, env } = await setup('campaigns');
  try {
    const r = await campaignsKill(env);
    verdict(r.ok, r.line);
  } finally {
    await db.drop();
  }
}

async function cloudReceiverKill() {
  const { db, env } = await setup('receiver');
  try {
    const r = await receiverKill(env);
    verdict(r.ok, r.line);
  } finally {
    await db.drop();
  }
}

async function poison() {
  const { db, env } = await setup('poison', { QUEUE_RETRY_SCHEDULE: POISON_SCHEDULE });
  try {
    const r = await poisonBatch(env);
    verdict(r.ok, r.line);
  } finally {
    await db.drop();
  }
}

async function flowsAndAgents() {
  const { db, env } = await setup('hostileflows');
  try {
    const r = await hostileFlows(env);
    verdict(r.ok, r.line);
  } finally {
    await db.drop();
  }
}

async function agents() {
  for (const [tag, fn] of [
    ['agentsdown', agentsModelDown],
    ['agentskill', agentsKill],
  ] as const) {
    const { db, env } = await setup(tag);
    try {
      const r = await fn(env);
      verdict(r.ok, r.line);
    } catch (err) {
      verdict(false, `${tag}: crashed: ${(err as Error).stack ?? err}`);
    } finally {
      await db.drop();
    }
  }
}

async function main() {
  console.log(`Chasqui faults on PostgreSQL ${new URL(PG_BASE).host} + Redis ${REDIS.host}`);
  const only = process.env.FAULTS_ONLY?.split(',');
  const tests: [string, () => Promise<void>][] = [
    ['kill', killUnderLoad],
    ['postgres', postgresDown],
    ['redis', redisDown],
    ['fuzz', badInput],
    ['instagram-fuzz', instagramFuzz],
    ['hostile', hostile],
    ['automations', automations],
    ['agents', agents],
    ['campaigns', campaigns],
    ['receiver-kill', cloudReceiverKill],
    ['poison', poison],
    ['hostile-flows', flowsAndAgents],
  ];
  for (const [name, fn] of tests) {
    if (only && !only.includes(name)) continue;
    try {
      await fn();
    } catch (err) {
      verdict(false, `${name}: crashed: ${(err as Error).stack ?? err}`);
    }
  }
  console.log(`\n${verdicts.filter((v) => v.startsWith('PASS')).length}/${verdicts.length} fault tests passed`);
  process.exit(verdicts.every((v) => v.startsWith('PASS')) ? 0 : 1);
}

void main();
