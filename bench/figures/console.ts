// The console's live stream (docs/console.md "Live updates"): an inbound message on the account →
// its `message.received` read by each of 200 open GET /console/api/stream connections (10 agent
// members × 20 streams, the per-member cap), at an offered 100 events/s.
import { type ClientRequest, request } from 'node:http';
import { admin, benchAccount, cpuMs, must, nextPhone, quantile, serverEnv, sleep, startServer, UNLIMITED } from '../lib.js';
import { fmt, record } from '../report.js';

const MEMBERS = Number(process.env.BENCH_CONSOLE_MEMBERS ?? 10);
const PER_MEMBER = 20;
const RATE = Number(process.env.BENCH_CONSOLE_RATE ?? 100);
const SECONDS = Number(process.env.BENCH_CONSOLE_SECONDS ?? 10);
const GOAL_MS = 250;

/** One open stream: when each `message.received` arrived (by its text), and whether it is still open. */
interface OpenStream {
  req: ClientRequest;
  seen: Map<string, number>;
  ended: boolean;
}

/** GET /console/api/stream on its own socket (node:http, agent: false), parsed line by line. */
function openStream(url: string, cookie: string): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const u = new URL('/console/api/stream', url);
    const st: OpenStream = { req: undefined as unknown as ClientRequest, seen: new Map(), ended: false };
    st.req = request(u, { agent: false, headers: { cookie, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`stream: ${res.statusCode}`));
        res.resume();
        return;
      }
      res.setEncoding('utf8');
      let buf = '';
      let kind = '';
      res.on('data', (chunk: string) => {
        const now = performance.now();
        buf += chunk;
        let nl = buf.indexOf('\n');
        while (nl >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line.startsWith('event: ')) kind = line.slice(7);
          else if (line.startsWith('data: ') && kind === 'message.received') {
            const key = /bench-ev-\d+/.exec(line)?.[0];
            if (key && !st.seen.has(key)) st.seen.set(key, now);
          } else if (line === '') kind = '';
          nl = buf.indexOf('\n');
        }
      });
      res.on('close', () => {
        st.ended = true;
      });
      // The first bytes (': connected') say the stream is subscribed.
      res.once('data', () => resolve(st));
    });
    st.req.on('error', (err) => (st.ended ? undefined : reject(err)));
    st.req.end();
  });
}

/**
 * Per (stream, event) pair: from just before the bench sends POST /admin/v1/sandbox/inbound (a new
 * phone, a unique text) to the moment that stream's bytes carrying the event's `message.received`
 * arrived at the bench (performance.now(), the bench's own clock). So it includes the inbound
 * request (its transaction commits the event and its NOTIFY), the bus's read of the event and each
 * stream's session check and write. Open loop: one inbound every 1000/RATE ms whatever the
 * answers do.
 */
