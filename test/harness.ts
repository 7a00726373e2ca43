// Starts the real app on a real database and talks HTTP to it (DEVELOPERS.md: no mocks of our
// own system). PGlite from the migrated template by default; a fresh PostgreSQL database per
// app when DATABASE_URL is set; Redis counters when REDIS_URL is set.
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { loadConfig } from '../src/config.js';
import { ManualClock } from '../src/lib/clock.js';
import { type Runtime, type RuntimeOptions, startRuntime } from '../src/runtime.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
/**
 * The tests' secrets keyring (docs/privacy.md "Secrets sealed at rest"): every app gets it, so a
 * second app on the same database (`sameDataAs`, its own DATA_DIR) opens what the first sealed.
 */
export const TEST_SECRETS_KEYS = `test:${Buffer.alloc(32, 7).toString('base64')}`;

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
  /** The PostgreSQL database and the apps using it (the last one to close drops it). */
  data: SharedData;
  env: Record<string, string>;
  admin<T = any>(method: string, path: string, body?: unknown): Promise<Res<T>>;
  /** Calls /api/v1 with the given key. */
  api<T = any>(key: string | null, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Res<T>>;
  /** Creates an account with a key and a connected sandbox number (the default); throws when a step fails. */
  createAccount(opts?: { plan?: string; limits?: Record<string, number | null>; name?: string }): Promise<TestAccount>;
  /** A customer writes through the sandbox (runs the real inbound path). */
  inbound<T = any>(body: Record<string, unknown>): Promise<Res<T>>;
  /** The account's outbox events (optionally of one kind), oldest first. */
  events(accountId: string, kind?: string): Promise<{ kind: string; data: any }[]>;
  /** Stops the app, then drops its PostgreSQL database (once no app uses it) and its temporary DATA_DIR. */
  close(): Promise<void>;
}

