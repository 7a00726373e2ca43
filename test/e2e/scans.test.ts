// Reads of the inbound path and its queues visit rows in proportion to their own input, not to a
// table (docs/performance.md "Reads in proportion to their input"): each is called as the app
// calls it, on the app's database filled with other contacts, messages, cases and dead queue
// rows, and the transaction's own counters (pg_stat_xact_user_tables, read before and after the
// call in the same transaction) show what it visited. Each failed before its fix with a
// sequential scan or a walk of every row of the table.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isFirstInbound } from '../../src/automations/triggers.js';
import { latestAds } from '../../src/cases/open.js';
import { moveStale } from '../../src/cases/timeouts.js';
import { claimBatches } from '../../src/channel/inbound-queue.js';
import { claim as claimClassifications } from '../../src/classification/queue.js';
import type { Db, Trx } from '../../src/db/index.js';
import { transaction } from '../../src/db/retry.js';
import { newId } from '../../src/lib/ids.js';
import { claimDue, parkDeliveries, releaseLeases } from '../../src/webhooks/delivery-repo.js';
import { startTestApp, type TestAccount, type TestApp } from '../harness.js';

const ROWS = 3_000;
const DEAD = 400;

let app: TestApp;
let acc: TestAccount;
let db: Db;
/** A contact of the filled account with one conversation, one inbound message and one case (with an ad). */
let known: { contact: string; message: string; case: string };
/** The open stage of a pipeline (stale after 30 days, with a lost stage) every filled case is in. */
let stage: string;

beforeAll(async () => {
  app = await startTestApp();
  acc = await app.createAccount();
  db = app.rt.services.db;
  const at = app.clock.now();
  const pipeline = newId();
  stage = newId();
  await sql`INSERT INTO pipelines (id, account_id, name, stale_days) VALUES (${pipeline}, ${acc.id}, 'Ventas', 30)`.execute(db);
  await sql`INSERT INTO stages (id, pipeline_id, name, kind, position)
    VALUES (${stage}, ${pipeline}, 'Nuevo', 'open', 0), (${newId()}, ${pipeline}, 'Perdido', 'lost', 1)`.execute(db);
  // Other people of the account: each a contact, a conversation, an inbound message and a case
  // (every other one from an ad).
  await sql`
    WITH g AS (SELECT i, gen_random_uuid() AS contact, gen_random_uuid() AS conversation FROM generate_series(1, ${ROWS}) i),
    c AS (INSERT INTO contacts (id, account_id, phone, name, created_at, updated_at)
      SELECT contact, ${acc.id}, '549117' || lpad(i::text, 7, '0'), '', ${at}, ${at} FROM g RETURNING id),
    v AS (INSERT INTO conversations (id, account_id, contact_id, phone_number_id, last_inbound_at)
      SELECT conversation, ${acc.id}, contact, ${acc.phoneNumberId}, ${at} FROM g WHERE EXISTS (SELECT 1 FROM c) RETURNING id),
    m AS (INSERT INTO messages (id, account_id, conversation_id, contact_id, phone_number_id, direction, type, text, status, created_at, updated_at)
      SELECT gen_random_uuid(), ${acc.id}, conversation, contact, ${acc.phoneNumberId}, 'inbound', 'text', 'hola', 'received', ${at}, ${at}
      FROM g WHERE EXISTS (SELECT 1 FROM v) RETURNING id)
    INSERT INTO cases (id, account_id, conversation_id, contact_id, pipeline_id, stage_id, opened_at, last_inbound_at, status, ad)
    SELECT gen_random_uuid(), ${acc.id}, conversation, contact, ${pipeline}, ${stage}, ${at}, ${at}, 'closed',
      CASE WHEN i % 2 = 0 THEN jsonb_build_object('sourceId', 'ad-' || i, 'at', ${at.toISOString()}::text) END
    FROM g WHERE EXISTS (SELECT 1 FROM m)`.execute(db);
  known = (
    await sql<{ contact: string; message: string; case: string }>`
      SELECT m.contact_id AS contact, m.id AS message, k.id AS case FROM messages m JOIN cases k ON k.conversation_id = m.conversation_id
      WHERE m.account_id = ${acc.id} AND k.ad IS NOT NULL LIMIT 1`.execute(db)
  ).rows[0]!;
  // Dead letters at the head of both queues (kept until the operator retries or drops them).
  await sql`
    INSERT INTO inbound_queue (channel, body, received_at, run_at, attempts, dead_at, last_error)
    SELECT 'cloud', '{}', ${at}, ${at}, 5, ${at}, 'x' FROM generate_series(1, ${DEAD})`.execute(db);
  await sql`
    INSERT INTO case_classifications (id, case_id, message_id, nth, run_at, attempts, dead_at)
    SELECT gen_random_uuid(), k.id, ${known.message}, 1, ${at}, 5, ${at}
    FROM (SELECT id FROM cases WHERE account_id = ${acc.id} LIMIT ${DEAD}) k`.execute(db);
  await sql`ANALYZE`.execute(db);
}, 120_000);
afterAll(async () => {
  await app?.close();
});

