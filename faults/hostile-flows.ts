// Hostile flows and agents (issue 25): what a hostile customer and a careless flow author tried,
// against the real server process on PostgreSQL + Redis, with GET /healthz polled throughout.
// 1. A `matches` condition `(a|a)*b` and customers answering thousands of `a`s, with a SIGKILL while
//    they are processed → every execution ends by its else branch after the restart, no crash loop.
// 2. A webhook flow whose http step POSTs to its own hook URL → the chain stops at the hop bound.
// 3. Customer text `../../admin/users/all?x=` in an http step's URL → the receiver sees one
//    path segment, never /admin.
// 4. A model answering 300 replies, one of 100,000 characters, and a flow send of 200,011
//    characters → at most 3 messages a turn, none over 4,096 characters, the flow step failed.
// 5. Wrong MCP app tokens and hook tokens from one IP → that IP is blocked on every door; malformed
//    JSON-RPC on /mcp → a JSON-RPC error, not a 5xx.
// The verdict: 0 × 5xx, /healthz p99 ≤ 100 ms while the server is up, 0 runaway executions.
import { createServer } from 'node:http';
import pg from 'pg';
import { admin, benchAccount, must, nextPhone, quantile, type Server, sleep, startServer, UNLIMITED } from '../bench/lib.js';
import { startFakeLlm } from '../test/fakes/llm.js';
import { agentAccount } from './agents-kill.js';

const REGEX_CUSTOMERS = 20;
const WHATSAPP_MAX = 4096;
/** The most executions one hook call may chain (the first and 3 hops). */
const MAX_CHAIN = 4;

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
}

/** An outside system the http steps call: records each request, answers 200 {"ok":true}. */
async function storeApi() {
  const seen: Seen[] = [];
  const srv = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(srv.address() as { port: number }).port}`, seen, close: () => srv.close() };
}

/** Polls GET /healthz every 25 ms while `up()`; keeps each answer's time and status. */
function healthMonitor(server: () => Server, up: () => boolean) {
  const times: number[] = [];
  const bad: number[] = [];
  let stop = false;
  const done = (async () => {
    while (!stop) {
      if (up()) {
        const t = performance.now();
        try {
          const r = await fetch(`${server().url}/healthz`, { signal: AbortSignal.timeout(5000) });
          await r.arrayBuffer();
          if (up()) {
            times.push(performance.now() - t);
            if (r.status !== 200) bad.push(r.status);
          }
        } catch {
          if (up()) bad.push(0);
        }
      }
      await sleep(25);
    }
  })();
  return {
    times,
    bad,
    async stop() {
      stop = true;
      await done;
    },
  };
}

/** Every status the scenario got, to count 5xx. */
const statuses = new Map<number, number>();
const fiveXX: string[] = [];
async function hit(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(`${url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  if (r.status >= 500) fiveXX.push(`${method} ${path.split('/').slice(0, 3).join('/')} → ${r.status}`);
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: r.status, body: json, headers: r.headers };
}

async function inbound(server: Server, accountId: string, from: string, text: string) {
  const r = await admin(server.url, 'POST', '/sandbox/inbound', { accountId, from, text });
  statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  if (r.status >= 500) fiveXX.push(`POST /sandbox/inbound → ${r.status}`);
  return r;
}

async function until(check: () => Promise<boolean>, maxMs: number, everyMs = 200): Promise<boolean> {
  const end = Date.now() + maxMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await sleep(everyMs);
  }
}

const one = async (db: pg.Client, sql: string, params: unknown[] = []) => Number((await db.query(sql, params)).rows[0].n);

