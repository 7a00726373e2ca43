// Per-number throughput tiers (issue 18; docs/performance.md "Throughput tiers and pacing"): every
// send of a number takes the number's next slot, paced at 93 % of its tier, shared by every process
// through Redis; a 130429 from Graph halves the rate, which then recovers. Measured where Meta would
// count: the arrival times at a fake Graph.
//
// The rate measurements run the app as child processes (test/server-process.ts): the fake Graph's
// clock is then not stalled by the app's own work (PGlite runs in the thread that starts it).
//
// What is asserted is the invariant, once, without retries: never more than the rate in any
// one-second window of arrivals. The fake Graph timestamps arrivals in this test's process, which
// a loaded machine may stall (arrivals that came meanwhile are then read together); the longest
// stall is measured during each flood and widens the window by exactly that much (`allowed`). How
// fast the sends go is measured by the bench (bench/), not asserted here.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, connect, createServer, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LATE_MS, PACE_SHARE } from '../../src/limits/pacer.js';
import { cloudCredentials, type FakeGraph, startFakeGraph } from '../fakes/graph.js';
import { ADMIN_TOKEN, freshPhone, type Res, request, startTestApp, type TestApp } from '../harness.js';
import { serverEnv, spawnServer } from '../server-process.js';

const CLOUD_ENV = { CHANNEL_PROVIDER: 'cloud', GRAPH_TIMEOUT_MS: '2000' };

let fake: FakeGraph;
let app: TestApp;
const cleanup: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  fake = await startFakeGraph();
  app = await startTestApp({ env: { ...CLOUD_ENV, GRAPH_API_URL: fake.url } });
});
afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
  await app?.close();
  await fake?.close();
});
beforeEach(() => fake.reset());

/** What the tests need of a server: the operator API and /api/v1. */
interface Server {
  admin<T = any>(method: string, path: string, body?: unknown): Promise<Res<T>>;
  api<T = any>(key: string | null, method: string, path: string, body?: unknown): Promise<Res<T>>;
}

/** `chasqui serve` as a child process on the fake Graph (PGlite in a temporary DATA_DIR unless `env` says otherwise). */
async function childServer(env: Record<string, string>): Promise<Server> {
  const dataDir = mkdtempSync(join(tmpdir(), 'chasqui-tier-'));
  cleanup.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  // serverEnv: the tests' operator token and keyring — processes sharing a database share the
  // key that seals its credentials, or one cannot open the number's token the other stored.
  const { url } = await spawnServer(
    serverEnv({
      DATA_DIR: dataDir,
      DATABASE_URL: '',
      REDIS_URL: '',
      GRAPH_API_URL: fake.url,
      ...CLOUD_ENV,
      ...env,
    }),
    (fn) => cleanup.push(fn),
    60_000,
  );
  return {
    admin: (method, path, body) => request(`${url}/admin/v1${path}`, method, body, { authorization: `Bearer ${ADMIN_TOKEN}` }),
    api: (key, method, path, body) => request(`${url}/api/v1${path}`, method, body, key ? { authorization: `Bearer ${key}` } : {}),
  };
}

const digits = (n: number) => Array.from(randomBytes(n), (b) => String(b % 10)).join('');

interface CloudNumber {
  acc: { id: string; key: string };
  id: string;
  graphId: string;
  templateId: string;
}