interface Visited {
  seq: number;
  fetched: number;
}

/** What `fn` visited of `table`: the transaction's counters before and after (they may hold earlier transactions' too). */
async function visiting<T>(
  table: string,
  fn: (trx: Trx) => Promise<T>,
  setup?: (trx: Trx) => Promise<void>,
): Promise<{ result: T; visited: Visited }> {
  const counters = async (trx: Trx): Promise<Visited> => {
    const { rows } = await sql<{ seq: string; fetched: string }>`
      SELECT seq_scan AS seq, idx_tup_fetch AS fetched FROM pg_stat_xact_user_tables WHERE relname = ${table}`.execute(trx);
    return { seq: Number(rows[0]?.seq ?? 0), fetched: Number(rows[0]?.fetched ?? 0) };
  };
  let out: { result: T; visited: Visited } | undefined;
  // Rolled back: the queue rows a claim takes here stay as they were for the app's own workers.
  await transaction(db, async (trx) => {
    await setup?.(trx);
    const before = await counters(trx);
    const result = await fn(trx);
    const after = await counters(trx);
    out = { result, visited: { seq: after.seq - before.seq, fetched: after.fetched - before.fetched } };
    throw new RolledBack();
  }).catch((err) => {
    if (!(err instanceof RolledBack)) throw err;
  });
  return out!;
}
class RolledBack extends Error {}

