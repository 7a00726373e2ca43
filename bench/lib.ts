// Shared parts of `npm run bench` and `npm run faults`: a real server in a child process (the
// built CLI, exactly what `npm start` runs), a fresh database per run, the operator API, and
// autocannon runs reduced to the few numbers we print.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';

export const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef0123';
const ROOT = new URL('..', import.meta.url).pathname;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A fresh PostgreSQL database under `base` (dropped by the returned function), or null on PGlite. */
export async function freshDatabase(base: string | undefined, tag: string): Promise<{ url: string; drop(): Promise<void> } | null> {
  if (!base) return null;
  const name = `chasqui_${tag}_${Date.now()}_${process.pid}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(base);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export interface Server {
  url: string;
  port: number;
  proc: ChildProcess;
  env: Record<string, string>;
  /** Resident memory of the server process in MB (from /proc). */
  rssMb(): number;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>;
  /** SIGKILL: no shutdown at all. */
  kill(): Promise<void>;
  output(): string;
}

const tempDirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'chasqui-bench-'));
  tempDirs.push(dir);
  return dir;
}
/** Removes the data directories the servers of this run were given (call once they are stopped). */
export function removeTempDirs(): void {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/**
 * Starts `node dist/cli/main.js serve` and waits until /readyz answers 200. Every figure's server
 * takes BENCH_ENTRY (another build's dist/cli/main.js: A/B runs of one change) and
 * BENCH_NODE_ARGS (flags for its node, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) unless told.
 */
export async function startServer(
  env: Record<string, string>,
  opts: { port?: number; nodeArgs?: string[]; entry?: string } = {},
): Promise<Server> {
  const nodeArgs = opts.nodeArgs ?? process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const entry = opts.entry ?? process.env.BENCH_ENTRY ?? join(ROOT, 'dist/cli/main.js');
  const port = opts.port ?? (await freePort());
  const fullEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    HOST: '127.0.0.1',
    PORT: String(port),
    ADMIN_TOKEN,
    SEED_DEMO: 'off',
    LOG_LEVEL: 'warn',
    SANDBOX_AUTO_STATUS: 'off',
    ALLOW_PRIVATE_WEBHOOKS: 'on',
    DATA_DIR: env.DATA_DIR ?? tempDir(),
    NODE_ENV: 'production',
    // Production refuses to start without a keyring (docs/privacy.md "Secrets sealed at rest").
    SECRETS_KEYS: `bench:${Buffer.alloc(32, 3).toString('base64')}`,
    // Nothing in front of these servers: they stop at once on SIGTERM (no drain window).
    SHUTDOWN_DRAIN_MS: '0',
    ...env,
  };
  const proc = spawn(process.execPath, [...nodeArgs, entry, 'serve'], {
    env: fullEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d) => {
    out += d;
    if (out.length > 200_000) out = out.slice(-100_000);
  });
  proc.stderr?.on('data', (d) => {
    out += d;
    if (out.length > 200_000) out = out.slice(-100_000);
  });
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`server exited (${proc.exitCode}):\n${out}`);
    try {
      const r = await fetch(`${url}/readyz`);
      if (r.status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`server did not become ready:\n${out}`);
    await sleep(100);
  }
  return {
    url,
    port,
    proc,
    env: fullEnv,
    rssMb() {
      const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
      const m = /VmRSS:\s+(\d+) kB/.exec(status);
      return m ? Number(m[1]) / 1024 : Number.NaN;
    },
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
    async kill() {
      if (proc.exitCode === null) proc.kill('SIGKILL');
      await exited;
    },
    output: () => out,
  };
}

export async function call<T = any>(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* keep text */
  }
  return { status: res.status, body: parsed as T };
}

export const admin = <T = any>(url: string, method: string, path: string, body?: unknown) =>
  call<T>(url, method, `/admin/v1${path}`, body, { authorization: `Bearer ${ADMIN_TOKEN}` });

export async function must<T = any>(p: Promise<{ status: number; body: T }>, expected: number, what: string): Promise<T> {
  const r = await p;
  if (r.status !== expected) throw new Error(`${what}: expected ${expected}, got ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** An account with a key and a connected sandbox number; `limits` overrides the plan's. */
export async function benchAccount(url: string, limits: Record<string, number | null>, name = 'bench') {
  const acc = await must(admin(url, 'POST', '/accounts', { name, plan: 'enterprise', limits }), 201, 'create account');
  const key = await must(admin(url, 'POST', `/accounts/${acc.id}/keys`, { name: 'bench' }), 201, 'create key');
  const pn = await must(
    admin(url, 'POST', `/accounts/${acc.id}/phone-numbers`, { phone: '+54 9 11 4000-0000', name: 'Bench', provider: 'sandbox' }),
    201,
    'create number',
  );
  // The bench measures this server, not Meta's tier: the number gets the highest one (1,000 a
  // second, paced at 950), so the pacer is in the path but rarely what waits.
  await must(admin(url, 'PATCH', `/accounts/${acc.id}/phone-numbers/${pn.id}`, { throughputPerSecond: 1000 }), 200, 'number tier');
  return { id: acc.id as string, key: key.key as string, phoneNumberId: pn.id as string };
}

/** Random decimal digits, for Meta-style ids (Graph phone-number, WABA and template ids). */
export const digits = (n: number): string => Array.from(randomBytes(n), (b) => String(b % 10)).join('');

/**
 * Connects a WhatsApp Cloud API number with fresh credentials through the operator API (201):
 * the number and the credentials (the app secret signs the receiver's batches).
 */
export async function connectCloudNumber(url: string, accountId: string, phone: string) {
  const cloud = {
    phoneNumberId: `1${digits(14)}`,
    wabaId: `2${digits(14)}`,
    accessToken: `EAAG${randomBytes(24).toString('base64url')}`,
    appSecret: randomBytes(16).toString('hex'),
    verifyToken: `vt-${randomBytes(8).toString('hex')}`,
  };
  const number = await must(
    admin(url, 'POST', `/accounts/${accountId}/phone-numbers`, { phone, name: 'Cloud', provider: 'cloud', cloud }),
    201,
    'connect cloud number',
  );
  return { number, cloud };
}

/** Lists `template` for the WABA at the fake Graph and syncs the account's templates: the synced one. */
export async function syncCloudTemplate(
  url: string,
  accountId: string,
  graph: { templates: Map<string, unknown[]> },
  wabaId: string,
  template: { name: string } & Record<string, unknown>,
) {
  graph.templates.set(wabaId, [{ id: `1${digits(14)}`, language: 'es_AR', status: 'APPROVED', ...template }]);
  const synced = await must(admin(url, 'POST', `/accounts/${accountId}/templates/sync`), 200, 'template sync');
  return synced.templates.find((t: { name: string }) => t.name === template.name) as { id: string; name: string };
}

export const UNLIMITED = {
  requestsPerMinute: null,
  messagesPerMinute: null,
  apiCallsPerMonth: null,
  webhookDeliveriesPerMonth: null,
  contacts: null,
};

/** CPU time (user + system, ms) a process has used so far, from /proc (Linux). */
export function cpuMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 per second on Linux).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

