// The services' transaction helper (docs/architecture.md "Lock order"): a transaction PostgreSQL
// rolled back for a deadlock or a serialization failure runs again, a bounded number of times.
// On PGlite and, with DATABASE_URL, on PostgreSQL (where a real deadlock is provoked too).
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dropPostgresDatabase, freshPostgresDatabase } from '../../test/harness.js';
import { type Db, type Executor, type OpenDb, openDatabase } from './index.js';
import { TRANSACTION_RETRIES, transaction } from './retry.js';

let open: OpenDb;
let db: Db;
let pgUrl: string | null = null;

beforeAll(async () => {
  const base = process.env.DATABASE_URL;
  pgUrl = base?.startsWith('postgres') ? await freshPostgresDatabase(base) : null;
  open = await openDatabase(pgUrl ? { kind: 'postgres', url: pgUrl } : { kind: 'memory' });
  db = open.db;
  await sql`CREATE TABLE t (id text PRIMARY KEY, n int NOT NULL DEFAULT 0)`.execute(db);
});
beforeEach(async () => {
  await sql`TRUNCATE t`.execute(db);
});
afterAll(async () => {
  await open.close();
  if (pgUrl) await dropPostgresDatabase(pgUrl);
});

/** What PostgreSQL raises when it rolls a transaction back for `code`. */
const raise = (q: Executor, code: '40P01' | '40001' | '23505') =>
  sql`DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '${sql.raw(code)}'; END $$`.execute(q);

const ids = async () => (await sql<{ id: string }>`SELECT id FROM t ORDER BY id`.execute(db)).rows.map((r) => r.id);

/** Records the waits instead of waiting. */
const waits: number[] = [];
const sleep = async (ms: number) => {
  waits.push(ms);
};
beforeEach(() => {
  waits.length = 0;
});

describe('transaction() (docs/architecture.md "Lock order"): "retry 40P01 and 40001 a bounded number of times"', () => {
  it('"a deadlock (40P01) or a serialization failure (40001) runs the transaction again": only the last try\'s writes stay', async () => {
    let tries = 0;
    const out = await transaction(
      db,
      async (trx) => {
        tries += 1;
        await sql`INSERT INTO t (id) VALUES (${`try${tries}`})`.execute(trx);
        if (tries === 1) await raise(trx, '40P01');
        if (tries === 2) await raise(trx, '40001');
        return 'hecho';
      },
      { sleep },
    );
    expect(out).toBe('hecho');
    expect(tries).toBe(3);
    expect(await ids()).toEqual(['try3']);
    expect(waits).toHaveLength(2);
    for (const ms of waits) expect(ms).toBeGreaterThan(0);
  });

  it(`"bounded": after ${TRANSACTION_RETRIES} retries the deadlock reaches the caller, and nothing was written`, async () => {
    let tries = 0;
    const run = transaction(
      db,
      async (trx) => {
        tries += 1;
        await sql`INSERT INTO t (id) VALUES (${`try${tries}`})`.execute(trx);
        await raise(trx, '40P01');
      },
      { sleep },
    );
    await expect(run).rejects.toMatchObject({ code: '40P01' });
    expect(tries).toBe(TRANSACTION_RETRIES + 1);
    expect(await ids()).toEqual([]);
  });

  it('"only 40P01 and 40001": any other error (a unique violation, our own) is not run again', async () => {
    let tries = 0;
    const unique = transaction(
      db,
      async (trx) => {
        tries += 1;
        await raise(trx, '23505');
      },
      { sleep },
    );
    await expect(unique).rejects.toMatchObject({ code: '23505' });
    const ours = transaction(
      db,
      async () => {
        tries += 1;
        throw new Error('refused');
      },
      { sleep },
    );
    await expect(ours).rejects.toThrow('refused');
    expect(tries).toBe(2);
    expect(waits).toEqual([]);
  });

  it.skipIf(!process.env.DATABASE_URL)(
    '"a real deadlock between two transactions": PostgreSQL rolls one back, it runs again, both commit',
    async () => {
      await sql`INSERT INTO t (id) VALUES ('a'), ('b')`.execute(db);
      // Each holds its first row until the other holds its own, then asks for the other's.
      let arrived = 0;
      let release!: () => void;
      const bothHoldOne = new Promise<void>((r) => {
        release = r;
      });
      let tries = 0;
      const crossing = (first: string, second: string) =>
        transaction(db, async (trx) => {
          tries += 1;
          await sql`UPDATE t SET n = n + 1 WHERE id = ${first}`.execute(trx);
          arrived += 1;
          if (arrived === 2) release();
          await bothHoldOne;
          await sql`UPDATE t SET n = n + 1 WHERE id = ${second}`.execute(trx);
        });
      await Promise.all([crossing('a', 'b'), crossing('b', 'a')]);
      expect(tries).toBe(3);
      const rows = (await sql<{ id: string; n: number }>`SELECT id, n FROM t ORDER BY id`.execute(db)).rows;
      expect(rows).toEqual([
        { id: 'a', n: 2 },
        { id: 'b', n: 2 },
      ]);
    },
  );
});
