// Automations through a SIGKILL (issue 14 "What it must show"): 200 executions caught mid-flow —
// waiting for an answer (ask), on a timer (wait), or inside an http step against a receiver that
// answers after 3 s — the server is killed, started again on the same database, the customers
// answer, and every execution must end in a valid state, no step's message sent twice, none lost.
import { createServer } from 'node:http';
import pg from 'pg';
import { admin, benchAccount, must, nextPhone, type Server, sleep, startServer, UNLIMITED } from '../bench/lib.js';

const ASKS = 70;
const WAITS = 70;
const HTTPS = 60;
const RECEIVER_DELAY_MS = 3000;

/** Receiver for the http steps: counts requests per phone, answers 200 after RECEIVER_DELAY_MS. */
async function slowReceiver() {
  const hits = new Map<string, number>();
  let answered = 0;
  const srv = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      try {
        const phone = String(JSON.parse(body).phone);
        hits.set(phone, (hits.get(phone) ?? 0) + 1);
      } catch {
        hits.set('?', (hits.get('?') ?? 0) + 1);
      }
      setTimeout(() => {
        answered++;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      }, RECEIVER_DELAY_MS);
    });
  });
  // Requests of the killed server leave sockets behind: let them go.
  srv.on('clientError', () => {});
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(srv.address() as { port: number }).port}/consulta`,
    hits,
    answered: () => answered,
    close: () => {
      srv.closeAllConnections();
      srv.close();
    },
  };
}

/** Each flow's messages are distinct texts, so (conversation, text) identifies the step that sent it. */
const FLOWS = {
  ask: {
    keyword: 'pregunta',
    steps: [
      { id: 'hola', type: 'send', text: 'Hola, te hago una pregunta.' },
      { id: 'q', type: 'ask', text: '¿Cómo te llamás?', save: 'nombre' },
      { id: 'gracias', type: 'send', text: 'Gracias, {{nombre}}.' },
      { id: 'fin', type: 'end' },
    ],
  },
  wait: {
    keyword: 'espera',
    steps: [
      { id: 'aviso', type: 'send', text: 'Te escribimos en un minuto.' },
      { id: 'w', type: 'wait', minutes: 1 },
      { id: 'paso', type: 'send', text: 'Pasó el minuto.' },
      { id: 'fin', type: 'end' },
    ],
  },
  http: {
    keyword: 'consulta',
    steps: [
      { id: 'aviso', type: 'send', text: 'Consultando tu pedido…' },
      { id: 'h', type: 'http', method: 'POST', url: '', body: { phone: '{{contact.phone}}' }, save: 'r', timeoutMs: 15_000 },
      { id: 'listo', type: 'send', text: 'Listo, tu pedido está en camino.' },
      { id: 'fin', type: 'end' },
    ],
  },
} as const;
type Kind = keyof typeof FLOWS;

/** Every text a flow sends, with the step that sends it (`{{nombre}}` becomes the answer). */
const STEP_TEXTS: Record<Kind, string[]> = {
  ask: ['Hola, te hago una pregunta.', '¿Cómo te llamás?', 'Gracias, Ana.'],
  wait: ['Te escribimos en un minuto.', 'Pasó el minuto.'],
  http: ['Consultando tu pedido…', 'Listo, tu pedido está en camino.'],
};

interface ExecRow {
  id: string;
  automation_id: string;
  conversation_id: string;
  contact_id: string;
  status: string;
  state: string;
  current_step_id: string | null;
  error: string | null;
  phone: string;
}

async function executions(client: pg.Client): Promise<ExecRow[]> {
  const r = await client.query(
    `SELECT e.id, e.automation_id, e.conversation_id, e.contact_id, e.status, e.state, e.current_step_id, e.error, c.phone
     FROM automation_executions e JOIN contacts c ON c.id = e.contact_id`,
  );
  return r.rows;
}

export async function automationsKill(env: Record<string, string>): Promise<{ ok: boolean; line: string }> {
  const rec = await slowReceiver();
  const client = new pg.Client({ connectionString: env.DATABASE_URL });
  let server: Server = await startServer(env);
  try {
    await client.connect();
    const acc = await benchAccount(server.url, UNLIMITED, 'faults-automations');
    const flowIds = {} as Record<Kind, string>;
    for (const kind of Object.keys(FLOWS) as Kind[]) {
      const f = FLOWS[kind];
      const steps = f.steps.map((s) => (s.type === 'http' ? { ...s, url: rec.url } : s));
      const a = await must(
        admin(server.url, 'POST', `/accounts/${acc.id}/automations`, {
          name: `Faults ${kind}`,
          status: 'active',
          trigger: { type: 'keyword', keywords: [f.keyword], match: 'exact' },
          steps,
        }),
        201,
        `create ${kind} flow`,
      );
      flowIds[kind] = a.id;
    }
    const kindOf = new Map<string, Kind>(Object.entries(flowIds).map(([k, id]) => [id, k as Kind]));

    // 200 customers write; asks and waits first, then the http ones (so the kill finds them mid-request).
    const plan: [Kind, number][] = [
      ['ask', ASKS],
      ['wait', WAITS],
      ['http', HTTPS],
    ];
    const phones = new Map<string, Kind>();
    for (const [kind, n] of plan) {
      const list = Array.from({ length: n }, () => nextPhone(6));
      for (let i = 0; i < list.length; i += 20) {
        await Promise.all(
          list.slice(i, i + 20).map(async (from) => {
            const r = await admin(server.url, 'POST', '/sandbox/inbound', { accountId: acc.id, from, text: FLOWS[kind].keyword });
            if (r.status !== 201) throw new Error(`inbound: ${r.status} ${JSON.stringify(r.body)}`);
            phones.set(r.body.contactId, kind);
          }),
        );
      }
      if (kind === 'wait') {
        // Asks and waits at rest (asked / waiting) before the http ones start.
        const until = Date.now() + 30_000;
        for (;;) {
          const r = await client.query(
            `SELECT count(*)::int AS n FROM automation_executions WHERE state IN ('asked','waiting') AND claim IS NULL`,
          );
          if (r.rows[0].n >= ASKS + WAITS || Date.now() > until) break;
          await sleep(100);
        }
      }
    }
    // Kill while http requests are in flight: once the receiver has answered some of them.
    const until = Date.now() + 30_000;
    while (rec.answered() < 16 && Date.now() < until) await sleep(50);
    await sleep(1000);
    const answeredBeforeKill = rec.answered();
    const requestsBeforeKill = [...rec.hits.values()].reduce((a, b) => a + b, 0);
    await server.kill();
    const atKill = await executions(client);
    const atKillStates = countBy(atKill, (e) => `${kindOf.get(e.automation_id)} ${e.status === 'running' ? e.state : e.status}`);
    const startedUnfinished = (
      await client.query(`SELECT count(*)::int AS n FROM automation_executions WHERE status = 'running' AND effect_step IS NOT NULL`)
    ).rows[0].n as number;

    // Time passes while the server is down: the 1-minute waits fall due, and the killed process's
    // 120 s leases lapse. We move those times into the past instead of sleeping 2 minutes.
    const movedWaits = (
      await client.query(
        `UPDATE automation_executions SET deadline_at = now() - interval '1 second', run_at = now() - interval '1 second'
         WHERE status = 'running' AND state = 'waiting'`,
      )
    ).rowCount;
    const lapsedLeases = (
      await client.query(
        `UPDATE automation_executions SET run_at = now() - interval '1 second' WHERE status = 'running' AND claim IS NOT NULL`,
      )
    ).rowCount;

    server = await startServer(server.env, { port: server.port });
    // The customers of the asks answer.
    const asked = (await executions(client)).filter((e) => kindOf.get(e.automation_id) === 'ask' && e.status === 'running');
    let answered = 0;
    for (let i = 0; i < asked.length; i += 20) {
      await Promise.all(
        asked.slice(i, i + 20).map(async (e) => {
          const r = await admin(server.url, 'POST', '/sandbox/inbound', { accountId: acc.id, from: e.phone, text: 'Ana' });
          if (r.status === 201) answered++;
        }),
      );
    }
    // Until every execution has ended (or 90 s).
    const t0 = Date.now();
    let all = await executions(client);
    while (all.some((e) => e.status === 'running') && Date.now() - t0 < 90_000) {
      await sleep(250);
      all = await executions(client);
    }
    const settleSeconds = (Date.now() - t0) / 1000;

    // Outbound messages per conversation and text (each text is one step of one flow).
    const sends = await client.query(
      `SELECT conversation_id, text, count(*)::int AS n FROM messages WHERE direction = 'outbound' GROUP BY conversation_id, text`,
    );
    const sent = new Map<string, number>();
    for (const r of sends.rows) sent.set(`${r.conversation_id}|${r.text}`, r.n);
    const repeatedSends = sends.rows.filter((r) => r.n > 1).length;
    const repeatedRequests = [...rec.hits.values()].filter((n) => n > 1).length;

    const problems: string[] = [];
    const byOutcome = new Map<string, number>();
    const seenContacts = new Set<string>();
    /** Interrupted http steps whose request never reached the receiver (queued for a connection at the kill). */
    let interruptedUnsent = 0;
    for (const e of all) {
      const kind = kindOf.get(e.automation_id);
      seenContacts.add(e.contact_id);
      if (!kind) {
        problems.push(`execution ${e.id} of an unknown flow`);
        continue;
      }
      const interrupted = e.status === 'failed' && /interrumpid[ao]/i.test(e.error ?? '');
      const outcome = `${kind} ${e.status}${interrupted ? ' (interrumpida)' : ''}`;
      byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
      const texts = STEP_TEXTS[kind];
      const has = (t: string) => sent.get(`${e.conversation_id}|${t}`) ?? 0;
      if (e.status === 'completed') {
        const missing = texts.filter((t) => has(t) !== 1);
        if (missing.length) problems.push(`${kind} ${e.id} completed without exactly one "${missing[0]}"`);
        if (kind === 'http' && (rec.hits.get(e.phone) ?? 0) !== 1)
          problems.push(`http ${e.id} completed with ${rec.hits.get(e.phone) ?? 0} requests`);
      } else if (kind === 'http' && interrupted) {
        if ((rec.hits.get(e.phone) ?? 0) === 0) interruptedUnsent++;
        if (has(texts[1]!) !== 0) problems.push(`http ${e.id} interrumpida but its last step's message was sent`);
        if ((rec.hits.get(e.phone) ?? 0) > 1) problems.push(`http ${e.id} requested ${rec.hits.get(e.phone)} times`);
      } else {
        problems.push(`${kind} ${e.id} ended ${e.status}/${e.state} at ${e.current_step_id}: ${e.error ?? ''}`);
      }
      if (phones.get(e.contact_id) !== kind) problems.push(`${kind} ${e.id} on a contact that wrote another keyword`);
    }
    const lost = [...phones.keys()].filter((c) => !seenContacts.has(c)).length;
    const extra = all.length - phones.size;
    const ok = problems.length === 0 && lost === 0 && extra === 0 && repeatedSends === 0 && repeatedRequests === 0 && all.length === 200;
    const outcomes = [...byOutcome.entries()]
      .sort()
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    const line =
      `Automations through SIGKILL: ${phones.size} executions started (${ASKS} ask, ${WAITS} wait 1 min, ${HTTPS} http to a receiver answering after ${RECEIVER_DELAY_MS / 1000} s); ` +
      `killed with ${startedUnfinished} sends/requests started and unfinished, ${requestsBeforeKill} http requests received (${answeredBeforeKill} answered); at the kill ${fmtCounts(atKillStates)}; ` +
      `while down, ${movedWaits} waits and ${lapsedLeases} leases of 120 s moved into the past by SQL (the minute and the lease "passed"); ` +
      `after the restart ${answered} customers answered; all ended in ${settleSeconds.toFixed(1)} s: ${outcomes}; ` +
      `(${interruptedUnsent} of the interrumpidas had not reached the receiver: queued for one of the 16 connections per origin); ` +
      `${repeatedSends} messages sent twice (per conversation and step), ${repeatedRequests} http requests repeated, ${lost} executions lost, ${extra} extra` +
      (problems.length ? `; ${problems.length} invalid, e.g. ${problems.slice(0, 3).join('; ')}` : '');
    return { ok, line };
  } finally {
    await server.stop();
    await client.end().catch(() => {});
    rec.close();
  }
}

function countBy<T>(xs: T[], key: (x: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const x of xs) m.set(key(x), (m.get(key(x)) ?? 0) + 1);
  return m;
}
const fmtCounts = (m: Map<string, number>) =>
  [...m.entries()]
    .sort()
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
