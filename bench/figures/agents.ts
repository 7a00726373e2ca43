// AI agents: the service's own overhead per agent turn — a customer's message in, the agent's
// reply sent — with the model's time taken out, at 50 new conversations/s. The model is the fake
// OpenAI-compatible server of the tests (test/fakes/llm.ts) with a fixed latency, in this process.
import pg from 'pg';
import { type FakeLlm, startFakeLlm } from '../../test/fakes/llm.js';
import {
  admin,
  benchAccount,
  call,
  cpuMs,
  must,
  nextPhone,
  quantile,
  type Server,
  serverEnv,
  sleep,
  startServer,
  UNLIMITED,
} from '../lib.js';
import { record } from '../report.js';

const RATE = Number(process.env.BENCH_AGENT_RATE ?? 50);
const LOW_RATE = Number(process.env.BENCH_AGENT_LOW_RATE ?? 10);
const SECONDS = Number(process.env.BENCH_AGENT_SECONDS ?? 15);
/** The fake model's fixed latency, taken out of every turn's time. */
const MODEL_MS = Number(process.env.BENCH_AGENT_MODEL_MS ?? 200);
const GOAL_MS = 50;
const REPLY = '¡Hola! Ya te ayudo con tu pedido.';

/**
 * Per conversation (one inbound message from a new phone: the number's agent starts a stretch and
 * runs one turn answering one `reply`): from just before the bench sends POST
 * /admin/v1/sandbox/inbound to the reply's `statusTimes.sent` (the server's clock when the sandbox
 * provider accepted it; same machine, same clock), minus the model's fixed latency. So it includes
 * the inbound request, the stretch's start, the runner's wake and claim, the turn's rows, the
 * history read, the model client's own work, the send with its start, and the turn's end. Open
 * loop: one inbound every 1000/RATE ms whatever the answers do. Read back through the public API,
 * so it runs on PGlite as well.
 */
export async function agentFigures() {
  const llm = await startFakeLlm();
  llm.latencyMs = MODEL_MS;
  llm.otherwise = () => ({ text: null, toolCalls: [{ name: 'reply', args: { text: REPLY } }] });
  const { env, db } = await serverEnv('benchagents');
  const server = await startServer({ ...env, LLM_BASE_URL: llm.url, LLM_MODEL: 'fake' });
  try {
    const acc = await benchAccount(server.url, UNLIMITED, 'bench-agents');
    const agent = await must(
      admin(server.url, 'POST', `/accounts/${acc.id}/agents`, {
        name: 'Ventas',
        status: 'active',
        instructions: 'Sos la vendedora de la tienda de yerba. Tuteá con voseo.',
      }),
      201,
      'create agent',
    );
    await must(
      admin(server.url, 'PATCH', `/accounts/${acc.id}/phone-numbers/${acc.phoneNumberId}`, { agentId: agent.id }),
      200,
      'assign agent',
    );
    // Warm-up: a few conversations, not counted.
    for (let i = 0; i < 20; i++) {
      await must(
        admin(server.url, 'POST', '/sandbox/inbound', { accountId: acc.id, from: nextPhone(3), text: `Hola, calentando ${i}` }),
        201,
        'warm-up inbound',
      );
    }
    await waitUntil(async () => llm.requests.length >= 20 && llm.inFlight === 0, 20_000);
    if (llm.requests.length < 20) console.log(`  ! agents warm-up: ${llm.requests.length} model requests of 20`);
    await sleep(500);
    if (RATE > 0) await turnFigure(server, acc, llm, RATE, true);
    // The same at a rate this machine sustains, to show the overhead when it is not saturated.
    if (LOW_RATE > 0) await turnFigure(server, acc, llm, LOW_RATE, false);
  } finally {
    await server.stop();
    await db?.drop();
    await llm.close();
  }
}

