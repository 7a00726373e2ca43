// writeWithOrigin against a real database (PGlite, or PostgreSQL with DATABASE_URL): an origin's
// writes composed into the send's one statement (SendOrigin.composed: an automation's step start)
// commit with the message or not at all — the message is inserted, and the case records who
// answered, only when the origin's rows are there (its claim held); a send that is not allowed
// writes none of the origin's rows. The origin here is a table of claims made for the test, the
// shape of an automation's `UPDATE … WHERE claim = $1 RETURNING *`.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropPostgresDatabase, freshPostgresDatabase } from '../../test/harness.js';
import type { Db, OpenDb } from '../db/index.js';
import { openDatabase } from '../db/index.js';
import { migrate } from '../db/migrate.js';
import type { AccountRow, PhoneNumberRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { newId } from '../lib/ids.js';
import { type SendOrigin, writeWithOrigin } from './send-store.js';

class ClaimLost extends Error {}

describe('writeWithOrigin with a composed origin (one statement: the origin’s rows, who answered and the message together)', () => {
  let open: OpenDb;
  let db: Db;
  let pgUrl: string | null = null;
  let account: AccountRow;
  let number: PhoneNumberRow;
  const now = new Date('2026-11-28T12:00:00Z');

  beforeAll(async () => {
    const base = process.env.DATABASE_URL;
    pgUrl = base?.startsWith('postgres') ? await freshPostgresDatabase(base) : null;
    open = await openDatabase(pgUrl ? { kind: 'postgres', url: pgUrl } : { kind: 'memory' });
    db = open.db;
    await migrate(db);
    const accountId = newId();
    await sql`INSERT INTO accounts (id, name, plan) VALUES (${accountId}, 'Tienda', 'pro')`.execute(db);
    await sql`INSERT INTO phone_numbers (id, account_id, phone, name, provider, is_default)
      VALUES (${newId()}, ${accountId}, '5491140000000', 'Ventas', 'sandbox', true)`.execute(db);
    await sql`CREATE TABLE claims (id uuid PRIMARY KEY, holder text NOT NULL)`.execute(db);
    account = (await sql<AccountRow>`SELECT * FROM accounts WHERE id = ${accountId}`.execute(db)).rows[0]!;
    number = (await sql<PhoneNumberRow>`SELECT * FROM phone_numbers WHERE account_id = ${accountId}`.execute(db)).rows[0]!;
  }, 60_000);
  afterAll(async () => {
    await open?.close();
    if (pgUrl) await dropPostgresDatabase(pgUrl);
  });

  let seq = 0;
  /** A contact who wrote `ago` ms before `now`, its conversation with an open case, and a claim held by `a`. */
  async function customer(ago: number) {
    const phone = `54911500${String(++seq).padStart(5, '0')}`;
    const ids = { contact: newId(), conversation: newId(), case: newId(), claim: newId() };
    const last = new Date(now.getTime() - ago);
    await sql`INSERT INTO contacts (id, account_id, phone, name, created_at, updated_at)
      VALUES (${ids.contact}, ${account.id}, ${phone}, 'Ana', ${last}, ${last})`.execute(db);
    await sql`INSERT INTO conversations (id, account_id, contact_id, phone_number_id, last_inbound_at)
      VALUES (${ids.conversation}, ${account.id}, ${ids.contact}, ${number.id}, ${last})`.execute(db);
    await sql`INSERT INTO cases (id, account_id, conversation_id, contact_id, opened_at, last_inbound_at, updated_at)
      VALUES (${ids.case}, ${account.id}, ${ids.conversation}, ${ids.contact}, ${last}, ${last}, ${last})`.execute(db);
    await sql`INSERT INTO claims VALUES (${ids.claim}, 'a')`.execute(db);
    return { phone, ...ids };
  }

  /** An automation-like origin: its claim moves from `a` to `b` in the send's statement. */
  const origin = (claim: string): SendOrigin => ({
    source: 'automation',
    by: { id: newId(), name: 'Bienvenida' },
    inTransaction: async () => {
      throw new Error('the composed send takes no transaction');
    },
    composed: (gate) => ({
      ctes: sql`won AS (UPDATE claims SET holder = 'b' WHERE id = ${claim} AND holder = 'a' AND ${gate} RETURNING *)`,
      rows: 'won',
      lost: () => new ClaimLost(),
    }),
  });
  const send = (phone: string, claim: string) =>
    writeWithOrigin(db, { account, phone, number, template: null, input: { to: phone, text: 'Hola' }, now, limited: false }, origin(claim));

  const state = async (c: { conversation: string; case: string; claim: string }) => ({
    messages: Number(
      (await sql<{ n: string }>`SELECT count(*) AS n FROM messages WHERE conversation_id = ${c.conversation}`.execute(db)).rows[0]!.n,
    ),
    handledBy: (await sql<{ handled_by: string }>`SELECT handled_by FROM cases WHERE id = ${c.case}`.execute(db)).rows[0]!.handled_by,
    holder: (await sql<{ holder: string }>`SELECT holder FROM claims WHERE id = ${c.claim}`.execute(db)).rows[0]!.holder,
  });

  it('claim held: the message (pending, source automation), who answered the case and the origin’s row, together', async () => {
    const c = await customer(60_000);
    const { message } = await send(c.phone, c.claim);
    expect(message).toMatchObject({ conversation_id: c.conversation, status: 'pending', source: 'automation', text: 'Hola' });
    expect(await state(c)).toEqual({ messages: 1, handledBy: 'automation', holder: 'b' });
  });

  it('claim lost (taken meanwhile): lost() is thrown and nothing was written — no message, the case as it was', async () => {
    const c = await customer(60_000);
    await sql`UPDATE claims SET holder = 'z' WHERE id = ${c.claim}`.execute(db);
    await expect(send(c.phone, c.claim)).rejects.toBeInstanceOf(ClaimLost);
    expect(await state(c)).toEqual({ messages: 0, handledBy: 'none', holder: 'z' });
  });

  it('"free text within 24 h of the contact\'s last inbound message": outside it the send is refused and the origin wrote nothing', async () => {
    const c = await customer(25 * 3_600_000);
    const refused = await send(c.phone, c.claim).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).code).toBe('window_closed');
    expect(await state(c)).toEqual({ messages: 0, handledBy: 'none', holder: 'a' });
  });
});
