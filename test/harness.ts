// Starts the real app on a real database and talks HTTP to it (DEVELOPERS.md: no mocks of our
// own system). PGlite from the migrated template by default; a fresh PostgreSQL database per
// app when DATABASE_URL is set; Redis counters when REDIS_URL is set.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { loadConfig } from '../src/config.js';
import { ManualClock } from '../src/lib/clock.js';
import { type Runtime, type RuntimeOptions, startRuntime } from '../src/runtime.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface Res<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface TestApp {
  url: string;
  rt: Runtime;
  clock: ManualClock;
  /** The database URL this app uses (share it to start a second process on the same data). */
  databaseUrl: string;
  env: Record<string, string>;
  admin<T = any>(method: string, path: string, body?: unknown): Promise<Res<T>>;
  /** Calls /api/v1 with the given key. */
  api<T = any>(key: string | null, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Res<T>>;
  /** Creates an account with a key and a connected sandbox number (the default). */
  createAccount(opts?: { plan?: string; limits?: Record<string, number | null>; name?: string }): Promise<TestAccount>;
  /** A customer writes through the sandbox (runs the real inbound path). */
  inbound<T = any>(body: Record<string, unknown>): Promise<Res<T>>;
  /** The account's outbox events (optionally of one kind), oldest first. */
  events(accountId: string, kind?: string): Promise<{ kind: string; data: any }[]>;
  close(): Promise<void>;
}

export interface TestAccount {
  id: string;
  key: string;
  keyId: string;
  phoneNumberId: string;
  phone: string;
  /** Shorthand for app.api(key, …). */
  call<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Res<T>>;
}

export async function request<T = any>(url: string, method: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res<T>> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, init);
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

/** A new, empty PostgreSQL database next to `baseUrl`; returns its URL. */
export async function freshPostgresDatabase(baseUrl: string): Promise<string> {
  const name = `chasqui_t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const u = new URL(baseUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

let phoneSeq = 0;

export interface StartOptions extends RuntimeOptions {
  env?: Record<string, string>;
  clock?: ManualClock;
  /** Start a second process on the same database (and Redis prefix) as this one. */
  sameDataAs?: TestApp;
}

export async function startTestApp(opts: StartOptions = {}): Promise<TestApp> {
  const clock = opts.clock ?? new ManualClock();
  const pgBase = inject('databaseUrl');
  let databaseUrl: string;
  let loadDataDir: Blob | undefined;
  if (opts.sameDataAs) databaseUrl = opts.sameDataAs.databaseUrl;
  else if (pgBase) databaseUrl = await freshPostgresDatabase(pgBase);
  else {
    databaseUrl = 'memory://';
    loadDataDir = new Blob([readFileSync(inject('pgliteTemplate') as string)]);
  }
  if (opts.sameDataAs && databaseUrl === 'memory://') throw new Error('two processes need PostgreSQL (DATABASE_URL)');
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    DATA_DIR: mkdtempSync(join(tmpdir(), 'chasqui-test-')),
    ADMIN_TOKEN,
    PORT: '0',
    HOST: '127.0.0.1',
    SANDBOX_AUTO_STATUS: 'off',
    SEED_DEMO: 'off',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ALLOW_PRIVATE_WEBHOOKS: 'on',
    WEBHOOK_RETRY_SCHEDULE: '1,1,1',
    REDIS_KEY_PREFIX: opts.sameDataAs?.env.REDIS_KEY_PREFIX ?? `chasqui-test-${randomBytes(4).toString('hex')}`,
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    ...opts.env,
  };
  const rt = await startRuntime(loadConfig(env), { usageFlushMs: 0, ...opts, clock, loadDataDir });
  const url = (await rt.listen()).replace('[::1]', '127.0.0.1');

  const app: TestApp = {
    url,
    rt,
    clock,
    databaseUrl,
    env,
    admin: (method, path, body) => request(`${url}/admin/v1${path}`, method, body, { authorization: `Bearer ${ADMIN_TOKEN}` }),
    api: (key, method, path, body, headers = {}) =>
      request(`${url}/api/v1${path}`, method, body, { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers }),
    inbound: (body) => app.admin('POST', '/sandbox/inbound', body),
    async events(accountId, kind) {
      let q = rt.services.db.selectFrom('events').select(['kind', 'data']).where('account_id', '=', accountId);
      if (kind) q = q.where('kind', '=', kind);
      return q.orderBy('created_at').orderBy('id').execute();
    },
    async createAccount(o = {}) {
      const acc = await app.admin('POST', '/accounts', {
        name: o.name ?? 'Tienda de prueba',
        plan: o.plan ?? 'escala',
        ...(o.limits ? { limits: o.limits } : {}),
      });
      if (acc.status !== 201) throw new Error(`createAccount: ${acc.status} ${JSON.stringify(acc.body)}`);
      const key = await app.admin('POST', `/accounts/${acc.body.id}/keys`, { name: 'test' });
      if (key.status !== 201) throw new Error(`create key: ${key.status} ${JSON.stringify(key.body)}`);
      phoneSeq += 1;
      const phone = `54911${String(40000000 + (process.pid % 1000) * 1000 + phoneSeq).padStart(8, '0')}`;
      const pn = await app.admin('POST', `/accounts/${acc.body.id}/phone-numbers`, { phone, name: 'Principal', provider: 'sandbox' });
      const k = key.body.key as string;
      return {
        id: acc.body.id,
        key: k,
        keyId: key.body.id,
        phoneNumberId: pn.status === 201 ? pn.body.id : '',
        phone,
        call: (method, path, body, headers) => app.api(k, method, path, body, headers),
      };
    },
    close: () => rt.close(),
  };
  return app;
}
