// An MCP tools/call of list_templates against GET /api/v1/templates on the same server (the same
// service call and the same JSON, behind the MCP transport instead of the REST guard pipeline), and
// what building one server of the MCP pool costs, paid once per server and not per request
// (src/mcp/exchange.ts; docs/mcp.md, docs/performance.md).
import { createHash, randomBytes } from 'node:crypto';
import { serverPool } from '../../src/mcp/exchange.js';
import { buildMcpServer } from '../../src/mcp/server.js';
import {
  admin,
  benchAccount,
  CONNECTIONS,
  checkClean,
  DURATION,
  type LoadResult,
  load,
  meanOf,
  must,
  quantile,
  type Server,
  UNLIMITED,
} from '../lib.js';
import { record } from '../report.js';

/** Slices of each target's load taken in turn, so a drift of the machine's speed hits both alike. */
const SLICES = 4;
const TARGETS = ['mcp', 'oauth', 'rest'] as const;
type Target = (typeof TARGETS)[number];

/** The JSON-RPC request of every MCP load request (stateless: no initialize needed first). */
const CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_templates', arguments: {} } });
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

export async function mcpFigures(server: Server): Promise<void> {
  // No caps on either side: neither the REST request cap nor the app's tool-call cap refuses.
  const acc = await benchAccount(server.url, { ...UNLIMITED, aiApps: null, mcpCallsPerMinute: null }, 'bench-mcp');
  for (const [name, end] of [
    ['confirmacion_pedido', 'está confirmado'],
    ['pedido_en_camino', 'está en camino'],
  ]) {
    await must(
      admin(server.url, 'POST', `/accounts/${acc.id}/templates`, {
        name,
        category: 'UTILITY',
        body: `Hola {{nombre}}, tu pedido {{pedido}} ${end}.`,
        variables: [
          { name: 'nombre', label: 'Nombre', example: 'Ana' },
          { name: 'pedido', label: 'Número de pedido', example: '1234' },
        ],
        status: 'APPROVED',
      }),
      201,
      'create template',
    );
  }
  const app = await must(admin(server.url, 'POST', `/accounts/${acc.id}/ai-apps`, { name: 'bench' }), 201, 'connect AI app');
  await checkSameJson(server.url, acc.key, app.token);
  const oauthToken = await oauthAccessToken(server.url, acc.id);
  await checkSameJson(server.url, acc.key, oauthToken);

  const pid = server.proc.pid;
  const targets: Record<Target, Parameters<typeof load>[0]> = {
    mcp: { url: `${server.url}/mcp`, method: 'POST', headers: { authorization: `Bearer ${app.token}`, ...MCP_HEADERS }, body: CALL, pid },
    oauth: {
      url: `${server.url}/mcp`,
      method: 'POST',
      headers: { authorization: `Bearer ${oauthToken}`, ...MCP_HEADERS },
      body: CALL,
      pid,
    },
    rest: { url: `${server.url}/api/v1/templates`, headers: { authorization: `Bearer ${acc.key}` }, pid },
  };
  const runs: Record<Target, LoadResult[]> = { mcp: [], oauth: [], rest: [] };
  for (let slice = 0; slice < SLICES; slice++) {
    for (const name of TARGETS) {
      runs[name].push(await load({ ...targets[name], duration: DURATION / SLICES, connections: CONNECTIONS, warmup: slice === 0 }));
    }
  }
  const [mcp, oauth, rest] = TARGETS.map((t) => meanOf(runs[t])) as [LoadResult, LoadResult, LoadResult];
  checkClean('MCP tools/call list_templates', mcp);
  checkClean('MCP tools/call list_templates (OAuth token)', oauth);
  checkClean('GET /api/v1/templates', rest);
  const cpu = (r: LoadResult) => (r.cpuUs === undefined ? '?' : r.cpuUs.toFixed(0));
  const ratio = mcp.rps / rest.rps;
  record({
    figure: 'MCP tools/call list_templates req/s',
    value: mcp.rps,
    unit: 'req/s',
    floor: 'GET /templates, same server',
    floorValue: rest.rps,
    ratio,
    goal: '≥ 0.5',
    pass: ratio >= 0.5,
    note: `p99 ${mcp.p99} vs ${rest.p99} ms; server CPU ${cpu(mcp)} vs ${cpu(rest)} µs per request`,
  });
  const byOauth = oauth.rps / mcp.rps;
  record({
    figure: 'MCP tools/call with an OAuth access token req/s',
    value: oauth.rps,
    unit: 'req/s',
    floor: 'the same call with an etk_app_ token',
    floorValue: mcp.rps,
    ratio: byOauth,
    goal: '≥ 0.9',
    pass: byOauth >= 0.9,
    note: `p99 ${oauth.p99} vs ${mcp.p99} ms; server CPU ${cpu(oauth)} vs ${cpu(mcp)} µs per request`,
  });
  await constructionFigure(mcp.cpuUs);
}

