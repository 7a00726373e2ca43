// The metrics' cost (docs/operating.md "Metrics"): GET /me on a server with METRICS=on against the
// same code with METRICS=off (no hook, nothing counted), each on its own database of the same kind,
// measured in interleaved slices (on, off, on, off …) with the same load.
import {
  ADMIN_TOKEN,
  benchAccount,
  CONNECTIONS,
  checkClean,
  DURATION,
  type LoadResult,
  load,
  meanOf,
  serverEnv,
  startServer,
  UNLIMITED,
} from '../lib.js';
import { fmt, record } from '../report.js';

/** Rounds (fresh server processes each), and slices of each target's load taken in turn. */
const ROUNDS = 3;
const SLICES = 4;
/** Load before a fresh process's first slice, not counted (V8 still optimizing). */
const WARMUP_SECONDS = 5;

const TARGETS = ['on', 'off'] as const;
type Target = (typeof TARGETS)[number];

export async function metricsFigure(): Promise<void> {
  const limits = { ...UNLIMITED, requestsPerMinute: 1_000_000_000, apiCallsPerMonth: 1_000_000_000_000 };
  const setup = await Promise.all(
    TARGETS.map(async (t) => {
      const { env, db } = await serverEnv(`metrics${t}`);
      const server = await startServer({ ...env, METRICS: t });
      const account = await benchAccount(server.url, limits, `bench-metrics-${t}`);
      await server.stop();
      return { env: server.env, port: server.port, db, account };
    }),
  );
  const runs: Record<Target, LoadResult[]> = { on: [], off: [] };
  let counted = 0;
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const servers = await Promise.all(setup.map((s) => startServer(s.env, { port: s.port })));
      try {
        for (let slice = 0; slice < SLICES; slice++) {
          for (const [i, name] of TARGETS.entries()) {
            const server = servers[i]!;
            runs[name].push(
              await load({
                url: `${server.url}/api/v1/me`,
                headers: { authorization: `Bearer ${setup[i]!.account.key}` },
                pid: server.proc.pid,
                duration: DURATION / SLICES,
                connections: CONNECTIONS,
                warmup: slice === 0 && WARMUP_SECONDS,
              }),
            );
          }
        }
        // The "on" server did count: its /metrics names GET /api/v1/me; the "off" one has none.
        const on = await fetch(`${servers[0]!.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        const text = await on.text();
        const line = text
          .split('\n')
          .find((l) => l.startsWith('chasqui_http_requests_total{method="GET",route="/api/v1/me",status="200"}'));
        counted += Number(line?.split(' ').pop() ?? 0);
        const off = await fetch(`${servers[1]!.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        if (off.status !== 404) console.log(`  ! METRICS=off answered /metrics with ${off.status}`);
      } finally {
        await Promise.all(servers.map((s) => s.stop()));
      }
    }
  } finally {
    for (const s of setup) await s.db?.drop();
  }
  const [on, off] = TARGETS.map((t) => meanOf(runs[t])) as [LoadResult, LoadResult];
  checkClean('GET /me (metrics on)', on);
  checkClean('GET /me (metrics off)', off);
  const range = (t: Target) => {
    const rps = runs[t].map((r) => r.rps);
    return `${fmt(Math.min(...rps))}–${fmt(Math.max(...rps))}`;
  };
  const cpu = (r: LoadResult) => (r.cpuUs === undefined ? '?' : r.cpuUs.toFixed(1));
  console.log(
    `  ${ROUNDS} process pairs × ${SLICES} interleaved slices of ${DURATION / SLICES} s, req/s range — on ${range('on')}; off ${range('off')}; GET /me counted by /metrics ${fmt(counted)} (warm-ups included; ${fmt(on.requests)} measured)`,
  );
  const ratio = on.rps / off.rps;
  record({
    figure: 'GET /me with metrics on vs METRICS=off',
    value: on.rps,
    unit: 'req/s',
    floor: 'metrics off',
    floorValue: off.rps,
    ratio,
    goal: '≥ 0.95',
    pass: ratio >= 0.95,
    note: `server CPU ${cpu(on)} vs ${cpu(off)} µs per request; p99 ${on.p99} vs ${off.p99} ms`,
  });
}
