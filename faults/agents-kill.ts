// AI agents under failure (docs/reliability.md "AI agents"), against the real server process and
// the fake OpenAI-compatible model of the tests (test/fakes/llm.ts):
// 1. The model hangs, answers 500, or is gone, mid-conversation → every customer is handed off
//    ("El agente no pudo responder", agent.handed_off) within LLM_TIMEOUT_MS × 3 + 5 s.
// 2. SIGKILL while turns wait on the model or send their replies → after a restart on the same
//    database no reply is sent twice and no customer message is left unanswered.
import pg from 'pg';
import { admin, benchAccount, must, nextPhone, quantile, type Server, sleep, startServer, UNLIMITED } from '../bench/lib.js';
import { type FakeLlm, type FakeLlmRequest, startFakeLlm } from '../test/fakes/llm.js';

/** Part 1: the model's timeout, and customers per way of failing (hanging, 500, gone). */
const TIMEOUT_MS = 1000;
const PER_GROUP = Number(process.env.FAULTS_AGENT_CUSTOMERS ?? 20);
/**
 * No allowance on top of the bound: a turn gives the model call the bound less what the customer
 * has waited already and 100 ms for the handoff's commit (src/agents/turns.ts budgetOf). The
 * times are measured to the event's `created_at` (the server's clock), so no polling delay is in them.
 */
const ALLOWANCE_MS = 0;
/** Part 2: customers, rounds (one SIGKILL each), replies per turn, the model's latency range. */
const KILL_CUSTOMERS = Number(process.env.FAULTS_AGENT_KILL_CUSTOMERS ?? 100);
const ROUNDS = Number(process.env.FAULTS_AGENT_ROUNDS ?? 4);
const REPLIES = 3;
const LATENCY_MIN_MS = 200;
const LATENCY_MAX_MS = 2000;

const MODEL_FAILED = 'El agente no pudo responder';

const reply = (text: string) => ({ name: 'reply', args: { text } });
const between = (a: number, b: number) => a + Math.floor(Math.random() * (b - a));

/** An account whose sandbox number is answered by an active agent. */
export async function agentAccount(server: Server, name: string) {
  const acc = await benchAccount(server.url, UNLIMITED, name);
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
  return acc;
}

interface Written {
  from: string;
  text: string;
  /** When the bench sent the inbound request (epoch ms). */
  at: number;
  conversationId: string;
  messageId: string;
}

/** The customers write through the sandbox, 20 at a time; every write must be acknowledged. */
async function writeAll(server: Server, accountId: string, list: { from: string; text: string }[]): Promise<Written[]> {
  const out: Written[] = [];
  for (let i = 0; i < list.length; i += 20) {
    await Promise.all(
      list.slice(i, i + 20).map(async ({ from, text }) => {
        const at = Date.now();
        const r = await admin(server.url, 'POST', '/sandbox/inbound', { accountId, from, text });
        if (r.status !== 201) throw new Error(`inbound: ${r.status} ${JSON.stringify(r.body)}`);
        out.push({ from, text, at, conversationId: r.body.conversationId, messageId: r.body.messageId });
      }),
    );
  }
  return out;
}

/** Waits until `check` is true (or `maxMs` passed); returns whether it became true. */
async function until(check: () => Promise<boolean>, maxMs: number, everyMs = 200): Promise<boolean> {
  const end = Date.now() + maxMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await sleep(everyMs);
  }
}

const summary = (xs: number[]) =>
  xs.length
    ? `max ${Math.max(...xs).toFixed(0)} ms, p99 ${quantile(xs, 0.99).toFixed(0)} ms, p50 ${quantile(xs, 0.5).toFixed(0)} ms`
    : 'none';

// ---------------------------------------------------------------------------------------------
// 1. The model fails mid-conversation.

interface Group {
  name: 'hanging' | '500' | 'down';
  written: Written[];
  latencies: number[];
  missing: number;
  problems: string[];
  requests: number;
  /** Server clock: the message stored → its turn begun, and the turn begun → ended (handed off). */
  claim: number[];
  turn: number[];
}