/** An account (no minute caps) with a Cloud API number of the given tier and one approved template. */
async function cloudNumber(on: Server, tier: number | null): Promise<CloudNumber> {
  const made = await on.admin('POST', '/accounts', {
    name: 'Tienda',
    plan: 'escala',
    limits: { messagesPerMinute: null, requestsPerMinute: null },
  });
  expect(made.status).toBe(201);
  const key = await on.admin('POST', `/accounts/${made.body.id}/keys`, { name: 'k' });
  expect(key.status).toBe(201);
  const acc = { id: made.body.id as string, key: key.body.key as string };
  const c = cloudCredentials();
  const created = await on.admin('POST', `/accounts/${acc.id}/phone-numbers`, {
    phone: freshPhone({ spelling: 'digits' }),
    provider: 'cloud',
    cloud: c,
  });
  expect(created.status).toBe(201);
  expect(created.body.throughputPerSecond).toBe(80);
  const patch = { default: true, ...(tier !== null ? { throughputPerSecond: tier } : {}) };
  const patched = await on.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${created.body.id}`, patch);
  expect(patched.status).toBe(200);
  fake.tokens.set(c.phoneNumberId, c.accessToken);
  fake.tokens.set(c.wabaId, c.accessToken);
  const name = `aviso_${randomBytes(4).toString('hex')}`;
  fake.templates.set(c.wabaId, [
    {
      id: `1${digits(14)}`,
      name,
      language: 'es_AR',
      status: 'APPROVED',
      category: 'UTILITY',
      components: [{ type: 'BODY', text: 'Tu pedido está listo.' }],
    },
  ]);
  const synced = await on.admin('POST', `/accounts/${acc.id}/templates/sync`);
  expect(synced.status).toBe(200);
  const tpl = synced.body.templates.find((t: { name: string }) => t.name === name);
  expect(tpl).toBeDefined();
  return { acc, id: created.body.id, graphId: c.phoneNumberId, templateId: tpl.id };
}

const send = (on: Server, n: CloudNumber, to = freshPhone()) =>
  on.api(n.acc.key, 'POST', '/messages', { to, template: { id: n.templateId } });

/** Arrival times (ms) at the fake Graph of the sends from this number, in order. */
const arrivals = (n: CloudNumber) =>
  fake
    .sends()
    .filter((c) => c.path.endsWith(`/${n.graphId}/messages`))
    .map((c) => c.at)
    .sort((a, b) => a - b);

/** The gaps between arrivals, for a failure message: what the fake Graph saw. */
const seen = (times: number[]) =>
  `gaps (ms): ${gaps(times)
    .map((g) => g.toFixed(0))
    .join(' ')}`;

/** One line of what was measured (docs/performance.md quotes these). */
const report = (what: string, times: number[]) =>
  console.info(`${what}: ${times.length} arrivals, at most ${maxInOneSecond(times)} in one second, ${rateOf(times).toFixed(2)}/s`);

/** The most arrivals in any one-second window (a window starting at each arrival: the worst case). */
function maxInOneSecond(times: number[]): number {
  let best = 0;
  let j = 0;
  for (let i = 0; i < times.length; i++) {
    while (times[i]! - times[j]! >= 1000) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

const rateOf = (times: number[]) => (times.length - 1) / ((times.at(-1)! - times[0]!) / 1000);

/**
 * The most arrivals one one-second window may hold (pacer.ts). Slots are at least one interval
 * apart (PACE_SHARE × `factor` of the tier) and a send leaves at most LATE_MS after its slot (a
 * later wake takes a new one), so departures in a window of W ms come from ⌊(W + LATE_MS) /
 * interval⌋ + 1 slots; `oneProcess` at full speed, that process also lets at most ⌊the paced
 * rate⌋ leave in any sliding second (Departures), which makes it the tier. Arrivals this process
 * read late by up to `stallMs` came from a window that much longer than the second measured.
 */
function allowed(tier: number, stallMs: number, o: { factor?: number; oneProcess?: boolean } = {}): number {
  const interval = 1000 / (tier * PACE_SHARE * (o.factor ?? 1));
  const slots = Math.floor((1000 + stallMs + LATE_MS) / interval) + 1;
  if (!o.oneProcess || (o.factor ?? 1) < 1) return slots;
  return Math.min(slots, Math.floor(tier * PACE_SHARE) + Math.floor((stallMs + LATE_MS) / interval) + 1);
}

/** Runs `f` while measuring this process's longest event-loop stall (ms): how late it may have read an arrival. */
async function observed<T>(f: () => Promise<T>): Promise<{ value: T; stallMs: number }> {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  try {
    const value = await f();
    return { value, stallMs: h.max / 1e6 };
  } finally {
    h.disable();
  }
}

/**
 * Keeps `senders` sends in flight on each server (each sender sends again once answered) for
 * `warmMs` (compiled paths, connections to the fake Graph, the first contacts), then records the
 * fake Graph afresh for `ms` more; resolves with every status answered.
 */
async function flood(on: Server[], n: CloudNumber, senders: number, ms: number, warmMs = 1_000): Promise<number[]> {
  const start = Date.now();
  const until = start + warmMs + ms;
  const warm = setTimeout(() => fake.reset(), warmMs);
  const statuses: number[] = [];
  // One recipient for all: a send then costs the server little besides the pacing.
  const to = freshPhone();
  const loop = async (server: Server) => {
    while (Date.now() < until) statuses.push((await send(server, n, to)).status);
  };
  await Promise.all(on.flatMap((server) => Array.from({ length: senders }, () => loop(server))));
  clearTimeout(warm);
  return statuses;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const gaps = (times: number[]) => times.slice(1).map((t, i) => t - times[i]!);

describe('PATCH …/phone-numbers/{pnId} throughputPerSecond (operator.md "Channel numbers")', () => {
  it('"an integer from 1 to 1000": 0, 1001, "x", 2.5 and null get a Spanish 400 at the field; 1000 is kept and shown to the operator and in GET /me', async () => {
    const acc = await app.createAccount();
    const path = `/accounts/${acc.id}/phone-numbers/${acc.phoneNumberId}`;
    const refusals: [unknown, string][] = [
      [0, 'Tiene que ser mayor o igual a 1.'],
      [1001, 'Tiene que ser menor o igual a 1000.'],
      ['x', 'Tiene que ser un número.'],
      [2.5, 'Tiene que ser un número entero.'],
      [null, 'Tiene que ser un número.'],
    ];
    for (const [bad, message] of refusals) {
      const r = await app.admin('PATCH', path, { throughputPerSecond: bad });
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(JSON.parse(r.body.error.message)).toEqual([{ path: ['throughputPerSecond'], message }]);
    }
    const ok = await app.admin('PATCH', path, { throughputPerSecond: 1000 });
    expect(ok.status).toBe(200);
    expect(ok.body.throughputPerSecond).toBe(1000);
    const listed = await app.admin('GET', `/accounts/${acc.id}/phone-numbers`);
    expect(listed.body.data.find((p: { id: string }) => p.id === acc.phoneNumberId).throughputPerSecond).toBe(1000);
    const me = await acc.call('GET', '/me');
    expect(me.body.phoneNumbers[0].throughputPerSecond).toBe(1000);
  });
});

describe('pacing in one process (docs/performance.md "Throughput tiers and pacing")', () => {
  it('"never more than the tier in any one-second window": the memory pacer (PGlite, no Redis), tier 10 flooded by 8 senders for ~3 s, at the fake Graph', {
    timeout: 90_000,
  }, async () => {
    const one = await childServer({});
    const n = await cloudNumber(one, 10);
    const { value: statuses, stallMs } = await observed(() => flood([one], n, 8, 3_000));
    expect(statuses.every((s) => s === 201)).toBe(true);
    const times = arrivals(n);
    report('tier 10, one process, memory pacer', times);
    // More sends than the tier went out (the window check means something), never more than it in a second.
    expect(times.length, seen(times)).toBeGreaterThan(10);
    expect(maxInOneSecond(times), `${seen(times)}; stall ${stallMs.toFixed(0)} ms`).toBeLessThanOrEqual(
      allowed(10, stallMs, { oneProcess: true }),
    );
  });

  it('"a send that finds no slot within 2 s does not go out": 429 with Retry-After and the Spanish text; the message is failed with our reason, not the provider\'s', async () => {
    const n = await cloudNumber(app, 1);
    // Tier 1: slots every ~1.08 s (93 %); of eight sends at once, those whose slot is over 2 s away are refused.
    const to = freshPhone();
    const answers = await Promise.all(Array.from({ length: 8 }, () => send(app, n, to)));
    const ok = answers.filter((r) => r.status === 201);
    const busy = answers.filter((r) => r.status === 429);
    expect(ok.length + busy.length).toBe(8);
    expect(ok.length).toBeGreaterThanOrEqual(2);
    expect(busy.length).toBeGreaterThanOrEqual(1);
    for (const r of busy) {
      expect(r.body.error).toBe('El número ya envía al máximo de su nivel (1 mensajes por segundo). Probá de nuevo en unos segundos.');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const msg = await app.api(n.acc.key, 'GET', `/messages/${r.body.messageId}`);
      expect(msg.status).toBe(200);
      expect(msg.body.status).toBe('failed');
      expect(msg.body.code).toBeNull();
      expect(msg.body.error).toBe('no salió: el número ya enviaba al máximo de su nivel (1 mensajes por segundo)');
    }
    // Only the sends that had a slot reached Graph (their spacing is measured by the child-process tests).
    expect(arrivals(n).length).toBe(ok.length);
  });

  it('"a 130429 halves the number\'s rate, then it recovers": the caller gets provider_temporary; never more than half the slots of the tier in a second, and the full rate is back after 10 s of the clock', async () => {
    const n = await cloudNumber(app, 6);
    const interval = 1000 / (6 * PACE_SHARE);
    fake.queue({
      error: { status: 400, code: 130429, message: '(#130429) Rate limit hit', details: 'Cloud API message throughput has been reached.' },
    });
    const refused = await send(app, n);
    expect(refused.status).toBe(502);
    expect(refused.body.code).toBe(130429);
    expect(refused.body.error).toContain('se alcanzó el límite de envíos por segundo del número en Meta');

    fake.reset();
    const slowedRun = await observed(() => flood([app], n, 4, 2_500, 0));
    const slowedTimes = arrivals(n);
    const slowed = gaps(slowedTimes).slice(1);
    expect(slowed.length).toBeGreaterThanOrEqual(4);
    // Halved: never more than half the paced rate in any one-second window.
    expect(maxInOneSecond(slowedTimes), seen(slowedTimes)).toBeLessThanOrEqual(allowed(6, slowedRun.stallMs, { factor: 0.5 }));

    app.clock.advance(10_000);
    fake.reset();
    const backRun = await observed(() => flood([app], n, 4, 1_500, 0));
    const backTimes = arrivals(n);
    const back = gaps(backTimes).slice(1);
    console.info(
      `tier 6 (interval ${interval.toFixed(0)} ms): median gap ${median(slowed).toFixed(0)} ms after a 130429, ${median(back).toFixed(0)} ms 10 s later`,
    );
    // Recovered: the full rate again, still never more than it in a window; and faster than the
    // halved spacing allows (a rate still halved has no gap median under twice the interval).
    expect(maxInOneSecond(backTimes), seen(backTimes)).toBeLessThanOrEqual(allowed(6, backRun.stallMs, { oneProcess: true }));
    expect(median(back), seen(backTimes)).toBeLessThan(2 * interval * 0.9);
  });
});

describe('pacing across processes (shared in Redis: docs/performance.md "Throughput tiers and pacing")', () => {
  const shared = Boolean(process.env.DATABASE_URL && process.env.REDIS_URL);
  it.skipIf(!shared)(
    '"the tier holds for the number whatever process sends": two processes on one number of tier 10 never put more in a one-second window than its slots allow (pacer.ts: 1000 + LATE_MS ms of slots); a 130429 met by one halves the rate of the other too',
    { timeout: 120_000 },
    async () => {
      // `app` made the database; two child processes share it and one Redis key prefix.
      const env = {
        DATABASE_URL: app.databaseUrl,
        REDIS_URL: process.env.REDIS_URL ?? '',
        REDIS_KEY_PREFIX: `chasqui-tier-${randomBytes(4).toString('hex')}`,
      };
      const [a, b] = await Promise.all([childServer(env), childServer(env)]);
      const n = await cloudNumber(a!, 10);
      const { value: statuses, stallMs } = await observed(() => flood([a!, b!], n, 4, 3_000));
      expect(statuses.every((s) => s === 201)).toBe(true);
      const times = arrivals(n);
      report('tier 10, two processes, Redis pacer', times);
      expect(times.length, seen(times)).toBeGreaterThan(10);
      expect(maxInOneSecond(times), `${seen(times)}; stall ${stallMs.toFixed(0)} ms`).toBeLessThanOrEqual(allowed(10, stallMs));

      // "halve its rate in every process": a 130429 met by one process slows the other's sends.
      fake.reset();
      fake.queue({ error: { status: 400, code: 130429, message: '(#130429) Rate limit hit' } });
      expect((await send(a!, n)).status).toBe(502);
      const slowedRun = await observed(() => flood([b!], n, 4, 2_000, 0));
      const slowedTimes = arrivals(n).slice(1);
      expect(gaps(slowedTimes).length).toBeGreaterThanOrEqual(5);
      expect(maxInOneSecond(slowedTimes), seen(slowedTimes)).toBeLessThanOrEqual(allowed(10, slowedRun.stallMs, { factor: 0.5 }));
    },
  );
});

describe('Redis unreachable (docs/performance.md: "each process paces alone in memory")', () => {
  const redisUrl = process.env.REDIS_URL;
  it.skipIf(!redisUrl)(
    '"as the limiter fails open": sends keep going, paced in memory, with one log line for the outage; back in Redis when it answers',
    async () => {
      const target = new URL(redisUrl!);
      // A TCP relay in front of Redis that the test can cut (a fake network, not our code).
      const sockets = new Set<Socket>();
      let relay: NetServer | null = null;
      const openRelay = (port: number) =>
        new Promise<number>((resolve, reject) => {
          relay = createServer((client) => {
            const upstream = connect(Number(target.port || 6379), target.hostname);
            for (const x of [client, upstream]) {
              sockets.add(x);
              x.on('error', () => {});
              x.on('close', () => sockets.delete(x));
            }
            client.pipe(upstream).pipe(client);
            client.on('close', () => upstream.destroy());
            upstream.on('close', () => client.destroy());
          });
          relay.once('error', reject);
          relay.listen(port, '127.0.0.1', () => resolve((relay!.address() as AddressInfo).port));
        });
      const cutRelay = () =>
        new Promise<void>((resolve) => {
          for (const x of sockets) x.destroy();
          relay!.close(() => resolve());
        });
      const lines: string[] = [];
      const logDestination = new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      });
      const port = await openRelay(0);
      const prefix = `chasqui-test-pace-${process.pid}-${Date.now()}`;
      const alone = await startTestApp({
        env: { ...CLOUD_ENV, GRAPH_API_URL: fake.url, REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_KEY_PREFIX: prefix, LOG_LEVEL: 'warn' },
        logDestination,
      });
      const direct = new Redis(redisUrl!);
      try {
        const n = await cloudNumber(alone, 5);
        const key = `${prefix}:pace:${n.id}`;
        const to = freshPhone();
        expect((await send(alone, n, to)).status).toBe(201);
        const first = await direct.hget(key, 't');
        expect(first).not.toBeNull();

        await cutRelay();
        fake.reset();
        const answers = await Promise.all([0, 1, 2, 3].map(() => send(alone, n, to)));
        expect(answers.map((r) => r.status)).toEqual([201, 201, 201, 201]);
        // Paced in this process meanwhile: 5 a second at 93 %, ≈ 215 ms apart.
        for (const g of gaps(arrivals(n))) expect(g).toBeGreaterThanOrEqual(150);
        expect(await direct.hget(key, 't')).toBe(first);
        const outage = lines.filter((l) => l.includes('each process paces its numbers alone'));
        expect(outage).toHaveLength(1);

        await openRelay(port);
        // ioredis reconnects on its own schedule: send until a slot is reserved in Redis again.
        const until = Date.now() + 10_000;
        while ((await direct.hget(key, 't')) === first && Date.now() < until) {
          expect((await send(alone, n, to)).status).toBe(201);
          await new Promise((r) => setTimeout(r, 200));
        }
        expect(await direct.hget(key, 't')).not.toBe(first);
        expect(lines.filter((l) => l.includes("numbers' send slots are shared across processes again"))).toHaveLength(1);
      } finally {
        await alone.close();
        await cutRelay();
        direct.disconnect();
      }
    },
    60_000,
  );
});
