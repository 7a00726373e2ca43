// Campaigns at the number's throughput tier (docs/performance.md "Campaigns"), PostgreSQL only (the
// audiences are seeded with SQL): a campaign of 10,000 against a fake Graph answering every send
// in 100 ms, at tier 1,000/s and at tier 80/s (measured at the fake Graph: sends per second and the
// most in any one-second window), the API's GET p99 while the 1,000/s campaign runs against the
// same GET when idle, and how long a 100,000-recipient campaign takes to send its first message.
import autocannon from 'autocannon';
import { startFakeGraph } from '../../test/fakes/graph.js';
import {
  admin,
  BASE_URL,
  benchAccount,
  connectCloudNumber,
  cpuMs,
  must,
  type Server,
  serverEnv,
  sleep,
  startServer,
  syncCloudTemplate,
  UNLIMITED,
} from '../lib.js';
import { record } from '../report.js';

const GRAPH_MS = 100;
const AUDIENCE = 10_000;
const BIG_AUDIENCE = 100_000;
/** The tier-80 campaign is watched this long, then cancelled (10,000 at 80/s would take 2 minutes). */
const LOW_TIER_WATCH_MS = 12_000;
/** The API's GET while idle and during the campaign: an offered rate, so latency is not throughput. */
const API_RATE = 200;
const API_SECONDS = 6;