export async function hostileFlows(env: Record<string, string>): Promise<{ ok: boolean; line: string }> {
  const api = await storeApi();
  const llm = await startFakeLlm();
  const db = new pg.Client({ connectionString: env.DATABASE_URL });
  const fullEnv = { ...env, TRUST_PROXY: '1', LLM_BASE_URL: llm.url, LLM_MODEL: 'fake', ALLOW_PRIVATE_WEBHOOKS: 'on' };
  let server: Server = await startServer(fullEnv);
  let up = true;
  const health = healthMonitor(
    () => server,
    () => up,
  );
  const parts: string[] = [];
  const problems: string[] = [];
  try {
    await db.connect();
    const acc = await benchAccount(server.url, UNLIMITED, 'faults-hostile-flows');
    const flow = (body: Record<string, unknown>) =>
      must(admin(server.url, 'POST', `/accounts/${acc.id}/automations`, { status: 'active', ...body }), 201, `flow ${body.name}`);
    const hookPath = (a: { webhookUrl: string }) => new URL(a.webhookUrl).pathname;

    // 1. The regex, with a SIGKILL while the answers are processed.
    const regex = await flow({
      name: 'Código',
      trigger: { type: 'keyword', keywords: ['codigo'] },
      steps: [
        { id: 'q', type: 'ask', text: '¿Código?', save: 'r' },
        // biome-ignore lint/suspicious/noThenProperty: automations.md names the field `then` (a step id)
        { id: 'c', type: 'condition', if: { var: 'r', op: 'matches', value: '(a|a)*b' }, then: 'si', else: 'no' },
        { id: 'si', type: 'set_attribute', attribute: 'rama', value: 'si', next: 'fin' },
        { id: 'no', type: 'set_attribute', attribute: 'rama', value: 'no' },
        { id: 'fin', type: 'end' },
      ],
    });
    const regexPhones = Array.from({ length: REGEX_CUSTOMERS }, () => nextPhone(7));
    await Promise.all(regexPhones.map((p) => inbound(server, acc.id, p, 'codigo')));
    await until(
      async () =>
        (await one(db, `SELECT count(*)::int AS n FROM automation_executions WHERE automation_id = $1 AND state = 'asked'`, [regex.id])) >=
        REGEX_CUSTOMERS,
      30_000,
    );
    await Promise.all(regexPhones.map((p) => inbound(server, acc.id, p, 'a'.repeat(4096))));
    up = false;
    await server.kill();
    // The killed process's leases "pass" (moved into the past instead of waiting for them).
    await db.query(`UPDATE automation_executions SET run_at = now() - interval '1 second' WHERE status = 'running' AND claim IS NOT NULL`);
    server = await startServer(server.env, { port: server.port });
    up = true;
    const regexDone = await until(
      async () =>
        (await one(db, `SELECT count(*)::int AS n FROM automation_executions WHERE automation_id = $1 AND status = 'running'`, [
          regex.id,
        ])) === 0,
      60_000,
    );
    const elseBranch = await one(
      db,
      `SELECT count(*)::int AS n FROM automation_executions e JOIN contacts c ON c.id = e.contact_id
       WHERE e.automation_id = $1 AND e.status = 'completed' AND c.attributes->>'rama' = 'no'`,
      [regex.id],
    );
    if (!regexDone || elseBranch !== REGEX_CUSTOMERS) problems.push(`regex: ${elseBranch}/${REGEX_CUSTOMERS} by the else branch`);
    parts.push(
      `regex (a|a)*b × ${REGEX_CUSTOMERS} answers of 4,096 a's with a SIGKILL: ${elseBranch}/${REGEX_CUSTOMERS} ended by the else branch after the restart`,
    );

    // 2. A flow calling its own hook.
    const loop = await must(
      admin(server.url, 'POST', `/accounts/${acc.id}/automations`, {
        name: 'Bucle',
        status: 'active',
        trigger: { type: 'webhook' },
        steps: [{ id: 'fin', type: 'end' }],
      }),
      201,
      'loop flow',
    );
    // Each start passes the next phone on (a conversation runs one execution at a time), so only
    // the hop bound can stop the chain.
    const loopPhones = Array.from({ length: 10 }, () => nextPhone(7));
    const shifted = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`p${i + 1}`, `{{webhook.p${i + 2}}}`]));
    await must(
      admin(server.url, 'PATCH', `/accounts/${acc.id}/automations/${loop.id}`, {
        steps: [
          {
            id: 'h',
            type: 'http',
            method: 'POST',
            url: `${server.url}${hookPath(loop)}`,
            body: { phone: '{{webhook.p1}}', ...shifted },
            save: 'r',
          },
        ],
      }),
      200,
      'loop steps',
    );
    await hit(server.url, 'POST', hookPath(loop), {
      phone: loopPhones[0],
      ...Object.fromEntries(loopPhones.slice(1).map((p, i) => [`p${i + 1}`, p])),
    });
    await sleep(5000);
    const chained = await one(db, 'SELECT count(*)::int AS n FROM automation_executions WHERE automation_id = $1', [loop.id]);
    if (chained > MAX_CHAIN) problems.push(`loop: ${chained} executions`);
    parts.push(`flow POSTing to its own hook: ${chained} executions in 5 s (bound ${MAX_CHAIN})`);

    // 3. Customer text in a URL.
    await flow({
      name: 'Retener pedido',
      trigger: { type: 'keyword', keywords: ['retener'] },
      steps: [
        { id: 'q', type: 'ask', text: '¿Número de pedido?', save: 'pedido' },
        {
          id: 'h',
          type: 'http',
          method: 'DELETE',
          url: `${api.url}/api/orders/{{pedido}}/hold`,
          headers: { Authorization: 'Bearer tienda-secreta' },
          save: 'r',
        },
        { id: 'fin', type: 'end' },
      ],
    });
    const urlPhone = nextPhone(7);
    await inbound(server, acc.id, urlPhone, 'retener');
    await sleep(300);
    await inbound(server, acc.id, urlPhone, '../../admin/users/all?x=');
    await until(async () => api.seen.length > 0, 15_000);
    const call = api.seen[0];
    const contained = !!call && call.url.startsWith('/api/orders/') && call.url.endsWith('/hold') && !call.url.includes('/admin/');
    if (!contained) problems.push(`url: the store saw ${call ? `${call.method} ${call.url}` : 'nothing'}`);
    parts.push(`../../admin/users/all?x= in a path: the store saw ${call ? `${call.method} ${call.url}` : 'nothing'}`);

    // 4a. A flow send of 200,011 characters.
    const big = await flow({ name: 'Grande', trigger: { type: 'webhook' }, steps: [{ id: 's', type: 'send', text: '{{webhook.big}}' }] });
    const bigPhone = nextPhone(7);
    await inbound(server, acc.id, bigPhone, 'hola');
    await hit(server.url, 'POST', hookPath(big), { phone: bigPhone, big: 'x'.repeat(200_011) });
    await until(
      async () =>
        (await one(db, `SELECT count(*)::int AS n FROM automation_executions WHERE automation_id = $1 AND status <> 'running'`, [big.id])) >
        0,
      15_000,
    );
    const bigStatus = (await db.query('SELECT status FROM automation_executions WHERE automation_id = $1', [big.id])).rows[0]?.status;
    if (bigStatus !== 'failed') problems.push(`flow send of 200,011: execution ${bigStatus}`);

    // 4b. An agent whose model answers 300 replies, then one reply of 100,000 characters.
    const agentAcc = await agentAccount(server, 'faults-hostile-agent');
    const sentence = 'Esta es una oración bastante larga sobre la yerba que vendemos en la tienda. ';
    llm.otherwise = (req) =>
      /spam/.test(req.lastUser ?? '')
        ? { text: null, toolCalls: Array.from({ length: 300 }, (_, i) => ({ name: 'reply', args: { text: `Respuesta ${i}` } })) }
        : { text: null, toolCalls: [{ name: 'reply', args: { text: sentence.repeat(Math.ceil(100_000 / sentence.length)) } }] };
    const spam = await inbound(server, agentAcc.id, nextPhone(7), 'spam');
    const long = await inbound(server, agentAcc.id, nextPhone(7), 'largo');
    const outbound = async (conversationId: string) =>
      (
        await db.query(`SELECT length(text) AS n FROM messages WHERE conversation_id = $1 AND direction = 'outbound'`, [conversationId])
      ).rows.map((r) => Number(r.n));
    await until(
      async () => (await outbound(spam.body.conversationId)).length > 0 && (await outbound(long.body.conversationId)).length > 0,
      20_000,
    );
    await sleep(2000);
    const spamSent = await outbound(spam.body.conversationId);
    const longSent = await outbound(long.body.conversationId);
    const longest = Math.max(
      0,
      ...spamSent,
      ...longSent,
      await one(db, `SELECT coalesce(max(length(text)), 0)::int AS n FROM messages WHERE direction = 'outbound'`),
    );
    if (spamSent.length > 3 || longSent.length > 3 || longest > WHATSAPP_MAX)
      problems.push(`output: ${spamSent.length} and ${longSent.length} messages, longest ${longest}`);
    parts.push(
      `300 replies → ${spamSent.length} messages; a 100,000-character reply → ${longSent.length} messages (${longSent.join(', ')} characters); a flow send of 200,011 → execution ${bigStatus}; longest outbound ${longest}`,
    );

    // 5. Doors: wrong MCP tokens and hook tokens from one IP, malformed JSON-RPC.
    const appToken = (await must(admin(server.url, 'POST', `/accounts/${acc.id}/ai-apps`, { name: 'Claude de Ana' }), 201, 'ai app'))
      .token as string;
    const mcpHeaders = (token: string, ip: string) => ({
      authorization: `Bearer ${token}`,
      'x-forwarded-for': ip,
      accept: 'application/json, text/event-stream',
    });
    const rpc = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    for (let i = 0; i < 25; i++) await hit(server.url, 'POST', '/mcp', rpc, mcpHeaders(`etk_app_${'x'.repeat(40)}${i}`, '203.0.113.9'));
    const mcpBlocked = (await hit(server.url, 'POST', '/mcp', rpc, mcpHeaders(appToken, '203.0.113.9'))).status;
    const apiBlocked = (
      await hit(server.url, 'GET', '/api/v1/me', undefined, { authorization: `Bearer ${acc.key}`, 'x-forwarded-for': '203.0.113.9' })
    ).status;
    for (let i = 0; i < 25; i++)
      await hit(server.url, 'POST', `/hooks/automations/${'y'.repeat(43)}`, { i }, { 'x-forwarded-for': '203.0.113.10' });
    const hookBlocked = (await hit(server.url, 'POST', hookPath(big), { phone: bigPhone }, { 'x-forwarded-for': '203.0.113.10' })).status;
    const malformed = await hit(server.url, 'POST', '/mcp', '{"jsonrpc": "2.0", "id": 1, "method"', {
      ...mcpHeaders(appToken, '203.0.113.11'),
    });
    const emptyBatch = await hit(server.url, 'POST', '/mcp', [], mcpHeaders(appToken, '203.0.113.11'));
    const jsonRpc = malformed.body?.error?.code === -32700 && emptyBatch.body?.error?.code === -32600;
    if (mcpBlocked !== 429 || apiBlocked !== 429 || hookBlocked !== 429 || !jsonRpc)
      problems.push(
        `doors: mcp ${mcpBlocked}, api ${apiBlocked}, hook ${hookBlocked}, malformed ${malformed.status} ${malformed.body?.error?.code}, [] ${emptyBatch.status} ${emptyBatch.body?.error?.code}`,
      );
    parts.push(
      `25 wrong app tokens → that IP on /mcp ${mcpBlocked}, on /api/v1 ${apiBlocked}; 25 wrong hook tokens → hook ${hookBlocked}; malformed JSON ${malformed.status} (${malformed.body?.error?.code}), [] ${emptyBatch.status} (${emptyBatch.body?.error?.code})`,
    );
  } catch (err) {
    problems.push(`crashed: ${(err as Error).stack ?? err}`);
  } finally {
    await health.stop();
    await server.stop();
    await db.end().catch(() => {});
    api.close();
    await llm.close();
  }
  const p99 = health.times.length ? quantile(health.times, 0.99) : Number.POSITIVE_INFINITY;
  const ok = problems.length === 0 && fiveXX.length === 0 && health.bad.length === 0 && p99 <= 100;
  const line =
    `Hostile flows and agents: ${parts.join('; ')}; ` +
    `${fiveXX.length} × 5xx${fiveXX.length ? ` (${fiveXX.slice(0, 3).join(', ')})` : ''}; /healthz ${health.times.length} polls while up, p99 ${p99.toFixed(1)} ms, max ${Math.max(0, ...health.times).toFixed(0)} ms, ${health.bad.length} not 200` +
    (problems.length ? `; problems: ${problems.join('; ')}` : '');
  return { ok, line };
}
