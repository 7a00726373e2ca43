// Concurrency on one contact (docs/architecture.md "Lock order"): a customer writing while we
// reply must never deadlock (real races need PostgreSQL: PGlite is one connection), and an error
// of ours in a campaign send is never held against the recipient.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPhone, startTestApp, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const PAIRS = 50;

describe('concurrency on one contact (docs/architecture.md "Lock order")', () => {
  it.skipIf(!process.env.DATABASE_URL)(
    '"50 concurrent inbound ‖ send pairs on one contact → 0 × 5xx and every message stored once"',
    async () => {
      const acc = await app.createAccount({ limits: { requestsPerMinute: null, messagesPerMinute: null } });
      const from = freshPhone();
      // The contact wrote once: it exists and its 24-hour window is open for a text reply.
      const first = await app.inbound({ accountId: acc.id, from, text: 'hola' });
      expect(first.status).toBe(201);
      const { contactId, conversationId } = first.body;

      const answers = await Promise.all(
        Array.from({ length: PAIRS }, (_, i) => [
          app.inbound({ accountId: acc.id, from, text: `pregunta ${i}` }),
          acc.call('POST', '/messages', { to: from, text: `respuesta ${i}` }),
        ]).flat(),
      );
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((st) => st >= 500)).toEqual([]);
      const inbound = answers.filter((_, i) => i % 2 === 0);
      const sent = answers.filter((_, i) => i % 2 === 1);
      expect(inbound.map((a) => a.status)).toEqual(Array(PAIRS).fill(201));
      expect(sent.map((a) => a.status)).toEqual(Array(PAIRS).fill(201));

      // Every request stored its message once, all on the one contact and conversation.
      const rows = await app.rt.services.db
        .selectFrom('messages')
        .select(['id', 'direction', 'text', 'contact_id', 'conversation_id'])
        .where('account_id', '=', acc.id)
        .execute();
      const texts = (direction: string) =>
        rows
          .filter((r) => r.direction === direction)
          .map((r) => r.text)
          .sort();
      const expected = (word: string) => Array.from({ length: PAIRS }, (_, i) => `${word} ${i}`).sort();
      expect(texts('inbound')).toEqual(['hola', ...expected('pregunta')].sort());
      expect(texts('outbound')).toEqual(expected('respuesta'));
      expect(new Set(rows.map((r) => r.contact_id))).toEqual(new Set([contactId]));
      expect(new Set(rows.map((r) => r.conversation_id))).toEqual(new Set([conversationId]));
      expect(new Set(sent.map((a) => a.body.id)).size).toBe(PAIRS);
      // One open case takes every message of the conversation (no second one from a race).
      const cases = await app.rt.services.db.selectFrom('cases').select('id').where('conversation_id', '=', conversationId).execute();
      expect(cases).toHaveLength(1);
    },
  );
});

describe('every writer of one contact at once (docs/architecture.md "Lock order")', () => {
  it.skipIf(!process.env.DATABASE_URL)(
    '"one lock order on every path": inbound ‖ send ‖ status reports ‖ case outcome on one contact, with a subscribed webhook (events lock the delivery counter) → 0 × 5xx',
    async () => {
      const acc = await app.createAccount({ limits: { requestsPerMinute: null, messagesPerMinute: null } });
      // A subscribed URL: every event also locks the account's delivery counter (escala has a quota).
      expect((await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url: 'http://127.0.0.1:9/hook' })).status).toBe(201);
      const from = freshPhone();
      const first = await app.inbound({ accountId: acc.id, from, text: 'hola' });
      expect(first.status).toBe(201);
      const earlier = [];
      for (let i = 0; i < 10; i++)
        earlier.push((await acc.call('POST', '/messages', { to: from, text: `antes ${i}` })).body.wamid as string);
      const db = app.rt.services.db;
      const kase = await db
        .selectFrom('cases')
        .select('id')
        .where('conversation_id', '=', first.body.conversationId)
        .executeTakeFirstOrThrow();

      const calls: Promise<{ status: number }>[] = [];
      for (let i = 0; i < 20; i++) {
        calls.push(app.inbound({ accountId: acc.id, from, text: `pregunta ${i}` }));
        calls.push(acc.call('POST', '/messages', { to: from, text: `respuesta ${i}` }));
        const wamid = earlier[i % earlier.length]!;
        // 131050 on some: the contact's marketingOptOut changes from the status path too.
        const report = i % 4 === 3 ? { wamid, status: 'failed', code: 131050 } : { wamid, status: i % 2 ? 'read' : 'delivered' };
        calls.push(app.admin('POST', '/sandbox/status', report));
        calls.push(acc.call('POST', `/cases/${kase.id}/outcome`, { result: i % 2 ? 'won' : 'lost' }));
      }
      const statuses = (await Promise.all(calls)).map((a) => a.status);
      expect(statuses.filter((st) => st >= 500)).toEqual([]);
      expect(statuses.filter((st) => st >= 300)).toEqual([]);
      const { n } = await db
        .selectFrom('messages')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('account_id', '=', acc.id)
        .executeTakeFirstOrThrow();
      expect(n).toBe(1 + 10 + 20 + 20);
    },
  );
});

describe('campaign sends and our own errors (decisions.md "Campaigns")', () => {
  let quiet: TestApp;
  beforeAll(async () => {
    // Workers off: only the run endpoint sends, so each run is one step.
    quiet = await startTestApp({ workers: false });
  });
  afterAll(async () => {
    await quiet?.close();
  });

  it('"errors that are ours are never the recipient\'s": a database error while a slice is prepared changes nothing, and the next run sends it', async () => {
    const acc = await quiet.createAccount();
    const t = await quiet.admin('POST', `/accounts/${acc.id}/templates`, {
      name: 'aviso',
      category: 'UTILITY',
      body: 'Hola',
      status: 'APPROVED',
    });
    expect((await acc.call('POST', '/contacts', { phone: freshPhone() })).status).toBe(201);
    const db = quiet.rt.services.db;
    // The database refuses every campaign message, as a deadlock that outlived its retries would.
    await sql`ALTER TABLE messages ADD CONSTRAINT refuse_campaign_messages CHECK (campaign_id IS NULL) NOT VALID`.execute(db);
    const c = await quiet.admin('POST', `/accounts/${acc.id}/campaigns`, { name: 'X', templateId: t.body.id });
    expect(c.body).toMatchObject({ status: 'sending', recipients: 1 });
    await quiet.admin('POST', '/jobs/campaigns/run');

    // The slice's transaction rolled back whole: no recipient row, no message, nothing counted.
    expect((await acc.call('GET', `/campaigns/${c.body.id}`)).body).toMatchObject({ status: 'sending', sent: 0, failed: 0 });
    expect(await db.selectFrom('campaign_recipients').selectAll().where('campaign_id', '=', c.body.id).execute()).toEqual([]);

    await sql`ALTER TABLE messages DROP CONSTRAINT refuse_campaign_messages`.execute(db);
    await quiet.admin('POST', '/jobs/campaigns/run');
    expect((await acc.call('GET', `/campaigns/${c.body.id}`)).body).toMatchObject({
      status: 'completed',
      recipients: 1,
      sent: 1,
      failed: 0,
    });
    const messages = await db.selectFrom('messages').select('status').where('campaign_id', '=', c.body.id).execute();
    expect(messages).toEqual([{ status: 'sent' }]);
  });
});
