// Issue 4: "kill the process with deliveries pending (spawned child, SIGKILL), restart, and every
// event arrives". A real server process is killed mid-delivery; the next process (its clock moved
// past the lease) delivers every event, with the same webhook-id.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ManualClock } from '../../src/lib/clock.js';
import { type Runtime, startRuntime } from '../../src/runtime.js';
import { leaseMsFor } from '../../src/webhooks/dispatcher.js';
import { type Receiver, startReceiver } from '../fakes/receiver.js';
import { ADMIN_TOKEN, freshPhone, request, startTestApp } from '../harness.js';
import { serverEnv, spawnServer } from '../server-process.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
});

/** A data directory removed when the file ends. */
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'chasqui-kill-'));
  cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function scenario(dbEnv: Record<string, string>) {
  const env = serverEnv({
    ...dbEnv,
    ALLOW_PRIVATE_WEBHOOKS: 'on',
    WEBHOOK_RETRY_SCHEDULE: '1,1,1',
    WEBHOOK_TIMEOUT_MS: '60000',
    REDIS_KEY_PREFIX: `chasqui-kill-${process.pid}`,
  });
  const r: Receiver = await startReceiver({ hang: true });
  cleanup.push(() => r.close());
  const first = await spawnServer(env, (fn) => cleanup.push(fn));
  const admin = (base: string, method: string, path: string, body?: unknown) =>
    request(`${base}/admin/v1${path}`, method, body, { authorization: `Bearer ${ADMIN_TOKEN}` });
  const created = await admin(first.url, 'POST', '/accounts', { name: 'Kill', plan: 'escala' });
  expect(created.status).toBe(201);
  const acc = created.body;
  const made = await admin(first.url, 'POST', `/accounts/${acc.id}/keys`, { name: 'k' });
  expect(made.status).toBe(201);
  const key = made.body.key;
  const wh = await admin(first.url, 'POST', `/accounts/${acc.id}/webhooks`, { url: r.url });
  expect(wh.status).toBe(201);
  const N = 5;
  for (let i = 0; i < N; i++) {
    const c = await request(`${first.url}/api/v1/contacts`, 'POST', { phone: freshPhone() }, { authorization: `Bearer ${key}` });
    expect(c.status).toBe(201);
  }
  // Every delivery is in flight (the receiver never answers): kill the process now.
  await r.waitFor(N, 10_000);
  const firstIds = new Set(r.received.map((x) => x.headers['webhook-id']));
  expect(firstIds.size).toBe(N);
  const exited = new Promise((res) => first.child.once('exit', res));
  first.child.kill('SIGKILL');
  await exited;

  r.fallback = { status: 200 };
  const clock = new ManualClock();
  const next: Runtime = await startRuntime(loadConfig(env), { clock, usageFlushMs: 0 });
  cleanup.push(() => next.close());
  // The dead process's leases still hold: a whole dispatcher pass finds nothing to send.
  expect(await next.dispatcher.runOnce()).toBe(0);
  expect(r.received).toHaveLength(N);
  clock.advance(leaseMsFor(60_000) + 1_000); // past the dead process's lease
  next.dispatcher.wake();
  await r.waitFor(2 * N, 10_000);
  expect(new Set(r.received.slice(N).map((x) => x.headers['webhook-id']))).toEqual(firstIds);
  // Stopping the dispatcher waits for its attempts in flight and records them.
  await next.dispatcher.stop();
  const rows = await next.services.db.selectFrom('webhook_deliveries').select(['status', 'attempts']).execute();
  expect(rows).toHaveLength(N);
  expect(rows.every((x) => x.status === 'succeeded' && x.attempts === 1)).toBe(true);
  await next.close();
}

describe('a process killed mid-delivery (SIGKILL) loses no event', () => {
  it.skipIf(!process.env.DATABASE_URL)(
    'on PostgreSQL: the next process delivers every event after the lease expires',
    async () => {
      const holder = await startTestApp({ workers: false }); // a fresh, migrated database
      cleanup.push(() => holder.close());
      await scenario({ DATABASE_URL: holder.databaseUrl, DATA_DIR: tempDir() });
    },
    120_000,
  );

  it.skipIf(!!process.env.DATABASE_URL)(
    'on embedded PGlite: restarted on the same data directory, every event arrives',
    async () => {
      await scenario({ DATA_DIR: tempDir(), DATABASE_URL: '' });
    },
    120_000,
  );
});
