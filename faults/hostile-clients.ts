// The "hostile clients" fault test: for HOSTILE_SECONDS (default 60) the built server on PostgreSQL +
// Redis takes, all at once, a customer writing while we answer on one contact (inbound ‖ send
// races, with a subscribed webhook so events lock the account's delivery counter), oversized
// attribute bodies, deep JSON with and without Idempotency-Key, and uploads cut off half-way.
// A prober reads GET /healthz the whole time and RSS is sampled every second. The verdict: no
// answer 5xx, no deadlock counted by PostgreSQL (pg_stat_database), RSS under 300 MB and /healthz
// p99 under 50 ms throughout.
import { createServer } from 'node:http';
import { connect } from 'node:net';
import pg from 'pg';
import { admin, benchAccount, call, must, quantile, type Server, sleep, UNLIMITED } from '../bench/lib.js';

const RSS_LIMIT_MB = 300;
const HEALTHZ_P99_LIMIT_MS = 50;

interface Tally {
  statuses: Map<number, number>;
  fiveXX: string[];
}

function count(t: Tally, what: string, status: number): void {
  t.statuses.set(status, (t.statuses.get(status) ?? 0) + 1);
  if (status >= 500) t.fiveXX.push(`${what} → ${status}`);
}

async function deadlocks(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const r = await c.query('SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()');
  await c.end();
  return Number(r.rows[0]?.deadlocks ?? 0);
}

/** A webhook receiver that answers 200 to everything. */
async function sink() {
  const srv = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200).end());
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(srv.address() as { port: number }).port}/hook`, close: () => srv.close() };
}

/** Starts an upload of `declared` bytes, sends a part of it, and cuts the connection. */
function abortedUpload(server: Server, key: string): Promise<void> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        `POST /api/v1/contacts HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"phone": "+54 9 11 5`,
      );
      setTimeout(() => {
        socket.destroy();
        resolve();
      }, 20);
    });
    socket.on('error', () => resolve());
  });
}

const nested = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

export async function hostileClients(server: Server, databaseUrl: string): Promise<{ ok: boolean; line: string }> {
  const seconds = Number(process.env.HOSTILE_SECONDS ?? 60);
  // Caps lifted (the races would hit them), a delivery limit kept (events lock its counter).
  const acc = await benchAccount(server.url, { ...UNLIMITED, webhookDeliveriesPerMonth: 100_000_000 }, 'faults-hostile');
  const receiver = await sink();
  await must(admin(server.url, 'POST', `/accounts/${acc.id}/webhooks`, { url: receiver.url }), 201, 'webhook');
  const customer = '+54 9 11 5123-4567';
  await must(admin(server.url, 'POST', '/sandbox/inbound', { accountId: acc.id, from: customer, text: 'Hola' }), 201, 'first inbound');
  const auth = { authorization: `Bearer ${acc.key}` };
  const deadlocksBefore = await deadlocks(databaseUrl);
  const tally: Tally = { statuses: new Map(), fiveXX: [] };
  const end = Date.now() + seconds * 1000;
  let pairs = 0;
  const guard = async (what: string, f: () => Promise<{ status: number }>) => {
    try {
      count(tally, what, (await f()).status);
    } catch {
      count(tally, what, 0);
    }
  };

  const races = async () => {
    for (let i = 0; Date.now() < end; i++) {
      await Promise.all([
        guard('inbound', () => admin(server.url, 'POST', '/sandbox/inbound', { accountId: acc.id, from: customer, text: `Consulta ${i}` })),
        guard('send', () => call(server.url, 'POST', '/api/v1/messages', { to: customer, text: `Respuesta ${i}` }, auth)),
      ]);
      pairs += 1;
    }
  };
  const post =
    (body: string, headers: Record<string, string> = {}) =>
    async () => {
      const r = await fetch(`${server.url}/api/v1/contacts`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', ...headers },
        body,
      });
      await r.arrayBuffer();
      return r;
    };
  // Built once: the client's own work must not be what the server is measured against. 30,000
  // short keys stay under the 1 MiB body limit, so they are refused for their count, not their size.
  const huge = JSON.stringify({
    phone: customer,
    attributes: Object.fromEntries(Array.from({ length: 30_000 }, (_, k) => [`k${k}`, 'x'])),
  });
  const deep = nested(10_000);
  const bigBodies = async () => {
    for (let i = 0; Date.now() < end; i++) {
      const attributes = Object.fromEntries(Array.from({ length: 150 }, (_, k) => [`k${i}_${k}`, 'x'.repeat(100)]));
      await guard('attributes', post(i % 2 === 0 ? JSON.stringify({ phone: customer, attributes }) : huge));
    }
  };
  const deepBodies = async () => {
    for (let i = 0; Date.now() < end; i++) {
      await guard('deep JSON', post(deep, i % 2 ? { 'idempotency-key': `deep-${i}` } : {}));
    }
  };
  const aborts = async () => {
    let n = 0;
    while (Date.now() < end) {
      await abortedUpload(server, acc.key);
      n += 1;
      await sleep(10);
    }
    return n;
  };
  const healthz: number[] = [];
  const probe = async () => {
    while (Date.now() < end) {
      const t0 = performance.now();
      await guard('healthz', () => call(server.url, 'GET', '/healthz'));
      healthz.push(performance.now() - t0);
      await sleep(50);
    }
  };
  let rssMax = 0;
  const rss = async () => {
    while (Date.now() < end) {
      rssMax = Math.max(rssMax, server.rssMb());
      await sleep(1000);
    }
  };

  const [, , , aborted] = await Promise.all([races(), bigBodies(), deepBodies(), aborts(), probe(), rss()]);
  receiver.close();
  const found = (await deadlocks(databaseUrl)) - deadlocksBefore;
  const p99 = quantile(healthz, 0.99);
  const alive = server.proc.exitCode === null && (await call(server.url, 'GET', '/healthz')).status === 200;
  const ok = tally.fiveXX.length === 0 && found === 0 && rssMax < RSS_LIMIT_MB && p99 < HEALTHZ_P99_LIMIT_MS && alive;
  const line =
    `Hostile clients for ${seconds} s: ${pairs} inbound ‖ send pairs on one contact, oversized attribute bodies, 10,000-deep JSON ` +
    `(with and without Idempotency-Key), ${aborted} uploads cut half-way; ${tally.fiveXX.length} answers 5xx` +
    `${tally.fiveXX.length ? ` (e.g. ${tally.fiveXX.slice(0, 3).join('; ')})` : ''}, ${found} deadlocks, RSS max ${rssMax.toFixed(0)} MB ` +
    `(limit ${RSS_LIMIT_MB}), /healthz p99 ${p99.toFixed(1)} ms (limit ${HEALTHZ_P99_LIMIT_MS}); status mix ${JSON.stringify(Object.fromEntries(tally.statuses))}`;
  return { ok, line };
}
