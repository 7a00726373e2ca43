// The WhatsApp Cloud receiver through a SIGKILL (issue 18, docs/cloud.md "Inbound: acknowledged at
// once"): signed batches of 10 messages arrive faster than the server processes them, the server
// is killed right after some 200s (batches acknowledged, many not processed yet, some held by the
// killed worker), started again on the same database, and every acknowledged message must be
// stored exactly once, with one message.received, and no message twice.
import { createHmac, randomBytes } from 'node:crypto';
import pg from 'pg';
import { benchAccount, connectCloudNumber, nextPhone, type Server, sleep, startServer, UNLIMITED } from '../bench/lib.js';

const PER_BATCH = 10;
const BATCHES_PER_S = 60;
/** Acknowledged batches before the kill. */
const KILL_AFTER = 150;
const CUSTOMERS = 300;

export async function receiverKill(env: Record<string, string>): Promise<{ ok: boolean; line: string }> {
  const client = new pg.Client({ connectionString: env.DATABASE_URL });
  let server: Server = await startServer(env);
  try {
    await client.connect();
    const acc = await benchAccount(server.url, UNLIMITED, 'faults-receiver');
    const { number, cloud } = await connectCloudNumber(server.url, acc.id, nextPhone(8));
    const { phoneNumberId: graphId, wabaId, appSecret } = cloud;
    const customers = Array.from({ length: CUSTOMERS }, (_, i) => `5491180${String(100_000 + i).padStart(6, '0')}`);
    let seq = 0;
    const acknowledged: string[] = [];
    let acknowledgedBatches = 0;
    let failedPosts = 0;

    const postBatch = async (url: string) => {
      const picked = new Set<string>();
      while (picked.size < PER_BATCH) picked.add(customers[Math.floor(Math.random() * CUSTOMERS)]!);
      const ts = String(Math.floor(Date.now() / 1000));
      const messages = [...picked].map((from) => ({
        from,
        id: `wamid.faults${(++seq).toString(36)}${randomBytes(4).toString('hex')}`,
        timestamp: ts,
        type: 'text',
        text: { body: `Mensaje ${seq}` },
      }));
      const raw = JSON.stringify({
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
                  messages,
                },
              },
            ],
          },
        ],
      });
      try {
        const res = await fetch(`${url}/channels/whatsapp/webhook`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-hub-signature-256': `sha256=${createHmac('sha256', appSecret).update(raw).digest('hex')}`,
          },
          body: raw,
        });
        await res.arrayBuffer();
        if (res.status === 200) {
          acknowledged.push(...messages.map((m) => m.id));
          acknowledgedBatches++;
        } else failedPosts++;
      } catch {
        // Cut by the kill: not acknowledged (Meta would send it again).
        failedPosts++;
      }
    };

    // Open loop until KILL_AFTER batches are acknowledged; the kill lands with POSTs in flight.
    const inFlight: Promise<void>[] = [];
    const start = performance.now();
    for (let i = 0; acknowledgedBatches < KILL_AFTER && performance.now() - start < 60_000; i++) {
      const wait = start + (i * 1000) / BATCHES_PER_S - performance.now();
      if (wait > 0) await sleep(wait);
      inFlight.push(postBatch(server.url));
    }
    await server.kill();
    await Promise.allSettled(inFlight);
    const atKill = (await client.query(`SELECT count(*)::int AS n, count(claim)::int AS claimed FROM inbound_queue`)).rows[0] as {
      n: number;
      claimed: number;
    };
    const storedAtKill = (await client.query(`SELECT count(*)::int AS n FROM messages WHERE account_id = $1`, [acc.id])).rows[0]
      .n as number;
    // Time passes while the server is down: the killed worker's 60 s leases lapse (moved into the
    // past instead of sleeping a minute).
    await client.query(`UPDATE inbound_queue SET run_at = now() - interval '1 second' WHERE claim IS NOT NULL`);

    server = await startServer(server.env, { port: server.port });
    const t0 = Date.now();
    let left = atKill.n;
    while (Date.now() - t0 < 120_000) {
      left = (await client.query(`SELECT count(*)::int AS n FROM inbound_queue`)).rows[0].n;
      if (left === 0) break;
      await sleep(250);
    }
    const settleSeconds = (Date.now() - t0) / 1000;

    const stored = await client.query(`SELECT wamid, count(*)::int AS n FROM messages WHERE account_id = $1 GROUP BY wamid`, [acc.id]);
    const count = new Map<string, number>(stored.rows.map((r) => [r.wamid as string, r.n as number]));
    const lost = acknowledged.filter((w) => !count.has(w)).length;
    const duplicates = stored.rows.filter((r) => r.n > 1).length;
    const events = await client.query(
      `SELECT data->>'wamid' AS wamid, count(*)::int AS n FROM events WHERE account_id = $1 AND kind = 'message.received' GROUP BY 1`,
      [acc.id],
    );
    const eventCount = new Map<string, number>(events.rows.map((r) => [r.wamid as string, r.n as number]));
    const withoutEvent = acknowledged.filter((w) => eventCount.get(w) !== 1).length;
    const duplicateEvents = events.rows.filter((r) => r.n > 1).length;
    const ok = lost === 0 && duplicates === 0 && withoutEvent === 0 && duplicateEvents === 0 && left === 0 && atKill.n > 0;
    const line =
      `Cloud receiver through SIGKILL: ${acknowledgedBatches} batches × ${PER_BATCH} acknowledged (${acknowledged.length} messages), ${failedPosts} POSTs cut or refused; ` +
      `at the kill ${atKill.n} batches queued (${atKill.claimed} held by the killed worker), ${storedAtKill} messages stored; ` +
      `after the restart the queue drained in ${settleSeconds.toFixed(1)} s (${left} left): ${lost} acknowledged messages lost, ${duplicates} stored twice, ` +
      `${withoutEvent} without exactly one message.received, ${duplicateEvents} events twice`;
    return { ok, line };
  } finally {
    await server.stop().catch(() => {});
    await client.end().catch(() => {});
  }
}