/** A database made for the tests, shared by the apps started with `sameDataAs`. */
export interface SharedData {
  /** The database's URL when the harness created it (null: embedded in memory, or the test's own). */
  ownedUrl: string | null;
  /** Apps open on it. */
  users: number;
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
  try {
    await client.query(`CREATE DATABASE ${name}`);
    // Every statement the app repeats runs prepared (src/db/prepared.ts), and PostgreSQL may give
    // it a generic plan from its sixth run on a connection. A statement that only works with its
    // parameters' values at hand (an ON CONFLICT whose index predicate is a parameter) fails
    // then, so the tests take the generic plan at once: such a statement fails on its second run.
    await client.query(`ALTER DATABASE ${name} SET plan_cache_mode = force_generic_plan`);
  } finally {
    await client.end();
  }
  const u = new URL(baseUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Drops a database `freshPostgresDatabase` made (FORCE: a killed child process may still hold a session). */
export async function dropPostgresDatabase(url: string): Promise<void> {
  const u = new URL(url);
  const name = u.pathname.slice(1);
  if (!/^chasqui_t_[0-9a-f]+$/.test(name)) throw new Error(`not a test database: ${name}`);
  u.pathname = '/postgres';
  const client = new pg.Client({ connectionString: u.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

// Test phones: valid Argentine mobiles (+54 9 11 and eight digits), unique in a test run. The
// first two of the eight digits are this process's vitest worker slot, so two files running at
// once never share a number; the other six count up from a random start, so files that run one
// after the other rarely repeat one either. A fresh phone's last four digits are 1000–9999, never
// the sandbox's test endings 0001–0003; testNumber() makes those on purpose.
const SLOT = String(10 + ((Number(process.env.VITEST_POOL_ID) || randomInt(1, 80)) % 80));
const FRESH_PER_SLOT = 100 * 9000;
let freshSeq = randomInt(0, FRESH_PER_SLOT / 2);
let testSeq = 0;

export type PhoneSpelling = 'plus' | 'digits' | 'spaced';
export interface PhoneOptions {
  /**
   * How it is written (all accepted by the API, all the same canonical phone): `plus`
   * "+5491112345678" (the default), `digits` "5491112345678" (as Meta writes `wa_id` and
   * `from`), `spaced` "+54 9 11 1234-5678".
   */
  spelling?: PhoneSpelling;
}

function spell(eight: string, spelling: PhoneSpelling = 'plus'): string {
  if (spelling === 'digits') return `54911${eight}`;
  if (spelling === 'spaced') return `+54 9 11 ${eight.slice(0, 4)}-${eight.slice(4)}`;
  return `+54911${eight}`;
}

/** A phone no test has used in this run; never one of the sandbox's test numbers. */
/**
 * A webhook URL written straight to the database, past the registration checks: a URL that was
 * accepted once (a name that resolved publicly then) and must still be refused at delivery.
 */
export async function storeWebhookUnchecked(app: TestApp, accountId: string, url: string): Promise<void> {
  const s = app.rt.services;
  await s.db
    .insertInto('webhooks')
    .values({
      id: randomUUID(),
      account_id: accountId,
      url,
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      created_at: s.clock.now(),
      updated_at: s.clock.now(),
    })
    .execute();
}

export function freshPhone(opts: PhoneOptions = {}): string {
  const n = freshSeq++ % FRESH_PER_SLOT;
  const eight = `${SLOT}${String(Math.floor(n / 9000)).padStart(2, '0')}${1000 + (n % 9000)}`;
  return spell(eight, opts.spelling);
}

/**
 * A fresh sandbox test number (operator.md "Sandbox channel"): `0001` accepted, then failed
 * 131026; `0002` rejected at send; `0003` MARKETING templates blocked (131050).
 */
export function testNumber(ending: '0001' | '0002' | '0003', opts: PhoneOptions = {}): string {
  testSeq += 1;
  if (testSeq > 99) throw new Error('testNumber: at most 99 sandbox test numbers per test file');
  return spell(`${SLOT}${String(testSeq).padStart(2, '0')}${ending}`, opts.spelling);
}

/** Throws with the answer when an operator call made to set a test up did not give `status`. */
function expectSetup<T>(what: string, res: Res<T>, status: number): Res<T> {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  return res;
}

export interface StartOptions extends RuntimeOptions {
  env?: Record<string, string>;
  clock?: ManualClock;
  /** Start a second process on the same database (and Redis prefix) as this one. */
  sameDataAs?: TestApp;
}

export async function startTestApp(opts: StartOptions = {}): Promise<TestApp> {
  const clock = opts.clock ?? new ManualClock();
  const pgBase = inject('databaseUrl');
  let data: SharedData;
  let databaseUrl: string;
  let loadDataDir: Blob | undefined;
  if (opts.sameDataAs) {
    if (opts.sameDataAs.databaseUrl === 'memory://') throw new Error('two processes need PostgreSQL (DATABASE_URL)');
    data = opts.sameDataAs.data;
    databaseUrl = opts.sameDataAs.databaseUrl;
  } else if (pgBase) {
    databaseUrl = await freshPostgresDatabase(pgBase);
    data = { ownedUrl: databaseUrl, users: 0 };
  } else {
    databaseUrl = 'memory://';
    data = { ownedUrl: null, users: 0 };
    loadDataDir = new Blob([readFileSync(inject('pgliteTemplate') as string)]);
  }
  data.users += 1;
  const dataDir = opts.env?.DATA_DIR ? null : mkdtempSync(join(tmpdir(), 'chasqui-test-'));
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    ...(dataDir ? { DATA_DIR: dataDir } : {}),
    ADMIN_TOKEN,
    SECRETS_KEYS: opts.sameDataAs?.env.SECRETS_KEYS ?? TEST_SECRETS_KEYS,
    PORT: '0',
    HOST: '127.0.0.1',
    SANDBOX_AUTO_STATUS: 'off',
    SEED_DEMO: 'off',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ALLOW_PRIVATE_WEBHOOKS: 'on',
    WEBHOOK_RETRY_SCHEDULE: '1,1,1',
    // Our own failures: the first try and three more, a second apart (docs/operating.md "Dead letters").
    QUEUE_RETRY_SCHEDULE: '1,1,1',
    REDIS_KEY_PREFIX: opts.sameDataAs?.env.REDIS_KEY_PREFIX ?? `chasqui-test-${randomBytes(4).toString('hex')}`,
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    ...opts.env,
  };
  // A data directory that already holds a database (a restart, a restored copy) opens as it is.
  const dir = !env.DATABASE_URL ? join(env.DATA_DIR ?? './data', 'pglite') : env.DATABASE_URL.replace(/^(pglite|file):\/\//, '');
  if (existsSync(join(dir, 'PG_VERSION'))) loadDataDir = undefined;
  // What this app leaves behind: its DATA_DIR, and the database once no app uses it.
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    data.users -= 1;
    if (data.users === 0 && data.ownedUrl) await dropPostgresDatabase(data.ownedUrl);
  };
  let rt: Runtime;
  let url: string;
  try {
    rt = await startRuntime(loadConfig(env), { usageFlushMs: 0, ...opts, clock, loadDataDir });
    url = (await rt.listen()).replace('[::1]', '127.0.0.1');
  } catch (err) {
    await release();
    throw err;
  }
  const admin = <T = any>(method: string, path: string, body?: unknown) =>
    request<T>(`${url}/admin/v1${path}`, method, body, { authorization: `Bearer ${ADMIN_TOKEN}` });

  const app: TestApp = {
    url,
    rt,
    clock,
    databaseUrl,
    data,
    env,
    admin,
    api: (key, method, path, body, headers = {}) =>
      request(`${url}/api/v1${path}`, method, body, { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers }),
    inbound: (body) => admin('POST', '/sandbox/inbound', body),
    async events(accountId, kind) {
      let q = rt.services.db.selectFrom('events').select(['kind', 'data']).where('account_id', '=', accountId);
      if (kind) q = q.where('kind', '=', kind);
      return q.orderBy('created_at').orderBy('id').execute();
    },
    async createAccount(o = {}) {
      const body = { name: o.name ?? 'Tienda de prueba', plan: o.plan ?? 'escala', ...(o.limits ? { limits: o.limits } : {}) };
      const acc = expectSetup('create account', await admin('POST', '/accounts', body), 201).body;
      const key = expectSetup('create key', await admin('POST', `/accounts/${acc.id}/keys`, { name: 'test' }), 201).body;
      const phone = freshPhone({ spelling: 'digits' });
      const number = { phone, name: 'Principal', provider: 'sandbox' };
      const pn = expectSetup('create phone number', await admin('POST', `/accounts/${acc.id}/phone-numbers`, number), 201).body;
      const k = key.key as string;
      return {
        id: acc.id,
        key: k,
        keyId: key.id,
        phoneNumberId: pn.id,
        phone,
        call: (method, path, body, headers) => app.api(k, method, path, body, headers),
      };
    },
    async close() {
      try {
        await rt.close();
      } finally {
        await release();
      }
    },
  };
  return app;
}
