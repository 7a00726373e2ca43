// Issue 30: "a SIGKILL mid-batch loses and duplicates nothing". A real server process receives
// signed Cloud API batches (new customers and customers writing again, several messages of one
// customer in a batch) faster than it processes them and is killed (SIGKILL) while its inbound
// worker stores them set-wise; the next process on the same data, its clock past the dead
// process's lease, processes what is left. Every acknowledged message is stored exactly once, in
// its customer's order, with exactly one message.received and one contact per customer.
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { LEASE_MS } from '../../src/channel/inbound-queue.js';
import { loadConfig } from '../../src/config.js';
import { ManualClock } from '../../src/lib/clock.js';
import { startRuntime } from '../../src/runtime.js';
import { cloudCredentials } from '../fakes/graph.js';
import { ADMIN_TOKEN, freshPhone, request, startTestApp } from '../harness.js';
import { serverEnv, spawnServer } from '../server-process.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'chasqui-inbound-kill-'));
  cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const BATCHES = 60;

async function scenario(dbEnv: Record<string, string>) {
  const env = serverEnv({ ...dbEnv, REDIS_KEY_PREFIX: `chasqui-inbound-kill-${process.pid}` });
  const first = await spawnServer(env, (fn) => cleanup.push(fn));
  const admin = (method: string, path: string, body?: unknown) =>
    request(`${first.url}/admin/v1${path}`, method, body, { authorization: `Bearer ${ADMIN_TOKEN}` });
  const acc = (await admin('POST', '/accounts', { name: 'Kill inbound', plan: 'escala' })).body;
  const cloud = cloudCredentials();
  const connected = await admin('POST', `/accounts/${acc.id}/phone-numbers`, {
    phone: freshPhone({ spelling: 'digits' }),
    name: 'Cloud',
    provider: 'cloud',
    cloud,
  });
  expect(connected.status, JSON.stringify(connected.body)).toBe(201);

  // 200 customers: each batch has 10 messages of 8 customers (two of them write twice in it).
  const customers = Array.from({ length: 200 }, () => freshPhone({ spelling: 'digits' }));
  const sent = new Map<string, string[]>(customers.map((c) => [c, []]));
  const acknowledged: string[] = [];
  let seq = 0;
  const postBatch = async (b: number) => {
    const ts = String(Math.floor(Date.now() / 1000));
    const picked = Array.from({ length: 8 }, (_, i) => customers[(b * 8 + i) % customers.length]!);
    const froms = [...picked, picked[0]!, picked[1]!];
    const messages = froms.map((from) => ({
      from,
      id: `wamid.KILL${++seq}${randomBytes(5).toString('hex')}`,
      timestamp: ts,
      type: 'text',
      text: { body: `m${seq}` },
    }));
    const raw = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: cloud.wabaId,
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: connected.body.phone, phone_number_id: cloud.phoneNumberId },
                messages,
              },
            },
          ],
        },
      ],
    });
    const signature = `sha256=${createHmac('sha256', cloud.appSecret).update(raw).digest('hex')}`;
    const res = await request(`${first.url}/channels/whatsapp/webhook`, 'POST', raw, {
      'content-type': 'application/json',
      'x-hub-signature-256': signature,
    });
    expect(res.status).toBe(200);
    for (const m of messages) {
      acknowledged.push(m.id);
      sent.get(m.from)!.push(m.text.body);
    }
  };
  // In receipt order (a customer's batches one after the other), as fast as the receiver answers.
  for (let b = 0; b < BATCHES; b++) await postBatch(b);
  const exited = new Promise((res) => first.child.once('exit', res));
  first.child.kill('SIGKILL');
  await exited;

  const clock = new ManualClock();
  const next = await startRuntime(loadConfig({ ...env, PORT: '0' }), { clock, usageFlushMs: 0 });
  cleanup.push(() => next.close());
  const db = next.services.db;
  // Killed with a backlog: what the dead worker held or had not claimed is still queued.
  const left = Number((await sql<{ n: string }>`SELECT count(*) AS n FROM inbound_queue`.execute(db)).rows[0]!.n);
  expect(left).toBeGreaterThan(0);
  clock.advance(LEASE_MS + 1_000); // past the dead process's lease
  while ((await next.services.inbound.runOnce()) > 0) {
    /* every due batch, until none is */
  }
  expect(Number((await sql<{ n: string }>`SELECT count(*) AS n FROM inbound_queue`.execute(db)).rows[0]!.n)).toBe(0);

  // Each acknowledged message stored once, none that was not acknowledged.
  const stored = await db
    .selectFrom('messages')
    .select(['wamid', 'text', 'contact_id'])
    .where('account_id', '=', acc.id)
    .where('direction', '=', 'inbound')
    .orderBy('id')
    .execute();
  expect(stored.map((m) => m.wamid).sort()).toEqual([...acknowledged].sort());
  // One message.received per message.
  const events = await db
    .selectFrom('events')
    .select(sql<string>`data->>'wamid'`.as('wamid'))
    .where('account_id', '=', acc.id)
    .where('kind', '=', 'message.received')
    .execute();
  expect(events.map((e) => e.wamid).sort()).toEqual([...acknowledged].sort());
  // One contact per customer (and one contact.created), each customer's messages in receipt order.
  const contacts = await db.selectFrom('contacts').select(['id', 'phone']).where('account_id', '=', acc.id).execute();
  expect(contacts).toHaveLength(customers.length);
  const created = await db
    .selectFrom('events')
    .select('id')
    .where('account_id', '=', acc.id)
    .where('kind', '=', 'contact.created')
    .execute();
  expect(created).toHaveLength(customers.length);
  const phoneOf = new Map(contacts.map((c) => [c.id, c.phone!]));
  const order = new Map<string, string[]>();
  for (const m of stored) order.set(phoneOf.get(m.contact_id)!, [...(order.get(phoneOf.get(m.contact_id)!) ?? []), m.text!]);
  for (const [phone, texts] of sent) expect(order.get(phone), phone).toEqual(texts);
  return { left };
}

describe('"a SIGKILL mid-batch loses and duplicates nothing" (issue 30)', () => {
  it.skipIf(!process.env.DATABASE_URL)(
    'on PostgreSQL: the next process finishes the backlog; every message once, in order, one event each',
    async () => {
      const holder = await startTestApp({ workers: false }); // a fresh, migrated database
      cleanup.push(() => holder.close());
      await scenario({ DATABASE_URL: holder.databaseUrl!, DATA_DIR: tempDir() });
    },
    180_000,
  );

  it.skipIf(!!process.env.DATABASE_URL)(
    'on embedded PGlite: restarted on the same data directory, every message once, in order, one event each',
    async () => {
      await scenario({ DATA_DIR: tempDir(), DATABASE_URL: '' });
    },
    180_000,
  );
});
