// The WhatsApp Cloud receiver under Meta's load (issues 18 and 30): signed batches of 10 messages,
// each from a new customer (a new contact, conversation and case), offered open loop at a rising
// rate for DURATION seconds each to a connected cloud number. Per rate: the receiver's 200 (verify +
// one INSERT) and the delivery of each `message.received` to a webhook on a loopback receiver,
// from the start of the POST that carried the message to the envelope's arrival (the queue, the
// set-wise processing, the outbox and the dispatcher). The figure is the highest offered rate at
// which the 200's p99 ≤ 50 ms and every event arrived with p99 ≤ 1 s (issue 30: ≥ 800 messages/s).
// `BENCH_INBOUND_RATES` (messages/s, comma-separated) changes the steps.
// `BENCH_INBOUND_PROCESSES=2` (PostgreSQL only) starts a second server on the same database and
// Redis and sends every other batch to it, as a load balancer in front of two processes would
// (issue 30 item 5); the CPU per message is then both processes'.
import { createHmac, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import {
  admin,
  benchAccount,
  connectCloudNumber,
  cpuMs,
  DURATION,
  must,
  nextPhone,
  postgresCpuMs,
  quantile,
  type Server,
  sleep,
  startServer,
  UNLIMITED,
} from '../lib.js';
import { record } from '../report.js';

const PER_BATCH = 10;
const RATES = (process.env.BENCH_INBOUND_RATES ?? '200,400,600,800,1000,1200').split(',').map(Number);
const ACK_GOAL_MS = 50;
const DELIVERED_GOAL_MS = 1000;

export async function receiverFigure(server: Server): Promise<void> {
  // wamid → when the event was queued (createdAt) and when it arrived here.
  const events = new Map<string, { createdAt: number; at: number }>();
  let duplicates = 0;
  const hook = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      try {
        const e = JSON.parse(body);
        if (e.event === 'message.received') {
          if (events.has(e.data.wamid)) duplicates++;
          else events.set(e.data.wamid, { createdAt: Date.parse(e.createdAt), at: Date.now() });
        }
      } catch {
        /* count only envelopes */
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', () => r()));
  const hookUrl = `http://127.0.0.1:${(hook.address() as { port: number }).port}/hook`;

  const acc = await benchAccount(server.url, UNLIMITED, 'bench-receiver');
  const { number, cloud } = await connectCloudNumber(server.url, acc.id, nextPhone(7));
  const { phoneNumberId: graphId, wabaId, appSecret } = cloud;
  await must(admin(server.url, 'POST', `/accounts/${acc.id}/webhooks`, { url: hookUrl }), 201, 'create webhook');

  const servers = [server];
  if (process.env.BENCH_INBOUND_PROCESSES === '2' && server.env.DATABASE_URL?.startsWith('postgres')) {
    const { PORT: _port, ...env } = server.env;
    servers.push(await startServer(env));
  }
  const processes = servers.length;
  const serverCpuMs = () => servers.reduce((sum, s) => sum + cpuMs(s.proc.pid), 0);
  let seq = 0;

  /** Offers `batchesPerS` signed batches a second for `seconds` (open loop) and waits for every event. */
  const phase = async (batchesPerS: number, seconds: number) => {
    const sentAt = new Map<string, number>();
    const acks: number[] = [];
    let refused = 0;
    events.clear();
    duplicates = 0;
    let posts = 0;
    const postBatch = async () => {
      const target = servers[posts++ % processes] as Server;
      const t0 = performance.now();
      const wall = Date.now();
      const ts = String(Math.floor(wall / 1000));
      // Ten customers writing for the first time.
      const picked = Array.from({ length: PER_BATCH }, () => nextPhone(7).replace(/\D/g, ''));
      const messages = picked.map((from) => {
        const id = `wamid.bench${(++seq).toString(36)}${randomBytes(4).toString('hex')}`;
        sentAt.set(id, wall);
        return { from, id, timestamp: ts, type: 'text', text: { body: `Hola, consulta ${seq}` } };
      });
      const payload = {
        object: 'whatsapp_business_account',
        entry: [
          {
            id: wabaId,
            changes: [
              {
                field: 'messages',
                value: {
                  messaging_product: 'whatsapp',
                  metadata: { display_phone_number: number.phone, phone_number_id: graphId },
                  contacts: picked.map((from) => ({ profile: { name: 'Cliente' }, wa_id: from })),
                  messages,
                },
              },
            ],
          },
        ],
      };
      const raw = JSON.stringify(payload);
      const signature = `sha256=${createHmac('sha256', appSecret).update(raw).digest('hex')}`;
      try {
        const res = await fetch(`${target.url}/channels/whatsapp/webhook`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
          body: raw,
        });
        await res.arrayBuffer();
        if (res.status === 200) acks.push(performance.now() - t0);
        else refused++;
      } catch {
        refused++;
      }
    };

    // Open loop: a POST every 1000 / batchesPerS ms whether or not the previous ones were answered.
    const inFlight: Promise<void>[] = [];
    const cpu0 = { server: serverCpuMs(), pg: postgresCpuMs() };
    const start = performance.now();
    const total = seconds * batchesPerS;
    for (let i = 0; i < total; i++) {
      const wait = start + (i * 1000) / batchesPerS - performance.now();
      if (wait > 0) await sleep(wait);
      inFlight.push(postBatch());
    }
    await Promise.all(inFlight);
    const offered = Math.round((total * PER_BATCH) / ((performance.now() - start) / 1000));
    const expected = acks.length * PER_BATCH;
    const deadline = Date.now() + 120_000;
    while (events.size < expected && Date.now() < deadline) await sleep(100);
    await sleep(300);
    // CPU per message over the offering and the backlog's end (the deliveries included).
    const n = Math.max(1, events.size);
    const cpu = { server: (serverCpuMs() - cpu0.server) / n, pg: (postgresCpuMs() - cpu0.pg) / n };
    const queued: number[] = [];
    const delivered: number[] = [];
    for (const [wamid, e] of events) {
      const t = sentAt.get(wamid);
      if (t === undefined) continue;
      queued.push(e.createdAt - t);
      delivered.push(e.at - t);
    }
    return { acks, refused, offered, expected, queued, delivered, events: events.size, duplicates, cpu };
  };

  const on = processes === 1 ? '' : `, ${processes} processes`;
  let knee = 0;
  let last = '';
  for (const rate of RATES) {
    const p = await phase(rate / PER_BATCH, DURATION);
    const ackP99 = quantile(p.acks, 0.99);
    const deliveredP99 = quantile(p.delivered, 0.99);
    const pass =
      ackP99 <= ACK_GOAL_MS && deliveredP99 <= DELIVERED_GOAL_MS && p.refused === 0 && p.events >= p.expected && p.duplicates === 0;
    if (pass) knee = rate;
    last = `${rate}/s: 200 p99 ${ackP99.toFixed(1)} ms, delivered p99 ${deliveredP99} ms`;
    record({
      figure: `  new customers at ${rate} messages/s (${rate / PER_BATCH} batches/s${on}): delivered`,
      value: deliveredP99,
      unit: 'ms p99',
      floor: '-',
      floorValue: null,
      ratio: null,
      goal: `≤ ${DELIVERED_GOAL_MS}`,
      pass,
      note: `p50 ${quantile(p.delivered, 0.5)} ms; queued p50 ${quantile(p.queued, 0.5)} / p99 ${quantile(p.queued, 0.99)} ms; 200 p50 ${quantile(p.acks, 0.5).toFixed(1)} / p99 ${ackP99.toFixed(1)} ms; ${p.offered} offered; ${p.events} of ${p.expected} events, ${p.duplicates} duplicates, ${p.refused} refused; CPU per message: server ${(p.cpu.server * 1000).toFixed(0)} µs, PostgreSQL ${(p.cpu.pg * 1000).toFixed(0)} µs`,
    });
  }
  record({
    figure: `Cloud inbound capacity: new customers, signed batches of 10${on}`,
    value: knee,
    unit: 'msg/s',
    floor: '-',
    floorValue: null,
    ratio: null,
    goal: '≥ 800',
    pass: knee >= 800,
    note: `the highest rate with the 200 p99 ≤ ${ACK_GOAL_MS} ms and every message.received delivered p99 ≤ ${DELIVERED_GOAL_MS} ms; last step ${last}`,
  });
  for (const extra of servers.slice(1)) await extra.stop();
  hook.closeAllConnections();
  hook.close();
}
