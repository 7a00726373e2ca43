// Sends read the account's numbers and templates from each process's copy (channel/hot-reads.ts),
// forgotten in every process by the writer's NOTIFY: a change made through one process is seen by
// the very next send of any process. On PGlite there is one process; on PostgreSQL a second one
// (a child `chasqui serve`) shares the database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textFor } from '../../src/http/messages.es-AR.js';
import { ADMIN_TOKEN, freshPhone, type Res, request, startTestApp, type TestAccount, type TestApp } from '../harness.js';
import { serverEnv, spawnServer } from '../server-process.js';

let app: TestApp;
const cleanup: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
  await app?.close();
});

/** What a test needs of one process: its operator API and POST /api/v1/messages. */
interface Side {
  admin<T = any>(method: string, path: string, body?: unknown): Promise<Res<T>>;
  send(acc: TestAccount, body: Record<string, unknown>): Promise<Res>;
}

const sideOf = (url: string): Side => ({
  admin: (method, path, body) => request(`${url}/admin/v1${path}`, method, body, { authorization: `Bearer ${ADMIN_TOKEN}` }),
  send: (acc, body) => request(`${url}/api/v1/messages`, 'POST', body, { authorization: `Bearer ${acc.key}` }),
});

/**
 * Through `writer`: pauses a template, approves it again, disconnects the number. After each,
 * the next send on `sender` (which kept the pair by sending it twice) answers what the change says.
 */
async function changesSeenByNextSend(writer: Side, sender: Side): Promise<void> {
  const acc = await app.createAccount();
  const t = await writer.admin('POST', `/accounts/${acc.id}/templates`, {
    name: 'aviso',
    category: 'UTILITY',
    body: 'Hola',
    variables: [],
    status: 'APPROVED',
  });
  expect(t.status).toBe(201);
  const withNumber = { phoneNumberId: acc.phoneNumberId, template: { id: t.body.id } };
  const byDefault = { template: { id: t.body.id } };
  for (const body of [withNumber, withNumber, byDefault, byDefault]) {
    expect((await sender.send(acc, { to: freshPhone(), ...body })).status).toBe(201);
  }

  expect((await writer.admin('PATCH', `/accounts/${acc.id}/templates/${t.body.id}`, { status: 'PAUSED' })).status).toBe(200);
  const paused = await sender.send(acc, { to: freshPhone(), ...withNumber });
  expect(paused.status).toBe(409);
  expect(paused.body.error).toBe(textFor('template_not_approved', { name: 'aviso', status: 'PAUSED' }));

  expect((await writer.admin('PATCH', `/accounts/${acc.id}/templates/${t.body.id}`, { status: 'APPROVED' })).status).toBe(200);
  expect((await sender.send(acc, { to: freshPhone(), ...withNumber })).status).toBe(201);

  const off = await writer.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${acc.phoneNumberId}`, { status: 'disconnected' });
  expect(off.status).toBe(200);
  const named = await sender.send(acc, { to: freshPhone(), ...withNumber });
  expect(named.status).toBe(409);
  expect(named.body.error).toBe(textFor('phone_number_disconnected'));
  const fallback = await sender.send(acc, { to: freshPhone(), ...byDefault });
  expect(fallback.status).toBe(409);
  expect(fallback.body.error).toBe(textFor('no_connected_number'));

  expect((await writer.admin('DELETE', `/accounts/${acc.id}/templates/${t.body.id}`)).status).toBe(204);
  expect((await writer.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${acc.phoneNumberId}`, { status: 'connected' })).status).toBe(200);
  const gone = await sender.send(acc, { to: freshPhone(), ...withNumber });
  expect(gone.status).toBe(404);
}

describe('numbers and templates kept per process (docs/architecture.md "Hot reads")', () => {
  it('"a changed or disconnected number or a template\'s status change is seen by the next send": one process', async () => {
    const here = sideOf(app.url);
    await changesSeenByNextSend(here, here);
  });

  const shared = Boolean(process.env.DATABASE_URL);
  it.skipIf(!shared)(
    '"… by the next send in every process": a template paused, a number disconnected, a template deleted through one process are refused by the next send of another, both ways',
    { timeout: 120_000 },
    async () => {
      const child = await spawnServer(
        serverEnv({
          DATABASE_URL: app.databaseUrl,
          REDIS_URL: process.env.REDIS_URL ?? '',
          REDIS_KEY_PREFIX: app.env.REDIS_KEY_PREFIX ?? '',
        }),
        (fn) => cleanup.push(fn),
      );
      const here = sideOf(app.url);
      const there = sideOf(child.url);
      await changesSeenByNextSend(here, there);
      await changesSeenByNextSend(there, here);
    },
  );
});