/** One open-loop run at `rate` new conversations/s for SECONDS; `goal`: the 50 ms goal applies. */
async function turnFigure(server: Server, acc: { id: string; key: string }, llm: FakeLlm, rate: number, goal: boolean) {
  const messages = (conversationId: string) =>
    call(server.url, 'GET', `/api/v1/conversations/${conversationId}/messages?limit=10`, undefined, {
      authorization: `Bearer ${acc.key}`,
    });
  llm.maxInFlight = 0;
  const requestsBefore = llm.requests.length;
  /** conversationId → when the bench sent the inbound (epoch ms), when it was answered, and its text. */
  const sent = new Map<string, { at: number; acked: number; text: string }>();
  const inboundMs: number[] = [];
  let failures = 0;
  const total = rate * SECONDS;
  const interval = 1000 / rate;
  const cpu0 = cpuMs(server.proc.pid);
  const commits0 = await commits(server);
  const t0 = performance.now();
  const startWall = Date.now();
  const inflight: Promise<void>[] = [];
  let lagMax = 0;
  for (let i = 0; i < total; i++) {
    const due = t0 + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    lagMax = Math.max(lagMax, performance.now() - due);
    const from = nextPhone(3);
    const text = `Hola, quiero yerba (cliente ${rate}-${i})`;
    inflight.push(
      (async () => {
        const at = Date.now();
        const p0 = performance.now();
        const r = await admin(server.url, 'POST', '/sandbox/inbound', { accountId: acc.id, from, text });
        inboundMs.push(performance.now() - p0);
        if (r.status === 201) sent.set(r.body.conversationId, { at, acked: Date.now(), text });
        else if (failures++ === 0) console.log(`  ! inbound refused: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      })(),
    );
  }
  const offeredSeconds = (Date.now() - startWall) / 1000;
  await Promise.all(inflight);
  // Every turn asked of the model and answered (or 30 s).
  await waitUntil(() => llm.requests.length - requestsBefore >= sent.size && llm.inFlight === 0, 30_000);
  await sleep(500);
  const cpuPerTurn = (cpuMs(server.proc.pid) - cpu0) / total;
  await sleep(1500); // PostgreSQL's backends publish their counts at most once a second
  const commitsPerTurn = ((await commits(server)) - commits0) / total;
  const asked = new Map(llm.requests.slice(requestsBefore).map((r) => [r.lastUser, r.at]));

  const overhead: number[] = [];
  const ackedToAsked: number[] = [];
  const afterModel: number[] = [];
  let missing = 0;
  const ids = [...sent.keys()];
  for (let i = 0; i < ids.length; i += 10) {
    await Promise.all(
      ids.slice(i, i + 10).map(async (id) => {
        const { at, acked, text } = sent.get(id)!;
        const deadline = Date.now() + 10_000;
        let out: any;
        for (;;) {
          const r = await messages(id);
          out = r.body?.data?.find((m: any) => m.direction === 'outbound');
          if (out?.statusTimes?.sent || Date.now() > deadline) break;
          await sleep(200);
        }
        if (!out?.statusTimes?.sent) {
          missing++;
          return;
        }
        const sentAt = Date.parse(out.statusTimes.sent);
        overhead.push(sentAt - at - MODEL_MS);
        const askedAt = asked.get(text);
        if (askedAt !== undefined) {
          ackedToAsked.push(askedAt - acked);
          afterModel.push(sentAt - askedAt - MODEL_MS);
        }
      }),
    );
  }
  const p99 = quantile(overhead, 0.99);
  const q = (xs: number[], p: number) => quantile(xs, p).toFixed(0);
  const stages = await serverStages(server, ids);
  record({
    figure: `agent turn overhead (inbound → reply sent − model) at ${rate} new conv/s`,
    value: p99,
    unit: 'ms p99',
    floor: 'the goal',
    floorValue: GOAL_MS,
    ratio: p99 / GOAL_MS,
    goal: goal ? `≤ ${GOAL_MS}` : 'report',
    pass: goal ? missing === 0 && failures === 0 && p99 <= GOAL_MS : null,
    note:
      `p50 ${q(overhead, 0.5)} ms, p95 ${q(overhead, 0.95)} ms, max ${Math.max(...overhead).toFixed(0)} ms; the model's fixed ${MODEL_MS} ms taken out; ` +
      `inbound answered p50 ${q(inboundMs, 0.5)} / p99 ${q(inboundMs, 0.99)} ms, then model asked p50 ${q(ackedToAsked, 0.5)} / p99 ${q(ackedToAsked, 0.99)} ms, ` +
      `model answered → reply sent p50 ${q(afterModel, 0.5)} / p99 ${q(afterModel, 0.99)} ms; ${overhead.length} turns, ${missing} replies missing, ${failures} inbound refused; ` +
      `${(total / offeredSeconds).toFixed(0)} conv/s offered (scheduler lag max ${lagMax.toFixed(0)} ms); fake model maxInFlight ${llm.maxInFlight}; ` +
      `server CPU ${cpuPerTurn.toFixed(1)} ms per conversation` +
      (Number.isFinite(commitsPerTurn)
        ? `; ${commitsPerTurn.toFixed(1)} PostgreSQL transactions per conversation (inbound included)`
        : '') +
      (stages ? `; by the server's clock: ${stages}` : ''),
  });
}

/**
 * The turn's stages by the server's own timestamps (PostgreSQL only): inbound stored → turn begun
 * (the runner's wake, claim and first transaction), turn begun → reply stored (the history, the
 * model call minus its fixed latency, the answer stored, the send's first transaction), reply
 * stored → sent (the provider), sent → turn done.
 */
async function serverStages(server: Server, conversationIds: string[]): Promise<string | null> {
  const url = server.env.DATABASE_URL;
  if (!url) return null;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query(
      `SELECT EXTRACT(EPOCH FROM t.started_at - i.created_at) * 1000 AS claim,
              EXTRACT(EPOCH FROM o.created_at - t.started_at) * 1000 - $2::int AS turn,
              EXTRACT(EPOCH FROM o.sent_at - o.created_at) * 1000 AS send,
              EXTRACT(EPOCH FROM t.ended_at - o.sent_at) * 1000 AS done
       FROM agent_stretches st
       JOIN agent_turns t ON t.stretch_id = st.id AND t.n = 1
       JOIN messages i ON i.id = t.inbound_until
       JOIN messages o ON o.conversation_id = st.conversation_id AND o.direction = 'outbound'
       WHERE st.conversation_id = ANY($1::uuid[])`,
      [conversationIds, MODEL_MS],
    );
    const col = (k: string) => r.rows.map((x) => Number(x[k])).filter(Number.isFinite);
    const f = (k: string) => `p50 ${quantile(col(k), 0.5).toFixed(0)} / p99 ${quantile(col(k), 0.99).toFixed(0)} ms`;
    return `inbound stored → turn begun ${f('claim')}, turn begun → reply stored (− model) ${f('turn')}, reply stored → sent ${f('send')}, sent → turn done ${f('done')}`;
  } finally {
    await c.end();
  }
}

/** Transactions committed so far in the server's PostgreSQL database (NaN on PGlite). */
async function commits(server: Server): Promise<number> {
  const url = server.env.DATABASE_URL;
  if (!url) return Number.NaN;
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query('SELECT xact_commit::bigint AS n FROM pg_stat_database WHERE datname = current_database()');
    return Number(r.rows[0].n);
  } finally {
    await c.end();
  }
}

async function waitUntil(check: () => Promise<boolean> | boolean, maxMs: number) {
  const end = Date.now() + maxMs;
  while (!(await check()) && Date.now() < end) await sleep(100);
}
