// Webhook deliveries per second to a loopback receiver, and event-to-delivery latency at 500 events/s.
import { createServer } from 'node:http';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/index.js';
import { newId } from '../../src/lib/ids.js';
import { emitEvent } from '../../src/webhooks/outbox.js';
import { admin, benchAccount, DURATION, load, must, nextPhone, quantile, serverEnv, sleep, startServer, UNLIMITED } from '../lib.js';
import { record } from '../report.js';

/** Webhook deliveries/s to a loopback receiver, and event-to-delivery latency at 500 events/s. */
export async function webhookFigures() {
  const arrivals: { at: number; createdAt: number; id: string }[] = [];
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      try {
        arrivals.push({ at: Date.now(), createdAt: Date.parse(JSON.parse(body).createdAt), id: String(req.headers['webhook-id']) });
      } catch {
        /* count only envelopes */
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const port = (receiver.address() as { port: number }).port;

  // Throughput: a backlog of N pending deliveries written while the server is stopped, then
  // drained by a fresh process; deliveries/s from the first to the last arrival.
  const { env, db } = await serverEnv('benchwh');
  let server = await startServer(env);
  const acc = await benchAccount(server.url, UNLIMITED, 'bench-webhooks');
  await must(admin(server.url, 'POST', `/accounts/${acc.id}/webhooks`, { url: `http://127.0.0.1:${port}/hook` }), 201, 'create webhook');
  await server.stop();
  const N = 10_000;
  const database = await openDatabase(loadConfig({ DATABASE_URL: env.DATABASE_URL ?? '', DATA_DIR: server.env.DATA_DIR }).database);
  for (let i = 0; i < N; i += 500) {
    await database.db.transaction().execute(async (trx) => {
      for (let j = 0; j < 500; j++) {
        await emitEvent(
          trx,
          { accountId: acc.id, kind: 'contact.created', data: { source: 'api', contact: { id: newId(), n: i + j } } },
          new Date(),
        );
      }
    });
  }
  await database.close();
  arrivals.length = 0;
  const started = Date.now();
  server = await startServer(server.env, { port: server.port });
  const deadline = Date.now() + 120_000;
  while (arrivals.length < N && Date.now() < deadline) await sleep(50);
  const first = arrivals[0]?.at ?? started;
  const last = arrivals[arrivals.length - 1]?.at ?? Date.now();
  const dps = arrivals.length / Math.max(0.001, (last - first) / 1000);
  record({
    figure: `webhook deliveries/s to a loopback receiver (${N.toLocaleString('en-US')} queued)`,
    value: dps,
    unit: 'del/s',
    floor: '-',
    floorValue: null,
    ratio: null,
    goal: '≥ 2,000',
    pass: arrivals.length >= N && dps >= 2000,
    note: `${arrivals.length} arrived`,
  });

  // Latency: POST /contacts at a fixed 500 req/s → one contact.created each → one delivery each.
  arrivals.length = 0;
  const keyed = await benchAccount(server.url, UNLIMITED, 'bench-webhooks-latency');
  await must(admin(server.url, 'POST', `/accounts/${keyed.id}/webhooks`, { url: `http://127.0.0.1:${port}/hook` }), 201, 'create webhook');
  const r = await load({
    url: `${server.url}/api/v1/contacts`,
    method: 'POST',
    duration: DURATION,
    connections: 64,
    overallRate: 500,
    headers: { authorization: `Bearer ${keyed.key}`, 'content-type': 'application/json' },
    requests: [{ setupRequest: (req: any) => ({ ...req, body: JSON.stringify({ phone: nextPhone(4) }) }) }],
  });
  // autocannon counts the answers it read; requests in flight when it stops still create
  // contacts, so a few more events than `expected` may arrive. Duplicates are told apart by
  // webhook-id (a second send of one event).
  const expected = r.requests - r.non2xx;
  const until = Date.now() + 30_000;
  while (arrivals.length < expected && Date.now() < until) await sleep(50);
  await sleep(500);
  const unique = new Set(arrivals.map((a) => a.id)).size;
  const lat = arrivals.map((a) => a.at - a.createdAt);
  record({
    figure: 'event-to-delivery latency at 500 events/s',
    value: quantile(lat, 0.99),
    unit: 'ms p99',
    floor: '-',
    floorValue: null,
    ratio: null,
    goal: '≤ 250',
    pass: quantile(lat, 0.99) <= 250 && unique >= expected,
    note: `p50 ${quantile(lat, 0.5)} ms, ${unique} events delivered (${expected} answered 201), ${arrivals.length - unique} duplicates, ${Math.round(r.rps)} events/s`,
  });
  await server.stop();
  receiver.close();
  await db?.drop();
}
