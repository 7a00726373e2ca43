// GET /me against the same server's GET /healthz (the guard pipeline's own cost: key, plan, caps,
// quota, the account's view), and the limits' cost (LIMITS=off, and an unlimited account).

import {
  benchAccount,
  CONNECTIONS,
  checkClean,
  DURATION,
  type LoadResult,
  load,
  meanOf,
  type Server,
  serverEnv,
  startServer,
  UNLIMITED,
} from '../lib.js';
import { fmt, record } from '../report.js';

/** Rounds (fresh server processes each), and slices of each target's load taken in turn. */
const ROUNDS = 4;
const SLICES = 4;
/**
 * Load before a fresh process's first slice, not counted: after 2 s a third of the processes still
 * ran their first slice 10–60 % slower than the later ones (V8 still optimizing).
 */
const WARMUP_SECONDS = 5;

const TARGETS = ['me', 'healthz', 'off', 'unlimited'] as const;
type Target = (typeof TARGETS)[number];

/**
 * Two processes running the same code differ by up to ±15 % for their whole life, and the machine's
 * speed drifts over seconds: so each round starts fresh processes, warms every target up, and
 * measures the targets in turn in short slices; each figure is the mean of all its slices, with
 * each server's CPU time per request read from /proc. Returns the bench server, started again.
 */
export async function meFigures(server: Server): Promise<Server> {
  const limited = await benchAccount(server.url, { ...UNLIMITED, requestsPerMinute: 1_000_000_000, apiCallsPerMonth: 1_000_000_000_000 });
  // The same server's account without caps or quota: no limiter work and no rate-limit headers.
  const unlimited = await benchAccount(server.url, UNLIMITED, 'bench-unlimited');
  // "Limits off": the same code with LIMITS=off (no caps, quota or IP block), on its own database.
  const { env: offEnv, db: offDb } = await serverEnv('benchoff');
  let offServer = await startServer({ ...offEnv, LIMITS: 'off' });
  const offAccount = await benchAccount(offServer.url, UNLIMITED, 'bench-off');
  await offServer.stop();
  const runs: Record<Target, LoadResult[]> = { me: [], healthz: [], off: [], unlimited: [] };
  // One process at a time on a data directory (PGlite): the bench server rests meanwhile.
  await server.stop();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const on = await startServer(server.env, { port: server.port });
      offServer = await startServer(offServer.env, { port: offServer.port });
      try {
        const auth = (key: string) => ({ authorization: `Bearer ${key}` });
        const targets: Record<Target, { url: string; headers?: Record<string, string>; pid?: number }> = {
          me: { url: `${on.url}/api/v1/me`, headers: auth(limited.key), pid: on.proc.pid },
          healthz: { url: `${on.url}/healthz`, pid: on.proc.pid },
          off: { url: `${offServer.url}/api/v1/me`, headers: auth(offAccount.key), pid: offServer.proc.pid },
          unlimited: { url: `${on.url}/api/v1/me`, headers: auth(unlimited.key), pid: on.proc.pid },
        };
        for (let slice = 0; slice < SLICES; slice++) {
          for (const name of TARGETS) {
            const warmup = slice === 0 && WARMUP_SECONDS;
            runs[name].push(await load({ ...targets[name], duration: DURATION / SLICES, connections: CONNECTIONS, warmup }));
          }
        }
      } finally {
        await on.stop();
        await offServer.stop();
      }
    }
  } finally {
    await offDb?.drop();
  }
  report(runs);
  return startServer(server.env, { port: server.port });
}

function report(runs: Record<Target, LoadResult[]>): void {
  const [me, healthz, off, unlimited] = TARGETS.map((t) => meanOf(runs[t])) as [LoadResult, LoadResult, LoadResult, LoadResult];
  const range = (t: Target) => {
    const rps = runs[t].map((r) => r.rps);
    return `${fmt(Math.min(...rps))}–${fmt(Math.max(...rps))}`;
  };
  const cpu = (r: LoadResult) => (r.cpuUs === undefined ? '?' : r.cpuUs.toFixed(1));
  console.log(
    `  ${ROUNDS} processes × ${SLICES} interleaved slices of ${DURATION / SLICES} s, req/s range — /me ${range('me')}; /healthz ${range('healthz')}; limits off ${range('off')}; unlimited ${range('unlimited')}`,
  );
  console.log(
    `  server CPU per request (µs) — /me ${cpu(me)}; /healthz ${cpu(healthz)}; limits off ${cpu(off)}; unlimited ${cpu(unlimited)}`,
  );
  checkClean('GET /me', me);
  checkClean('GET /healthz', healthz);
  checkClean('GET /me (limits off)', off);
  const ratio = me.rps / healthz.rps;
  record({
    figure: 'GET /api/v1/me req/s (guards + account view)',
    value: me.rps,
    unit: 'req/s',
    floor: 'GET /healthz, same server',
    floorValue: healthz.rps,
    ratio,
    goal: '≥ 0.75',
    pass: ratio >= 0.75,
    note: `p99 ${me.p99} ms; server CPU ${cpu(me)} vs ${cpu(healthz)} µs per request`,
  });
  record({
    figure: 'GET /me with limits on vs LIMITS=off',
    value: me.rps,
    unit: 'req/s',
    floor: 'limits off',
    floorValue: off.rps,
    ratio: me.rps / off.rps,
    goal: '≥ 0.90',
    pass: me.rps / off.rps >= 0.9,
    note: `${cpuOverhead(me, off)} server CPU per request${process.env.REDIS_URL ? ', Redis counters' : ', memory counters'}`,
  });
  record({
    figure: 'GET /me, limited vs unlimited account, same process',
    value: me.rps,
    unit: 'req/s',
    floor: 'unlimited account',
    floorValue: unlimited.rps,
    ratio: me.rps / unlimited.rps,
    goal: 'report',
    pass: null,
    note: `${cpuOverhead(me, unlimited)} server CPU per request; no process-to-process spread`,
  });
}

const cpuOverhead = (on: LoadResult, off: LoadResult): string =>
  on.cpuUs === undefined || off.cpuUs === undefined ? '?' : `+${((on.cpuUs / off.cpuUs - 1) * 100).toFixed(1)} %`;