export async function agentsModelDown(env: Record<string, string>): Promise<{ ok: boolean; line: string }> {
  const llm = await startFakeLlm();
  llm.otherwise = (req) => ({ text: null, toolCalls: [reply(`Hola, te leo: ${req.lastUser}`)] });
  const client = new pg.Client({ connectionString: env.DATABASE_URL });
  const server = await startServer({ ...env, LLM_BASE_URL: llm.url, LLM_MODEL: 'fake', LLM_TIMEOUT_MS: String(TIMEOUT_MS) });
  let llmOpen = true;
  try {
    await client.connect();
    const acc = await agentAccount(server, 'faults-agents-down');
    const names = ['hanging', '500', 'down'] as const;
    const customers = names.flatMap((g) => Array.from({ length: PER_GROUP }, (_, i) => ({ group: g, from: nextPhone(3), n: i })));
    // Every customer's stretch in progress: one turn answered by the model.
    const first = await writeAll(
      server,
      acc.id,
      customers.map((c) => ({ from: c.from, text: `Hola, soy el cliente ${c.group} ${c.n}` })),
    );
    const conversations = first.map((w) => w.conversationId);
    const answered = await until(async () => {
      const r = await client.query(
        `SELECT count(DISTINCT conversation_id)::int AS n FROM messages WHERE direction = 'outbound' AND status = 'sent' AND conversation_id = ANY($1::uuid[])`,
        [conversations],
      );
      return r.rows[0].n === customers.length;
    }, 30_000);
    if (!answered) throw new Error('the first turns were not all answered in 30 s');
    const outboundBefore = await outboundCount(client, conversations);

    const bound = TIMEOUT_MS * 3 + 5000;
    const groups: Group[] = [];
    const run = async (name: Group['name']) => {
      const list = customers.filter((c) => c.group === name);
      const requestsBefore = llm.requests.length;
      const written = await writeAll(
        server,
        acc.id,
        list.map((c) => ({ from: c.from, text: `¿Seguís ahí? [${name}] cliente ${c.n}` })),
      );
      const g: Group = { name, written, latencies: [], missing: 0, problems: [], requests: 0, claim: [], turn: [] };
      const ids = written.map((w) => w.conversationId);
      let rows: { conversation_id: string; created_at: Date; summary: string }[] = [];
      await until(async () => {
        const r = await client.query(
          `SELECT data->>'conversationId' AS conversation_id, created_at, data->>'summary' AS summary FROM events
           WHERE kind = 'agent.handed_off' AND account_id = $1 AND data->>'conversationId' = ANY($2::text[])`,
          [acc.id, ids],
        );
        rows = r.rows;
        return rows.length >= ids.length;
      }, bound + 30_000);
      const byConv = new Map(rows.map((x) => [x.conversation_id, x]));
      for (const w of written) {
        const e = byConv.get(w.conversationId);
        if (!e) {
          g.missing++;
          continue;
        }
        g.latencies.push(e.created_at.getTime() - w.at);
        if (e.summary !== MODEL_FAILED) g.problems.push(`summary "${e.summary}"`);
      }
      if (rows.length > ids.length) g.problems.push(`${rows.length - ids.length} extra agent.handed_off events`);
      g.requests = llm.requests.slice(requestsBefore).filter((r) => r.lastUser?.includes(`[${name}]`)).length;
      // By the server's clock: the customer's message stored → the failing turn begun → handed off.
      const stages = await client.query(
        `SELECT EXTRACT(EPOCH FROM t.started_at - m.created_at) * 1000 AS claim, EXTRACT(EPOCH FROM e.created_at - t.started_at) * 1000 AS turn
         FROM messages m JOIN agent_turns t ON t.inbound_until = m.id
         JOIN events e ON e.kind = 'agent.handed_off' AND e.account_id = $2 AND e.data->>'conversationId' = m.conversation_id::text
         WHERE m.id = ANY($1::uuid[])`,
        [written.map((w) => w.messageId), acc.id],
      );
      g.claim = stages.rows.map((r) => Number(r.claim));
      g.turn = stages.rows.map((r) => Number(r.turn));
      groups.push(g);
    };
    // Half hang, half answer 500, at once; then the model server goes away and the rest write.
    llm.otherwise = (req: FakeLlmRequest) => (req.lastUser?.includes('[hanging]') ? { hang: true } : { status: 500 });
    await Promise.all([run('hanging'), run('500')]);
    await llm.close();
    llmOpen = false;
    await run('down');

    const outboundAfter = await outboundCount(client, conversations);
    const handling = await client.query(
      `SELECT handling_type, count(*)::int AS n FROM conversations WHERE id = ANY($1::uuid[]) GROUP BY handling_type`,
      [conversations],
    );
    const notTeam = handling.rows.filter((r) => r.handling_type !== 'team').reduce((t, r) => t + r.n, 0);
    const all = groups.flatMap((g) => g.latencies);
    const missing = groups.reduce((t, g) => t + g.missing, 0);
    const problems = groups.flatMap((g) => g.problems);
    const max = all.length ? Math.max(...all) : Number.POSITIVE_INFINITY;
    const ok = missing === 0 && problems.length === 0 && max <= bound + ALLOWANCE_MS && outboundAfter === outboundBefore && notTeam === 0;
    const line =
      `Model failing mid-conversation (LLM_TIMEOUT_MS ${TIMEOUT_MS}; bound ${bound} ms = timeout × 3 + 5 s${ALLOWANCE_MS ? `, + ${ALLOWANCE_MS} ms` : ''}, the service's own work included; ` +
      `times from the inbound request to the event's created_at): ${customers.length} customers with a stretch in progress (one turn answered) wrote again; ` +
      groups
        .map(
          (g) =>
            `${g.name === 'down' ? 'model server closed' : g.name === 'hanging' ? 'model hanging' : 'model answering 500'}: ${g.latencies.length}/${g.written.length} handed off (${summary(g.latencies)}; ${g.requests} model requests for these turns; server clock: message stored → turn begun max ${Math.max(...g.claim).toFixed(0)} ms, turn begun → handed off p50 ${quantile(g.turn, 0.5).toFixed(0)} / max ${Math.max(...g.turn).toFixed(0)} ms)`,
        )
        .join('; ') +
      `; all: ${all.length} handed off, ${summary(all)}, ${missing} never handed off; ${outboundAfter - outboundBefore} replies sent by the failed turns; ` +
      `${notTeam} conversations not with the team afterwards` +
      (problems.length ? `; problems: ${problems.slice(0, 3).join('; ')}` : '');
    return { ok, line };
  } finally {
    await server.stop();
    await client.end().catch(() => {});
    if (llmOpen) await llm.close();
  }
}