describe(`reads in proportion to their input (an account of ${ROWS} contacts, messages and cases; ${DEAD} dead rows per queue)`, () => {
  it('first_message: "a contact\'s first message" is decided through its conversations, not a scan of every message', async () => {
    const first = await visiting('messages', (trx) => isFirstInbound(trx, acc.id, known.contact, known.message));
    expect(first.result).toBe(true);
    expect(first.visited.seq).toBe(0);
    expect(first.visited.fetched).toBeLessThan(10);
    const again = await visiting('messages', (trx) => isFirstInbound(trx, acc.id, known.contact, newId()));
    expect(again.result).toBe(false);
    expect(again.visited.seq).toBe(0);
  });

  it("a known contact's new case reads the ad of its earlier cases through the index of cases with an ad", async () => {
    const { result, visited } = await visiting('cases', (trx) => latestAds(trx, [known.contact, newId()]));
    expect([...result.keys()]).toEqual([known.contact]);
    expect(result.get(known.contact)).toMatchObject({ sourceId: expect.stringMatching(/^ad-/) });
    expect(visited.seq).toBe(0);
    expect(visited.fetched).toBeLessThan(10);
  });

  it("the inbound queue's claim takes the live batches without walking the dead ones at its head", async () => {
    const now = app.clock.now();
    const { result, visited } = await visiting('inbound_queue', async (trx) => {
      await sql`INSERT INTO inbound_queue (channel, body, received_at, run_at) VALUES ('cloud', '{}', ${now}, ${now}), ('cloud', '{}', ${now}, ${now})`.execute(
        trx,
      );
      return claimBatches(trx, now, new Date(now.getTime() + 60_000), 10);
    });
    expect(result).toHaveLength(2);
    expect(visited.seq).toBe(0);
    expect(visited.fetched).toBeLessThan(20);
  });

  it("the classification queue's claim takes a live row without walking the dead ones", async () => {
    const now = app.clock.now();
    const { result, visited } = await visiting('case_classifications', async (trx) => {
      await sql`INSERT INTO case_classifications (id, case_id, message_id, nth, run_at) VALUES (${newId()}, ${known.case}, ${known.message}, 2, ${now})`.execute(
        trx,
      );
      return claimClassifications(app.rt.services, 10, trx);
    });
    expect(result.map((r) => r.case_id)).toEqual([known.case]);
    expect(visited.seq).toBe(0);
    expect(visited.fetched).toBeLessThan(20);
  });

  it("the webhook dispatcher's claim walks neither the deliveries it holds (leased) nor a disabled URL's pending ones", async () => {
    const now = app.clock.now();
    const hook = async (path: string) =>
      (await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url: `http://127.0.0.1:9/${path}` })).body.id as string;
    const live = await hook('vivo');
    const off = await hook('apagado');
    const event = newId();
    const pending = (webhookId: string, n: number) => sql`
      INSERT INTO webhook_deliveries (id, event_id, webhook_id, account_id, status, next_attempt_at, created_at, updated_at)
      SELECT gen_random_uuid(), ${event}, ${webhookId}, ${acc.id}, 'pending', ${now}, ${now}, ${now} FROM generate_series(1, ${n})`;
    const lease = new Date(now.getTime() + 60_000);
    const { result, visited } = await visiting(
      'webhook_deliveries',
      async (trx) => {
        await pending(live, 2).execute(trx);
        return claimDue(trx, now, lease, 50, []);
      },
      async (trx) => {
        await sql`INSERT INTO events (id, account_id, kind, data, created_at) VALUES (${event}, ${acc.id}, 'message.received', '{}', ${now})`.execute(
          trx,
        );
        // Held: claimed by this process, waiting or in flight.
        await pending(live, 300).execute(trx);
        expect(await claimDue(trx, now, lease, 300, [])).toHaveLength(300);
        // A disabled URL's backlog, parked as disabling it parks it.
        await pending(off, 300).execute(trx);
        await sql`UPDATE webhooks SET enabled = false WHERE id = ${off}`.execute(trx);
        await parkDeliveries(sql`${off}::uuid`, now).execute(trx);
      },
    );
    expect(result.map((d) => d.webhook_id)).toEqual([live, live]);
    expect(visited.seq).toBe(0);
    expect(visited.fetched).toBeLessThan(20);
  });

  it('a held delivery of a URL disabled meanwhile stays parked when it is given back; one of an enabled URL is due when it was', async () => {
    const now = app.clock.now();
    const lease = new Date(now.getTime() + 60_000);
    const event = newId();
    const ids = {
      on: (await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url: 'http://127.0.0.1:9/sigue' })).body.id as string,
      off: (await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url: 'http://127.0.0.1:9/se-apaga' })).body.id as string,
    };
    await transaction(db, async (trx) => {
      await sql`INSERT INTO events (id, account_id, kind, data, created_at) VALUES (${event}, ${acc.id}, 'message.received', '{}', ${now})`.execute(
        trx,
      );
      await sql`
        INSERT INTO webhook_deliveries (id, event_id, webhook_id, account_id, status, next_attempt_at, created_at, updated_at)
        VALUES (${newId()}, ${event}, ${ids.on}, ${acc.id}, 'pending', ${now}, ${now}, ${now}),
               (${newId()}, ${event}, ${ids.off}, ${acc.id}, 'pending', ${now}, ${now}, ${now})`.execute(trx);
      const held = await claimDue(trx, now, lease, 10, []);
      expect(held.map((d) => d.webhook_id).sort()).toEqual([ids.on, ids.off].sort());
      await sql`UPDATE webhooks SET enabled = false WHERE id = ${ids.off}`.execute(trx);
      await parkDeliveries(sql`${ids.off}::uuid`, now).execute(trx);
      await releaseLeases(
        trx,
        held.map((d) => ({ id: d.id, lease, due: d.due_at })),
      );
      const { rows } = await sql<{ webhook_id: string; next_attempt_at: Date | null; lease_until: Date | null }>`
        SELECT webhook_id, next_attempt_at, lease_until FROM webhook_deliveries WHERE event_id = ${event}`.execute(trx);
      const by = new Map(rows.map((r) => [r.webhook_id, r]));
      expect(by.get(ids.on)).toMatchObject({ next_attempt_at: now, lease_until: null });
      expect(by.get(ids.off)).toMatchObject({ next_attempt_at: null, lease_until: null });
      throw new RolledBack();
    }).catch((err) => {
      if (!(err instanceof RolledBack)) throw err;
    });
  });

  // PostgreSQL only: the embedded database's planner hashes the final UPDATE's join to the cases
  // it takes over a table this small (a sequential scan of it, whatever is stale); the selection
  // itself uses the index there too.
  it("the stale-case job reads each open stage's stale cases through its index, not every case with a stage", async (t) => {
    if (!app.databaseUrl.startsWith('postgres')) return t.skip();
    const now = app.clock.now();
    const { result, visited } = await visiting(
      'cases',
      (trx) => moveStale(trx, now),
      async (trx) => {
        await sql`UPDATE cases SET last_inbound_at = ${new Date(now.getTime() - 31 * 86_400_000)} WHERE id = ${known.case}`.execute(trx);
      },
    );
    expect(result).toEqual([{ id: known.case, was_open: false }]);
    expect(visited.seq).toBe(0);
    expect(visited.fetched).toBeLessThan(20);
  });
});
