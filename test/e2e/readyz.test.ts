// GET /readyz (docs/operating.md "Health checks"): the database answers with every migration
// applied, Redis answers when configured; otherwise 503 naming what is down; 503 `draining` once
// shutdown began, while requests are still served.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CuttableProxy } from '../../faults/proxy.js';
import { loadConfig } from '../../src/config.js';
import { listMigrations } from '../../src/db/migrate.js';
import { dropPostgresDatabase, freshPostgresDatabase, request, startTestApp, type TestApp } from '../harness.js';

const redis = process.env.REDIS_URL ? 'ok' : 'not_configured';
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

/** A TCP relay to `url`'s host and port (a fake network the test cuts); returns the URL through it. */
async function relayTo(url: string): Promise<{ proxy: CuttableProxy; url: string }> {
  const u = new URL(url);
  const proxy = new CuttableProxy(u.hostname, Number(u.port || (u.protocol.startsWith('redis') ? 6379 : 5432)));
  u.hostname = '127.0.0.1';
  u.port = String(await proxy.start());
  return { proxy, url: u.toString() };
}

describe('GET /readyz', () => {
  it('"the database answers, migrations are all applied, Redis answers when configured → 200 {status: ok, …}"', async () => {
    const res = await request(`${app.url}/readyz`, 'GET');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', database: 'ok', migrations: 'ok', redis });
    const live = await request(`${app.url}/healthz`, 'GET');
    expect(live).toMatchObject({ status: 200, body: { status: 'ok' } });
  });

  it('"migrations are all applied": a migration of this build missing from schema_migrations → 503 naming migrations', async () => {
    const last = listMigrations().at(-1)!.version;
    const db = app.rt.services.db;
    const removed = await db
      .deleteFrom('schema_migrations' as never)
      .where('version' as never, '=', last as never)
      .returningAll()
      .execute();
    expect(removed).toHaveLength(1);
    try {
      const res = await request(`${app.url}/readyz`, 'GET');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'unavailable', database: 'ok', migrations: 'pending', redis });
    } finally {
      await db
        .insertInto('schema_migrations' as never)
        .values(removed as never)
        .execute();
    }
    expect((await request(`${app.url}/readyz`, 'GET')).status).toBe(200);
  });

  it.skipIf(!process.env.DATABASE_URL)(
    '"otherwise 503 naming what is down": PostgreSQL unreachable → 503 database unreachable',
    async () => {
      const direct = await freshPostgresDatabase(inject('databaseUrl') as string);
      const { proxy, url } = await relayTo(direct);
      const cut = await startTestApp({ env: { DATABASE_URL: url }, workers: false });
      try {
        expect((await request(`${cut.url}/readyz`, 'GET')).status).toBe(200);
        await proxy.cut();
        const res = await request(`${cut.url}/readyz`, 'GET');
        expect(res.status).toBe(503);
        expect(res.body).toEqual({ status: 'unavailable', database: 'unreachable', migrations: 'unknown', redis });
        // Liveness does not depend on the database.
        expect((await request(`${cut.url}/healthz`, 'GET')).status).toBe(200);
        await proxy.restore();
        expect((await request(`${cut.url}/readyz`, 'GET')).status).toBe(200);
      } finally {
        await cut.close();
        await proxy.close();
        await dropPostgresDatabase(direct);
      }
    },
  );

  it.skipIf(!process.env.REDIS_URL)('"Redis answers when configured": Redis unreachable → 503 redis unreachable', async () => {
    const { proxy, url } = await relayTo(process.env.REDIS_URL!);
    const cut = await startTestApp({ env: { REDIS_URL: url }, workers: false });
    try {
      expect((await request(`${cut.url}/readyz`, 'GET')).body).toMatchObject({ status: 'ok', redis: 'ok' });
      await proxy.cut();
      const res = await request(`${cut.url}/readyz`, 'GET');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'unavailable', database: 'ok', migrations: 'ok', redis: 'unreachable' });
    } finally {
      await cut.close();
      await proxy.close();
    }
  });
});

describe('draining', () => {
  it('"A draining process (SIGTERM received) answers 503 so load balancers stop sending it traffic before it exits": 503 draining while requests are still served', async () => {
    const draining = await startTestApp({ env: { SHUTDOWN_DRAIN_MS: '1500' } });
    const acc = await draining.createAccount();
    const closing = draining.close();
    try {
      const res = await request(`${draining.url}/readyz`, 'GET');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'draining', database: 'ok', migrations: 'ok', redis });
      // Still serving meanwhile: the load balancer's last requests are answered.
      expect((await acc.call('GET', '/me')).status).toBe(200);
      expect((await request(`${draining.url}/healthz`, 'GET')).status).toBe(200);
    } finally {
      await closing;
    }
    await expect(fetch(`${draining.url}/healthz`)).rejects.toThrow();
  });

  it('SHUTDOWN_DRAIN_MS defaults to 5 s with NODE_ENV=production and to 0 otherwise (nothing in front)', () => {
    expect(loadConfig({ NODE_ENV: 'production' }).shutdownDrainMs).toBe(5_000);
    expect(loadConfig({}).shutdownDrainMs).toBe(0);
    expect(loadConfig({ NODE_ENV: 'production', SHUTDOWN_DRAIN_MS: '0' }).shutdownDrainMs).toBe(0);
    expect(loadConfig({ SHUTDOWN_DRAIN_MS: '250' }).shutdownDrainMs).toBe(250);
  });
});