async function outboundCount(client: pg.Client, conversations: string[]): Promise<number> {
  const r = await client.query(
    `SELECT count(*)::int AS n FROM messages WHERE direction = 'outbound' AND conversation_id = ANY($1::uuid[])`,
    [conversations],
  );
  return r.rows[0].n;
}

// ---------------------------------------------------------------------------------------------
// 2. SIGKILL mid-turn.

/** The texts the model answers to a customer message: distinct per message, the same when asked again. */
const replyTexts = (asked: string) => Array.from({ length: REPLIES }, (_, i) => `Respuesta ${i + 1}/${REPLIES} a «${asked}»`);

interface TurnAtKill {
  asked: string;
  status: 'calling' | 'decided' | 'done';
  replies_started: number;
}

export async function agentsKill(env: Record<string, string>): Promise<{ ok: boolean; line: string }> {
  const llm: FakeLlm = await startFakeLlm();
  // Every turn: REPLIES replies to the customer's latest message, after 200–2,000 ms.
  llm.otherwise = (req) => ({
    after: between(LATENCY_MIN_MS, LATENCY_MAX_MS),
    answer: { text: null, toolCalls: replyTexts(req.lastUser ?? '?').map(reply) },
  });
  const client = new pg.Client({ connectionString: env.DATABASE_URL });
  let server = await startServer({ ...env, LLM_BASE_URL: llm.url, LLM_MODEL: 'fake', LLM_TIMEOUT_MS: '5000' });
  try {
    await client.connect();
    const acc = await agentAccount(server, 'faults-agents-kill');
    const phones = Array.from({ length: KILL_CUSTOMERS }, () => nextPhone(4));
    const acknowledged: Written[] = [];
    const atKill: TurnAtKill[] = [];
    const kills: string[] = [];
    let leasesMoved = 0;
    let settleMax = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      const written = await writeAll(
        server,
        acc.id,
        phones.map((from, i) => ({ from, text: `Mensaje ${round} del cliente ${i}` })),
      );
      acknowledged.push(...written);
      // Kill at a random moment while the model answers (200–2,000 ms after each request).
      const delay = between(100, 1500);
      await sleep(delay);
      await server.kill();
      const turns = await client.query(
        `SELECT m.text AS asked, t.status, t.replies_started FROM agent_turns t JOIN messages m ON m.id = t.inbound_until
         WHERE m.text LIKE $1`,
        [`Mensaje ${round} del%`],
      );
      const these: TurnAtKill[] = turns.rows;
      atKill.push(...these);
      const calling = these.filter((t) => t.status === 'calling').length;
      const between0 = these.filter((t) => t.status === 'decided' && t.replies_started === 0).length;
      const mid = these.filter((t) => t.status === 'decided' && t.replies_started > 0 && t.replies_started < REPLIES).length;
      const last = these.filter((t) => t.status === 'decided' && t.replies_started === REPLIES).length;
      const done = these.filter((t) => t.status === 'done').length;
      kills.push(
        `round ${round} killed ${delay} ms after the writes: ${calling} waiting on the model, ${between0} answer stored and no reply started, ${mid} between replies (1–${REPLIES - 1} started), ${last} with every reply started and the turn not done, ${done} done, ${KILL_CUSTOMERS - these.length} not begun`,
      );
      // The killed process's leases (LLM_TIMEOUT_MS × 3 + 65 s) "pass" while it is down: moved
      // into the past by SQL instead of waiting 80 s.
      leasesMoved += (
        await client.query(`UPDATE agent_stretches SET run_at = now() - interval '1 second' WHERE status = 'running' AND claim IS NOT NULL`)
      ).rowCount!;
      server = await startServer(server.env, { port: server.port });
      const t0 = Date.now();
      const settled = await until(async () => {
        await must(admin(server.url, 'POST', '/jobs/agents/run'), 200, 'run agents');
        return (await unanswered(client)) === 0;
      }, 60_000);
      settleMax = Math.max(settleMax, Date.now() - t0);
      if (!settled) kills.push(`round ${round} did not settle in 60 s`);
    }

    // Every reply at most once (per conversation and text: each text is one reply of one turn).
    const sends = await client.query(
      `SELECT conversation_id, text, status FROM messages WHERE direction = 'outbound' AND account_id = $1`,
      [acc.id],
    );
    const count = new Map<string, number>();
    const status = new Map<string, string>();
    for (const r of sends.rows) {
      const k = `${r.conversation_id}|${r.text}`;
      count.set(k, (count.get(k) ?? 0) + 1);
      status.set(k, r.status);
    }
    const twice = [...count.values()].filter((n) => n > 1).length;
    const pending = sends.rows.filter((r) => r.status === 'pending').length;
    let allReplies = 0;
    let someReplies = 0;
    let noReplies = 0;
    for (const w of acknowledged) {
      const got = replyTexts(w.text).filter((t) => status.get(`${w.conversationId}|${t}`) === 'sent').length;
      if (got === REPLIES) allReplies++;
      else if (got > 0) someReplies++;
      else noReplies++;
    }
    // Turns asked of the model more than once: allowed only when its answer was not stored yet.
    const asks = new Map<string, number>();
    for (const r of llm.requests) asks.set(r.lastUser ?? '?', (asks.get(r.lastUser ?? '?') ?? 0) + 1);
    const reasked = [...asks.values()].filter((n) => n > 1).length;
    const reaskedAfterStored = atKill.filter((t) => t.status !== 'calling' && (asks.get(t.asked) ?? 0) > 1).length;
    const callingAtKill = atKill.filter((t) => t.status === 'calling').length;
    // None lost: every acknowledged message is stored, and no stretch runs with one unanswered.
    const stored = await client.query(`SELECT id FROM messages WHERE id = ANY($1::uuid[])`, [acknowledged.map((w) => w.messageId)]);
    const lostInbound = acknowledged.length - stored.rowCount!;
    const leftUnanswered = await unanswered(client);
    const ended = await client.query(
      `SELECT ended_by, summary, count(*)::int AS n FROM agent_stretches WHERE account_id = $1 AND status = 'ended' GROUP BY ended_by, summary`,
      [acc.id],
    );
    const endedLine = ended.rows.map((r) => `${r.n} ${r.ended_by} "${r.summary ?? ''}"`).join(', ') || 'none';

    const ok = twice === 0 && reaskedAfterStored === 0 && lostInbound === 0 && leftUnanswered === 0;
    const line =
      `Agents through SIGKILL: ${KILL_CUSTOMERS} customers × ${ROUNDS} rounds (one SIGKILL each), the model answering each turn with ${REPLIES} replies after ${LATENCY_MIN_MS}–${LATENCY_MAX_MS} ms; ` +
      `${kills.join('; ')}; ${leasesMoved} leases moved into the past by SQL; each round settled in ≤ ${(settleMax / 1000).toFixed(1)} s; ` +
      `${acknowledged.length} customer messages acknowledged, ${lostInbound} lost, ${leftUnanswered} left unanswered in a running stretch; stretches ended: ${endedLine}; ` +
      `${allReplies} turns got all ${REPLIES} replies sent, ${someReplies} some, ${noReplies} none; ${pending} replies left pending (in doubt, not sent again); ` +
      `${reasked} turns asked of the model again after the restart (${callingAtKill} were waiting on it at a kill), ${reaskedAfterStored} asked again although their answer was stored; ` +
      `${twice} replies sent twice`;
    return { ok, line };
  } finally {
    await server.stop();
    await client.end().catch(() => {});
    await llm.close();
  }
}

/** Running stretches with a customer message no turn answered yet. */
async function unanswered(client: pg.Client): Promise<number> {
  const r = await client.query(
    `SELECT count(*)::int AS n FROM agent_stretches s WHERE s.status = 'running' AND EXISTS (
       SELECT 1 FROM messages m WHERE m.conversation_id = s.conversation_id AND m.direction = 'inbound'
       AND m.id >= s.since_id AND (s.answered_until IS NULL OR m.id > s.answered_until))`,
  );
  return r.rows[0].n;
}