/**
 * An OAuth access token for the account, the way an AI app gets one (docs/mcp.md "With OAuth"):
 * registration, an owner's console login, authorize with PKCE, `Permitir`, the code exchange.
 */
async function oauthAccessToken(url: string, accountId: string): Promise<string> {
  const email = `bench-oauth-${Date.now()}@bench.example`;
  const password = 'bench-password-oauth-0123';
  await must(admin(url, 'POST', `/accounts/${accountId}/members`, { email, name: 'Bench', role: 'owner', password }), 201, 'create owner');
  const cookies = new Map<string, string>();
  const keep = (r: Response) => {
    for (const c of r.headers.getSetCookie()) {
      const pair = c.split(';')[0]!;
      cookies.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1));
    }
  };
  const cookie = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  const login = await fetch(`${url}/console/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  keep(login);
  const me = (await (await fetch(`${url}/console/api/me`, { headers: { cookie: cookie() } })).json()) as { csrf: string };
  const redirect = 'http://127.0.0.1:9/callback';
  const reg = await fetch(`${url}/oauth/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Bench', redirect_uris: [redirect], token_endpoint_auth_method: 'none' }),
  });
  const { client_id } = (await reg.json()) as { client_id: string };
  const verifier = randomBytes(32).toString('base64url');
  const q = new URLSearchParams({
    response_type: 'code',
    client_id,
    redirect_uri: redirect,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    resource: `${url}/mcp`,
    scope: 'mcp',
  });
  const start = await fetch(`${url}/oauth/auth?${q}`, { redirect: 'manual', headers: { cookie: cookie() } });
  keep(start);
  const consent = new URL(start.headers.get('location') ?? '', url).pathname;
  const decided = await fetch(`${url}${consent}/decision`, {
    method: 'POST',
    headers: { cookie: cookie(), 'content-type': 'application/json', 'x-chasqui-csrf': me.csrf },
    body: JSON.stringify({ allow: true }),
  });
  keep(decided);
  const { redirectTo } = (await decided.json()) as { redirectTo: string };
  const resumed = await fetch(redirectTo, { redirect: 'manual', headers: { cookie: cookie() } });
  const code = new URL(resumed.headers.get('location') ?? '', url).searchParams.get('code');
  if (!code) throw new Error(`OAuth: no code (${resumed.status} ${resumed.headers.get('location')})`);
  const token = await fetch(`${url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirect, client_id }),
  });
  const tokens = (await token.json()) as { access_token?: string };
  if (!tokens.access_token) throw new Error(`OAuth: no token (${token.status} ${JSON.stringify(tokens)})`);
  return tokens.access_token;
}

/** The figure compares like with like: the tool's structuredContent is the REST answer. */
async function checkSameJson(url: string, key: string, token: string): Promise<void> {
  const rest = await (await fetch(`${url}/api/v1/templates`, { headers: { authorization: `Bearer ${key}` } })).json();
  const res = await fetch(`${url}/mcp`, { method: 'POST', headers: { authorization: `Bearer ${token}`, ...MCP_HEADERS }, body: CALL });
  const text = await res.text();
  const structured = res.status === 200 ? JSON.parse(text)?.result?.structuredContent : undefined;
  if (JSON.stringify(structured) !== JSON.stringify(rest)) {
    throw new Error(`MCP list_templates is not the REST answer: ${res.status} ${text.slice(0, 500)}`);
  }
}

/**
 * What one server of the pool costs to build (src/mcp/server.ts buildMcpServer: the McpServer and
 * its tools, connected to its transport: src/mcp/exchange.ts), timed in this process with the
 * server's own code, next to the server CPU of one tools/call. Before issue 30 this was paid by
 * every request; now by the pool's first request and by each request beyond the idle servers.
 */
async function constructionFigure(callCpuUs: number | undefined): Promise<void> {
  const once = async () => {
    const t0 = process.hrtime.bigint();
    await serverPool(buildMcpServer);
    return Number(process.hrtime.bigint() - t0) / 1000;
  };
  for (let i = 0; i < 2_000; i++) await once(); // warm up (V8 optimizes the path)
  const samples: number[] = [];
  for (let i = 0; i < 5_000; i++) samples.push(await once());
  const p50 = quantile(samples, 0.5);
  record({
    figure: 'MCP server of the pool built (once, not per request)',
    value: p50,
    unit: 'µs p50',
    floor: 'server CPU of one tools/call',
    floorValue: callCpuUs ?? null,
    ratio: callCpuUs === undefined ? null : p50 / callCpuUs,
    goal: 'report',
    pass: null,
    note: `p99 ${quantile(samples, 0.99).toFixed(1)} µs over ${samples.length} builds, in the bench process`,
  });
}
