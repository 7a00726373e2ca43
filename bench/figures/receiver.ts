// The WhatsApp Cloud API receiver under Meta's load (issue 18): signed batches of 10 messages at an
// offered 1,000 messages/s (100 POSTs/s, open loop) for DURATION seconds to a connected cloud
// number. Two figures: the receiver's 200 (verify + one INSERT; goal ≤ 50 ms p99) and inbound →
// `message.received` queued (goal ≤ 1 s p99), measured from the start of the POST that carried a
// message to the `createdAt` of its event (the envelope a webhook subscription on a loopback
// receiver gets: the event row's created_at, the clock read when the inbound transaction that
// writes it runs). The arrival at the receiver (dispatcher included) is in the note.
import { createHmac, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { admin, benchAccount, connectCloudNumber, DURATION, must, nextPhone, quantile, type Server, sleep, UNLIMITED } from '../lib.js';
import { record } from '../report.js';

const PER_BATCH = 10;
const BATCHES_PER_S = 100;
/** Customers writing (each batch: 10 different ones, drawn at random: a customer's batches queue behind each other). */
const CUSTOMERS = 1000;

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

  const customers = Array.from({ length: CUSTOMERS }, (_, i) => `5491170${String(100_000 + i).padStart(6, '0')}`);
  let seq = 0;

  /** Offers `batchesPerS` signed batches a second for `seconds` (open loop) and waits for every event. */
  const phase = async (batchesPerS: number, seconds: number) => {
    const sentAt = new Map<string, number>();
    const acks: number[] = [];
    let refused = 0;
    events.clear();
    duplicates = 0;
    const postBatch = async () => {
      const t0 = performance.now();
      const wall = Date.now();
      const ts = String(Math.floor(wall / 1000));
      const picked = new Set<string>();
      while (picked.size < PER_BATCH) picked.add(customers[Math.floor(Math.random() * CUSTOMERS)]!);
      const messages = [...picked].map((from) => {
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
                  contacts: [...picked].map((from) => ({ profile: { name: 'Cliente' }, wa_id: from })),
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
        const res = await fetch(`${server.url}/channels/whatsapp/webhook`, {
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
    const queued: number[] = [];
    const delivered: number[] = [];
    for (const [wamid, e] of events) {
      const t = sentAt.get(wamid);
      if (t === undefined) continue;
      queued.push(e.createdAt - t);
      delivered.push(e.at - t);
    }
    return { acks, refused, offered, expected, queued, delivered, events: events.size, duplicates };
  };

  const p = await phase(BATCHES_PER_S, DURATION);
  const ackP99 = quantile(p.acks, 0.99);
  const queuedP99 = quantile(p.queued, 0.99);
  record({
    figure: 'Cloud receiver 200 at 100 batches/s × 10 messages',
    value: ackP99,
    unit: 'ms p99',
    floor: '-',
    floorValue: null,
    ratio: null,
    goal: '≤ 50',
    pass: ackP99 <= 50 && p.refused === 0,
    note: `p50 ${quantile(p.acks, 0.5).toFixed(1)} ms, ${p.acks.length} answered 200, ${p.refused} not, ${p.offered} messages/s offered`,
  });
  record({
    figure: 'Cloud inbound → message.received queued at 1,000 messages/s',
    value: queuedP99,
    unit: 'ms p99',
    floor: '-',
    floorValue: null,
    ratio: null,
    goal: '≤ 1,000',
    pass: queuedP99 <= 1000 && p.events >= p.expected && p.duplicates === 0,
    note: `p50 ${quantile(p.queued, 0.5)} ms; delivered to the webhook p50 ${quantile(p.delivered, 0.5)} ms, p99 ${quantile(p.delivered, 0.99)} ms; ${p.events} of ${p.expected} events, ${p.duplicates} duplicates`,
  });
  // The same at a tenth of the rate: what the receipt and the queue cost when processing keeps up.
  const q = await phase(BATCHES_PER_S / 10, DURATION);
  record({
    figure: '  the same at 10 batches/s (100 messages/s): 200',
    value: quantile(q.acks, 0.99),
    unit: 'ms p99',
    floor: '-',
    floorValue: null,
    ratio: null,
    goal: '-',
    pass: null,
    note: `p50 ${quantile(q.acks, 0.5).toFixed(1)} ms; queued p50 ${quantile(q.queued, 0.5)} ms, p99 ${quantile(q.queued, 0.99)} ms; ${q.events} of ${q.expected} events, ${q.duplicates} duplicates`,
  });
  hook.closeAllConnections();
  hook.close();
}
