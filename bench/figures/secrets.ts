// Sealed credentials on the send path (docs/privacy.md "Secrets sealed at rest"): POST /messages
// through the Cloud provider against a fake Graph, from a number whose credentials are sealed
// (as the operator API stores them) against the same build with them in plain text: a second
// account whose number's credentials the bench writes back plain with SQL, which `open()` passes
// through (there is no "sealing off" knob). Same server, rounds alternated. PostgreSQL only: the
// plain row is written while the server runs (PGlite is one process, and a restart seals it).
import pg from 'pg';
import { startFakeGraph } from '../../test/fakes/graph.js';
import {
  admin,
  BASE_URL,
  benchAccount,
  CONNECTIONS,
  call,
  checkClean,
  connectCloudNumber,
  DURATION,
  type LoadResult,
  load,
  meanOf,
  must,
  nextPhone,
  serverEnv,
  startServer,
  syncCloudTemplate,
  UNLIMITED,
} from '../lib.js';
import { record } from '../report.js';

const FIGURE = 'POST /messages (Cloud, credentials sealed) req/s';
const ROUNDS = 2;

export async function secretsFigure(): Promise<void> {
  if (!BASE_URL) {
    record({
      figure: FIGURE,
      value: Number.NaN,
      unit: 'req/s',
      floor: 'credentials plain',
      floorValue: Number.NaN,
      ratio: null,
      goal: '≥ 0.97',
      pass: null,
      note: 'PostgreSQL only: set DATABASE_URL',
    });
    return;
  }
  const graph = await startFakeGraph();
  const { env, db } = await serverEnv('benchsecrets');
  const server = await startServer({ ...env, GRAPH_API_URL: graph.url });
  const client = new pg.Client({ connectionString: server.env.DATABASE_URL });
  await client.connect();
  try {
    /** An account with a Cloud number at tier 1,000/s and a synced approved template. */
    const sender = async (tag: string, phone: string) => {
      const acc = await benchAccount(server.url, UNLIMITED, `bench-secrets-${tag}`);
      const { number, cloud } = await connectCloudNumber(server.url, acc.id, phone);
      graph.tokens.set(cloud.phoneNumberId, cloud.accessToken);
      graph.tokens.set(cloud.wabaId, cloud.accessToken);
      await must(admin(server.url, 'PATCH', `/accounts/${acc.id}/phone-numbers/${number.id}`, { throughputPerSecond: 1000 }), 200, 'tier');
      const template = await syncCloudTemplate(server.url, acc.id, graph, cloud.wabaId, {
        name: 'bench_envio',
        category: 'UTILITY',
        parameter_format: 'NAMED',
        components: [
          {
            type: 'BODY',
            text: 'Hola {{nombre}}, tu pedido salió.',
            example: { body_text_named_params: [{ param_name: 'nombre', example: 'Ana' }] },
          },
        ],
      });
      return { acc, number, cloud, template };
    };
    const sealed = await sender('sealed', '+54 9 11 4200-0000');
    const plain = await sender('plain', '+54 9 11 4300-0000');
    // The previous version's row: the same kind of credentials, not sealed.
    await client.query('UPDATE phone_numbers SET cloud_access_token = $2, cloud_app_secret = $3, cloud_verify_token = $4 WHERE id = $1', [
      plain.number.id,
      plain.cloud.accessToken,
      plain.cloud.appSecret,
      plain.cloud.verifyToken,
    ]);
    // Written by hand: announced as the services do (channel/hot-reads.ts), so no send keeps the sealed row.
    await client.query(`SELECT pg_notify('chasqui_hot_reads', '*')`);
    const stored = await client.query('SELECT id, left(cloud_access_token, 10) AS head FROM phone_numbers WHERE id = ANY($1)', [
      [sealed.number.id, plain.number.id],
    ]);
    const heads = new Map(stored.rows.map((r: { id: string; head: string }) => [r.id, r.head]));
    if (heads.get(sealed.number.id) !== 'sealed:v1:' || heads.get(plain.number.id) === 'sealed:v1:')
      throw new Error(`secrets figure: unexpected stored tokens ${JSON.stringify([...heads])}`);

    // One send each first: both answer 201 (a figure over refusals would measure nothing).
    for (const [s, prefix] of [
      [plain, 6],
      [sealed, 6],
    ] as const)
      await must(
        call(
          server.url,
          'POST',
          '/api/v1/messages',
          { to: nextPhone(prefix), phoneNumberId: s.number.id, template: { id: s.template.id, variables: { nombre: 'Ana' } } },
          { authorization: `Bearer ${s.acc.key}` },
        ),
        201,
        'first send',
      );

    const run = (s: typeof sealed, prefix: number, duration = DURATION / ROUNDS) =>
      load({
        url: `${server.url}/api/v1/messages`,
        method: 'POST',
        duration,
        connections: CONNECTIONS,
        pid: server.proc.pid,
        headers: { authorization: `Bearer ${s.acc.key}`, 'content-type': 'application/json' },
        requests: [
          {
            setupRequest: (req: any) => ({
              ...req,
              body: JSON.stringify({
                to: nextPhone(prefix),
                phoneNumberId: s.number.id,
                template: { id: s.template.id, variables: { nombre: 'Ana' } },
              }),
            }),
          },
        ],
      });
    const sealedRuns: LoadResult[] = [];
    const plainRuns: LoadResult[] = [];
    // One uncounted second of each first (the JIT and the pool warm up on whichever runs first).
    await run(plain, 6, 1);
    await run(sealed, 6, 1);
    for (let i = 0; i < ROUNDS; i++) {
      // Alternated in ABBA order, so a drift of the machine weighs on both alike.
      const order = i % 2 === 0 ? (['plain', 'sealed'] as const) : (['sealed', 'plain'] as const);
      for (const which of order) {
        if (which === 'plain') plainRuns.push(await run(plain, 6));
        else sealedRuns.push(await run(sealed, 6));
      }
    }
    const s = meanOf(sealedRuns);
    const p = meanOf(plainRuns);
    checkClean('POST /messages (sealed)', s);
    checkClean('POST /messages (plain)', p);
    const bearer = `Bearer ${sealed.cloud.accessToken}`;
    if (!graph.sends().some((c) => c.headers.authorization === bearer)) throw new Error('secrets figure: no send carried the sealed token');
    const ratio = s.rps / p.rps;
    record({
      figure: FIGURE,
      value: s.rps,
      unit: 'req/s',
      floor: 'credentials plain (same build)',
      floorValue: p.rps,
      ratio,
      goal: '≥ 0.97',
      pass: ratio >= 0.97,
      note: `p99 ${s.p99} vs ${p.p99} ms; server CPU ${s.cpuUs?.toFixed(0) ?? '?'} vs ${p.cpuUs?.toFixed(0) ?? '?'} µs/req; no cache of opened values`,
    });
  } finally {
    await client.end();
    await server.stop();
    await db?.drop();
    await graph.close();
  }
}
