// contactsForInbound against a real database (PGlite, or PostgreSQL with DATABASE_URL): a round
// reads and locks its own customers' contacts through the unique indexes, whatever the size of the
// account. The statement once matched `phone IN (SELECT … ) OR socialchat_id IN (SELECT …)`,
// which the planner can only answer by filtering every contact of the account (20 ms a round at
// 50,000 contacts); the counters of the transaction itself show which rows were visited.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropPostgresDatabase, freshPostgresDatabase } from '../../test/harness.js';
import { type OpenDb, openDatabase, type Trx } from '../db/index.js';
import { migrate } from '../db/migrate.js';
import { transaction } from '../db/retry.js';
import { newId } from '../lib/ids.js';
import { contactsForInbound, type InboundContactKey } from './service.js';

const ACCOUNT_CONTACTS = 3_000;

describe('contactsForInbound (one statement: the round’s contacts read and locked, the missing created)', () => {
  let open: OpenDb;
  let pgUrl: string | null = null;
  const accountId = newId();
  const at = new Date('2026-11-28T12:00:00Z');

  beforeAll(async () => {
    const base = process.env.DATABASE_URL;
    pgUrl = base?.startsWith('postgres') ? await freshPostgresDatabase(base) : null;
    open = await openDatabase(pgUrl ? { kind: 'postgres', url: pgUrl } : { kind: 'memory' });
    await migrate(open.db);
    await sql`INSERT INTO accounts (id, name, plan) VALUES (${accountId}, 'Tienda', 'pro')`.execute(open.db);
    await sql`
      INSERT INTO contacts (id, account_id, phone, socialchat_id, name, created_at, updated_at)
      SELECT gen_random_uuid(), ${accountId}, CASE WHEN g % 2 = 1 THEN '+54911' || lpad(g::text, 8, '0') END,
        CASE WHEN g % 2 = 0 THEN 'ig-' || g END, '', ${at}, ${at}
      FROM generate_series(1, ${ACCOUNT_CONTACTS}) g`.execute(open.db);
    await sql`ANALYZE contacts`.execute(open.db);
  }, 60_000);
  afterAll(async () => {
    await open?.close();
    if (pgUrl) await dropPostgresDatabase(pgUrl);
  });

  const byPhone = (phone: string, profileName?: string): InboundContactKey => ({
    customer: `p:${phone}`,
    key: { phone },
    profileName,
    username: undefined,
  });
  const bySocial = (id: string, username: string): InboundContactKey => ({
    customer: `s:${id}`,
    key: { socialchat: id },
    profileName: undefined,
    username,
  });

  it('a round of four customers in an account of 3,000 contacts visits only theirs: no sequential scan, a handful of index fetches', async () => {
    const items = [
      byPhone('+5491100000007', 'Ana'), // known, empty name: takes the profile name
      byPhone('+5491199990001', 'Nuevo'), // new
      bySocial('ig-10', 'ana.ig'), // known on the social channel: the username is kept
      bySocial('ig-nuevo', 'nuevo.ig'), // new on the social channel
    ];
    // The backend's counters not yet flushed (they may hold earlier transactions' too): read
    // before and after the call, in the same transaction.
    const counters = async (trx: Trx) => {
      const { rows } = await sql<{ seq: string; fetched: string }>`
        SELECT seq_scan AS seq, idx_tup_fetch AS fetched FROM pg_stat_xact_user_tables WHERE relname = 'contacts'`.execute(trx);
      return { seq: Number(rows[0]!.seq), fetched: Number(rows[0]!.fetched) };
    };
    const { found, visited } = await transaction(open.db, async (trx) => {
      const before = await counters(trx);
      const found = await contactsForInbound(trx, accountId, items, at);
      const after = await counters(trx);
      return { found, visited: { seq: after.seq - before.seq, fetched: after.fetched - before.fetched } };
    });

    expect(found.get('p:+5491100000007')).toMatchObject({ created: false, contact: { name: 'Ana' } });
    expect(found.get('p:+5491199990001')).toMatchObject({ created: true, contact: { name: 'Nuevo', account_id: accountId } });
    expect(found.get('s:ig-10')).toMatchObject({ created: false, contact: { socialchat_username: 'ana.ig' } });
    expect(found.get('s:ig-nuevo')).toMatchObject({ created: true, contact: { socialchat_id: 'ig-nuevo', phone: null } });

    expect(visited.seq).toBe(0);
    // The two known contacts, fetched by the lookup and again by the name/username update.
    expect(visited.fetched).toBeGreaterThan(0);
    expect(visited.fetched).toBeLessThan(20);
  });

  it('the same round again creates nothing: every customer found by the same lookup', async () => {
    const items = [byPhone('+5491199990001', 'Otro nombre'), bySocial('ig-nuevo', 'nuevo.ig')];
    const found = await transaction(open.db, (trx) => contactsForInbound(trx, accountId, items, at));
    expect([...found.values()].map((f) => f.created)).toEqual([false, false]);
    // A name the contact already has is kept.
    expect(found.get('p:+5491199990001')!.contact.name).toBe('Nuevo');
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM contacts WHERE account_id = ${accountId}`.execute(open.db);
    expect(Number(rows[0]!.n)).toBe(ACCOUNT_CONTACTS + 2);
  });
});