/** CPU time (ms) of every PostgreSQL process on this machine (a local server; backends of a pool live on). */
export function postgresCpuMs(): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') total += cpuMs(Number(pid));
    } catch {
      /* gone meanwhile */
    }
  }
  return total;
}

export interface LoadResult {
  rps: number;
  /** Server CPU per answered request (µs), when the load was given the server's pid. */
  cpuUs?: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
}

/** WARMUP_SECONDS of the same load, not counted, before the measured run. */
const WARMUP_SECONDS = 2;

export async function load(opts: autocannon.Options & { warmup?: boolean | number; pid?: number }): Promise<LoadResult> {
  const { warmup, pid, ...options } = opts;
  // warmup: true for WARMUP_SECONDS, or a number of seconds.
  if (warmup) await autocannon({ connections: 32, pipelining: 1, ...options, duration: warmup === true ? WARMUP_SECONDS : warmup });
  const cpuBefore = cpuMs(pid);
  const r = await autocannon({ duration: 8, connections: 32, pipelining: 1, ...options });
  const cpu = cpuMs(pid) - cpuBefore;
  return {
    rps: r.requests.average,
    ...(pid !== undefined && Number.isFinite(cpu) && r.requests.total > 0 ? { cpuUs: (cpu * 1000) / r.requests.total } : {}),
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

/** p-quantile of numbers (nearest rank). */
export function quantile(xs: number[], p: number): number {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))]!;
}

/** PostgreSQL base URL of the run (a fresh database per server), or undefined for PGlite. */
export const BASE_URL = process.env.DATABASE_URL;
/** Seconds of each measured load run, and the connections it keeps open. */
export const DURATION = Number(process.env.BENCH_SECONDS ?? 8);
export const CONNECTIONS = 32;

/** Environment of a bench server: its own fresh database (PostgreSQL) and Redis prefix. */
export async function serverEnv(tag: string) {
  const db = await freshDatabase(BASE_URL, tag);
  const env: Record<string, string> = { ...(db ? { DATABASE_URL: db.url } : {}) };
  if (process.env.REDIS_URL) env.REDIS_URL = process.env.REDIS_URL;
  env.REDIS_KEY_PREFIX = `chasqui-bench-${tag}-${Date.now()}`;
  return { env, db };
}

/** Mean throughput of several runs (CPU per request over all of them); worst latency; errors summed. */
export function meanOf(rs: LoadResult[]): LoadResult {
  const requests = rs.reduce((t, r) => t + r.requests, 0);
  const cpu = rs.every((r) => r.cpuUs !== undefined) ? rs.reduce((t, r) => t + (r.cpuUs ?? 0) * r.requests, 0) / requests : undefined;
  return {
    ...(cpu === undefined ? {} : { cpuUs: cpu }),
    rps: rs.reduce((t, r) => t + r.rps, 0) / rs.length,
    p50: Math.max(...rs.map((r) => r.p50)),
    p99: Math.max(...rs.map((r) => r.p99)),
    requests,
    non2xx: rs.reduce((t, r) => t + r.non2xx, 0),
    errors: rs.reduce((t, r) => t + r.errors, 0),
  };
}

/** Says so when a load run met answers other than 2xx, or errors: its figure is suspect. */
export function checkClean(what: string, r: LoadResult): void {
  if (r.non2xx > 0 || r.errors > 0) console.log(`  ! ${what}: ${r.non2xx} non-2xx answers, ${r.errors} errors in ${r.requests} requests`);
}

let phoneSeq = 0;
/** A unique valid Argentine mobile per call (`prefix` keeps the figures' ranges apart). */
export function nextPhone(prefix: number): string {
  const n = phoneSeq++;
  // Last four digits 0001–0003 are the sandbox's test numbers (failed, rejected, marketing blocked).
  if (n % 10_000 >= 1 && n % 10_000 <= 3) return nextPhone(prefix);
  return `+54 9 11 ${prefix}${String(n).padStart(7, '0')}`;
}