/** The most values of `times` (ms, sorted) inside any window [t, t + 1000). */
function maxInAnySecond(times: number[]): number {
  let best = 0;
  let j = 0;
  for (let i = 0; i < times.length; i++) {
    while (times[i]! - times[j]! >= 1000) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

/** Sends per second between the first and the last send (the campaign's steady rate). */
function rateOf(times: number[]): number {
  if (times.length < 2) return 0;
  return ((times.length - 1) * 1000) / (times[times.length - 1]! - times[0]!);
}

async function apiP99(server: Server, key: string): Promise<number> {
  const r = await autocannon({
    url: `${server.url}/api/v1/templates`,
    headers: { authorization: `Bearer ${key}` },
    connections: 8,
    overallRate: API_RATE,
    duration: API_SECONDS,
  });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`GET /templates: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return r.latency.p99;
}

export async function campaignFigures() {
  if (!BASE_URL) {
    record({
      figure: 'campaign of 10,000 at tier 1,000/s',
      value: Number.NaN,
      unit: 'msg/s',
      floor: 'tier',
      floorValue: 1000,
      ratio: null,
      goal: '≥ 0.90',
      pass: null,
      note: 'PostgreSQL only: set DATABASE_URL',
    });
    return;
  }
  const graph = await startFakeGraph();
  graph.latencyMs = GRAPH_MS;
  const { env, db } = await serverEnv('benchcampaigns');
  const server = await startServer({ ...env, GRAPH_API_URL: graph.url });
  const { default: pgmod } = await import('pg');
  const client = new pgmod.Client({ connectionString: server.env.DATABASE_URL });
  await client.connect();
  try {
    const acc = await benchAccount(server.url, UNLIMITED, 'bench-campaigns');
    const { number, cloud } = await connectCloudNumber(server.url, acc.id, '+54 9 11 4100-0000');
    const template = await syncCloudTemplate(server.url, acc.id, graph, cloud.wabaId, {
      name: 'bench_promo',
      category: 'MARKETING',
      parameter_format: 'NAMED',
      components: [
        {
          type: 'BODY',
          text: 'Hola {{nombre}}, hoy hay 2x1.',
          example: { body_text_named_params: [{ param_name: 'nombre', example: 'Ana' }] },
        },
      ],
    });
    const seed = (lote: string, prefix: string, n: number) =>
      client.query(
        `INSERT INTO contacts (id, account_id, phone, name, attributes, opted_out, marketing_opt_out, created_at, updated_at)
         SELECT gen_random_uuid(), $1, $2 || lpad(g::text, 6, '0'), 'Cliente ' || g, jsonb_build_object('lote', $3::text, 'nombre', 'Cliente ' || g),
           false, false, now(), now()
         FROM generate_series(1, $4::int) g`,
        [acc.id, prefix, lote, n],
      );
    await seed('a', '5491150', AUDIENCE);
    await seed('b', '5491160', BIG_AUDIENCE);
    const tier = (perSecond: number) =>
      must(
        admin(server.url, 'PATCH', `/accounts/${acc.id}/phone-numbers/${number.id}`, { throughputPerSecond: perSecond }),
        200,
        'set tier',
      );
    const start = (lote: string) =>
      must(
        admin(server.url, 'POST', `/accounts/${acc.id}/campaigns`, {
          name: `Lote ${lote}`,
          templateId: template.id,
          phoneNumberId: number.id,
          audience: { attributes: { lote } },
        }),
        201,
        'create campaign',
      );
    const view = (id: string) => must(admin(server.url, 'GET', `/accounts/${acc.id}/campaigns/${id}`), 200, 'read campaign');
    const sendTimes = () =>
      graph
        .sends()
        .map((c) => c.at)
        .sort((a, b) => a - b);

    const idle = await apiP99(server, acc.key);

    // Tier 1,000/s: the whole campaign, the API measured while it runs.
    await tier(1000);
    graph.reset();
    const cpu0 = cpuMs(server.proc.pid);
    const fast = await start('a');
    const during = apiP99(server, acc.key);
    const deadline = Date.now() + 120_000;
    let done = await view(fast.id);
    while (done.status === 'sending' && Date.now() < deadline) {
      await sleep(250);
      done = await view(fast.id);
    }
    const cpuPerMsg = ((cpuMs(server.proc.pid) - cpu0) * 1000) / Math.max(1, done.sent);
    const busy = await during;
    const times = sendTimes();
    const recipients = new Set(graph.sends().map((c) => c.body?.to)).size;
    const rate = rateOf(times);
    record({
      figure: 'campaign of 10,000 at tier 1,000/s (Graph 100 ms)',
      value: rate,
      unit: 'msg/s',
      floor: 'tier',
      floorValue: 1000,
      ratio: rate / 1000,
      goal: '≥ 0.90',
      pass: rate / 1000 >= 0.9,
      note: `${done.status}: sent ${done.sent} of ${done.recipients}, ${times.length} sends to ${recipients} numbers, max ${maxInAnySecond(times)} in any 1 s, server CPU ${Math.round(cpuPerMsg)} µs/msg (API load included)`,
    });
    record({
      figure: 'API GET p99 during the 1,000/s campaign vs idle',
      value: busy,
      unit: 'ms',
      floor: 'idle p99',
      floorValue: idle,
      ratio: busy / idle,
      goal: '≤ 2.00',
      pass: busy / idle <= 2,
      note: `GET /templates at ${API_RATE} req/s`,
    });

    // Tier 80/s: watched for LOW_TIER_WATCH_MS, then cancelled.
    await tier(80);
    graph.reset();
    const slow = await start('a');
    await sleep(LOW_TIER_WATCH_MS);
    await must(admin(server.url, 'POST', `/accounts/${acc.id}/campaigns/${slow.id}/cancel`), 200, 'cancel');
    await sleep(1_000);
    const slowTimes = sendTimes();
    const slowRate = rateOf(slowTimes);
    const slowMax = maxInAnySecond(slowTimes);
    record({
      figure: 'campaign of 10,000 at tier 80/s, first 12 s',
      value: slowRate,
      unit: 'msg/s',
      floor: 'tier',
      floorValue: 80,
      ratio: slowRate / 80,
      goal: '≥ 0.90',
      pass: slowRate / 80 >= 0.9 && slowMax <= 80,
      note: `max ${slowMax} in any 1 s (never above 80)`,
    });

    // 100,000 recipients: from the 201 to the first send at Graph.
    await tier(1000);
    graph.reset();
    const t0 = Date.now();
    const big = await start('b');
    const created = Date.now() - t0;
    while (graph.sends().length === 0 && Date.now() - t0 < 60_000) await sleep(5);
    const first = (graph.sends()[0]?.at ?? Number.NaN) - t0;
    await must(admin(server.url, 'POST', `/accounts/${acc.id}/campaigns/${big.id}/cancel`), 200, 'cancel');
    record({
      figure: 'campaign of 100,000: create → first send at Graph',
      value: first,
      unit: 'ms',
      floor: '-',
      floorValue: null,
      ratio: null,
      goal: '≤ 5,000',
      pass: first <= 5000,
      note: `POST answered in ${created} ms with ${big.recipients} recipients counted`,
    });
  } finally {
    await client.end();
    await server.stop();
    await db?.drop();
    await graph.close();
  }
}