export async function consoleStreamFigure(): Promise<void> {
  const { env, db } = await serverEnv('benchconsole');
  const server = await startServer(env);
  const streams: OpenStream[] = [];
  try {
    const acc = await benchAccount(server.url, UNLIMITED, 'bench-console');
    const cookies: string[] = [];
    for (let m = 0; m < MEMBERS; m++) {
      const email = `agente${m}@bench.example`;
      const password = `bench-password-${m}-0123`;
      await must(
        admin(server.url, 'POST', `/accounts/${acc.id}/members`, { email, name: `Agente ${m}`, role: 'agent', password }),
        201,
        'create member',
      );
      const r = await fetch(`${server.url}/console/api/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password }),
      });
      await r.text();
      const cookie = r.headers.getSetCookie().find((c) => c.startsWith('chasqui_session='));
      if (r.status !== 204 || !cookie) throw new Error(`login: ${r.status}`);
      cookies.push(cookie.split(';')[0]!);
    }
    for (const cookie of cookies) {
      for (let i = 0; i < PER_MEMBER; i++) streams.push(await openStream(server.url, cookie));
    }
    // Warm-up, not counted: one second at the measured rate (the inbound path's first burst pays
    // for JIT and pool warm-up, which is not the fan-out's steady state).
    const warm: Promise<unknown>[] = [];
    for (let i = 0; i < RATE; i++) {
      warm.push(
        must(
          admin(server.url, 'POST', '/sandbox/inbound', {
            accountId: acc.id,
            from: nextPhone(5),
            text: `Hola, calentando bench-warm-${i}`,
          }),
          201,
          'warm-up inbound',
        ),
      );
      await sleep(1000 / RATE);
    }
    await Promise.all(warm);
    await sleep(1000);

    const sentAt = new Map<string, number>();
    /** When each inbound's 201 arrived: its transaction, the event's, had committed. */
    const committedAt = new Map<string, number>();
    const ackMs: number[] = [];
    let refused = 0;
    const total = RATE * SECONDS;
    const interval = 1000 / RATE;
    const inflight: Promise<void>[] = [];
    let lagMax = 0;
    const serverCpu0 = cpuMs(server.proc.pid);
    const benchCpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < total; i++) {
      const due = t0 + i * interval;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      lagMax = Math.max(lagMax, performance.now() - due);
      const text = `Hola, consulta bench-ev-${i}`;
      const key = `bench-ev-${i}`;
      const from = nextPhone(5);
      inflight.push(
        (async () => {
          const at = performance.now();
          const r = await admin(server.url, 'POST', '/sandbox/inbound', { accountId: acc.id, from, text }).catch((err: Error) => ({
            status: 0,
            body: String(err.cause ?? err.message),
          }));
          const answered = performance.now();
          ackMs.push(answered - at);
          if (r.status === 201) {
            sentAt.set(key, at);
            committedAt.set(key, answered);
          } else if (refused++ === 0) console.log(`  ! inbound refused: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
        })(),
      );
    }
    const offered = total / ((performance.now() - t0) / 1000);
    await Promise.all(inflight);
    // Every stream has every event (or 10 s more).
    const end = Date.now() + 10_000;
    while (Date.now() < end && !streams.every((st) => [...sentAt.keys()].every((k) => st.seen.has(k)))) await sleep(200);

    const wallS = (performance.now() - t0) / 1000;
    const serverCpu = (cpuMs(server.proc.pid) - serverCpu0) / 1000 / wallS;
    const benchUsage = process.cpuUsage(benchCpu0);
    const benchCpu = (benchUsage.user + benchUsage.system) / 1e6 / wallS;
    const lat: number[] = [];
    // The fan-out alone: from the inbound's 201 (its event committed and notified) to the stream's
    // bytes. Negative when the bytes beat the 201 back to the bench.
    const fanOut: number[] = [];
    let missed = 0;
    for (const st of streams) {
      for (const [k, at] of sentAt) {
        const seen = st.seen.get(k);
        if (seen === undefined) missed++;
        else {
          lat.push(seen - at);
          fanOut.push(seen - committedAt.get(k)!);
        }
      }
    }
    // A backlog that grows shows as later events seen later: the first and the last second apart.
    const bySecond = (from: number, to: number) => {
      const xs: number[] = [];
      for (const st of streams) {
        for (let i = from; i < to; i++) {
          const at = sentAt.get(`bench-ev-${i}`);
          const seen = st.seen.get(`bench-ev-${i}`);
          if (at !== undefined && seen !== undefined) xs.push(seen - at);
        }
      }
      return quantile(xs, 0.5).toFixed(0);
    };
    const closedEarly = streams.filter((st) => st.ended).length;
    const p99 = quantile(lat, 0.99);
    const q = (p: number) => quantile(lat, p).toFixed(0);
    record({
      figure: `console stream: message.received seen by ${streams.length} streams at ${RATE} events/s, p99`,
      value: p99,
      unit: 'ms p99',
      floor: 'the goal',
      floorValue: GOAL_MS,
      ratio: p99 / GOAL_MS,
      goal: `≤ ${GOAL_MS}`,
      pass: missed === 0 && refused === 0 && p99 <= GOAL_MS,
      note:
        `p50 ${q(0.5)} ms, p95 ${q(0.95)} ms, max ${lat.reduce((a, b) => Math.max(a, b), 0).toFixed(0)} ms (from the inbound POST sent); ` +
        `p50 of the first second's events ${bySecond(0, RATE)} ms, of the last second's ${bySecond(total - RATE, total)} ms; ` +
        `${fmt(lat.length)} stream×event pairs, ${missed} missed, ${closedEarly} streams closed early, ${refused} inbound refused; ` +
        `inbound answered p50 ${quantile(ackMs, 0.5).toFixed(0)} / p99 ${quantile(ackMs, 0.99).toFixed(0)} ms; ` +
        `from the inbound's 201 to the stream p50 ${quantile(fanOut, 0.5).toFixed(0)} / p99 ${quantile(fanOut, 0.99).toFixed(0)} ms; ` +
        `${offered.toFixed(0)} events/s offered (scheduler lag max ${lagMax.toFixed(0)} ms); ` +
        `CPU over the run (cores): server ${serverCpu.toFixed(2)}, bench ${benchCpu.toFixed(2)}`,
    });
  } finally {
    for (const st of streams) {
      st.ended = true;
      st.req.destroy();
    }
    await server.stop();
    await db?.drop();
  }
}
