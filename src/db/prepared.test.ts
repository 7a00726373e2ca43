// Prepared statements on PostgreSQL (docs/architecture.md "Prepared statements on PostgreSQL"): a
// repeated statement runs prepared on its connection, and after a schema change that alters its
// result's columns (a newer release's migration while this process runs) it is prepared again —
// alone it runs again at once, in db/retry.ts's transaction the transaction runs again.
// PostgreSQL only (DATABASE_URL): PGlite has its own dialect and prepares nothing.
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropPostgresDatabase, freshPostgresDatabase } from '../../test/harness.js';
import { type Db, type OpenDb, openDatabase, type Trx } from './index.js';
import { StatementNames } from './prepared.js';
import { transaction } from './retry.js';

describe('StatementNames', () => {
  it('names a text on its second sighting, keeps the name, and stops taking new texts past its bound', () => {
    const names = new StatementNames(2);
    expect(names.nameOf('SELECT $1')).toBeUndefined();
    const name = names.nameOf('SELECT $1');
    expect(name).toMatch(/^chasqui_/);
    expect(names.nameOf('SELECT $1')).toBe(name);
    names.nameOf('SELECT $2');
    names.nameOf('SELECT $3'); // past the bound: never named
    expect(names.nameOf('SELECT $3')).toBeUndefined();
    names.renew('SELECT $1');
    expect(names.nameOf('SELECT $1')).not.toBe(name);
  });
});

const base = process.env.DATABASE_URL;
describe.skipIf(!base?.startsWith('postgres'))('prepared statements on PostgreSQL', () => {
  let open: OpenDb;
  let db: Db;
  let url: string;
  beforeAll(async () => {
    url = await freshPostgresDatabase(base!);
    // One connection: every statement below meets what the ones before prepared.
    open = await openDatabase({ kind: 'postgres', url }, { poolSize: 1 });
    db = open.db;
    await sql`CREATE TABLE t (id int PRIMARY KEY, a text)`.execute(db);
    await sql`INSERT INTO t VALUES (1, 'uno')`.execute(db);
  });
  afterAll(async () => {
    await open.close();
    await dropPostgresDatabase(url);
  });

  const prepared = async () =>
    (
      await sql<{ name: string }>`SELECT name FROM pg_prepared_statements WHERE statement LIKE 'select * from "t" where "id" = $1'`.execute(
        db,
      )
    ).rows;

  it('a statement run again is prepared on its connection', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await db
        .selectFrom('t' as never)
        .selectAll()
        .where('id' as never, '=', 1 as never)
        .execute();
      expect(r).toEqual([{ id: 1, a: 'uno' }]);
    }
    expect(await prepared()).toHaveLength(1);
  });

  it('after a migration adds a column, the same statement answers with it, alone and in a transaction', async () => {
    const read = (ex: Db | Parameters<Parameters<typeof transaction>[1]>[0]) =>
      ex
        .selectFrom('t' as never)
        .selectAll()
        .where('id' as never, '=', 1 as never)
        .execute();
    await read(db);
    await sql`ALTER TABLE t ADD COLUMN b text DEFAULT 'dos'`.execute(db);
    expect(await read(db)).toEqual([{ id: 1, a: 'uno', b: 'dos' }]);
    // Prepared again, under its new name.
    await read(db);
    expect(await prepared()).toHaveLength(2);

    await sql`ALTER TABLE t ADD COLUMN c text DEFAULT 'tres'`.execute(db);
    let tries = 0;
    const rows = await transaction(
      db,
      async (trx) => {
        tries++;
        return read(trx);
      },
      { sleep: async () => {} },
    );
    expect(rows).toEqual([{ id: 1, a: 'uno', b: 'dos', c: 'tres' }]);
    expect(tries).toBe(2);
  });
});

describe.skipIf(!base?.startsWith('postgres'))("a transaction's BEGIN travels with its first statement", () => {
  let open: OpenDb;
  let db: Db;
  let url: string;
  // Round trips on the wire: each ends with a Sync (extended protocol) or is one Query (simple).
  const Connection = (pg as unknown as { Connection: { prototype: Record<'sync' | 'query', (...a: unknown[]) => unknown> } }).Connection;
  const counted = async <T>(fn: () => Promise<T>): Promise<{ value: T; trips: number }> => {
    const { sync, query } = Connection.prototype;
    let trips = 0;
    Connection.prototype.sync = function (this: unknown, ...a: unknown[]) {
      trips++;
      return sync.apply(this, a);
    };
    Connection.prototype.query = function (this: unknown, ...a: unknown[]) {
      trips++;
      return query.apply(this, a);
    };
    try {
      return { value: await fn(), trips };
    } finally {
      Object.assign(Connection.prototype, { sync, query });
    }
  };
  const count = async (ex: Db | Trx) => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM u WHERE id > ${0}`.execute(ex)).rows[0]!.n;

  beforeAll(async () => {
    url = await freshPostgresDatabase(base!);
    // One connection: the second transaction meets the BEGIN the first one prepared.
    open = await openDatabase({ kind: 'postgres', url }, { poolSize: 1 });
    db = open.db;
    await sql`CREATE TABLE u (id int PRIMARY KEY)`.execute(db);
    await db.transaction().execute((trx) => sql`INSERT INTO u VALUES (${1})`.execute(trx)); // prepares BEGIN
  });
  afterAll(async () => {
    await open.close();
    await dropPostgresDatabase(url);
  });

  it('two statements and COMMIT are three round trips, and the statements are one transaction: a throw rolls both back', async () => {
    const { trips } = await counted(() =>
      db.transaction().execute(async (trx) => {
        await sql`INSERT INTO u VALUES (${2})`.execute(trx);
        await sql`INSERT INTO u VALUES (${3})`.execute(trx);
      }),
    );
    expect(trips).toBe(3);
    expect(await count(db)).toBe(3);
    await expect(
      db.transaction().execute(async (trx) => {
        await sql`INSERT INTO u VALUES (${4})`.execute(trx);
        expect(await count(trx)).toBe(4);
        throw new Error('se arrepintió');
      }),
    ).rejects.toThrow('se arrepintió');
    expect(await count(db)).toBe(3);
  });

  it('a first statement that fails aborts the transaction, and the connection serves the next one', async () => {
    await expect(db.transaction().execute((trx) => sql`INSERT INTO u VALUES (${1})`.execute(trx))).rejects.toThrow(/duplicate key/);
    await db.transaction().execute((trx) => sql`INSERT INTO u VALUES (${5})`.execute(trx));
    expect(await count(db)).toBe(4);
  });

  it('a transaction that sends nothing sends nothing, not even its BEGIN or COMMIT', async () => {
    const { value, trips } = await counted(() => db.transaction().execute(async () => 'nada'));
    expect(value).toBe('nada');
    expect(trips).toBe(0);
  });

  it('an isolation level holds (its own BEGIN, prepared once); a first text without parameters gets its BEGIN alone', async () => {
    for (let i = 0; i < 2; i++) {
      const level = await db
        .transaction()
        .setIsolationLevel('serializable')
        .execute(
          async (trx) => (await sql<{ l: string }>`SELECT current_setting(${'transaction_isolation'}) AS l`.execute(trx)).rows[0]!.l,
        );
      expect(level).toBe('serializable');
    }
    const both = await db.transaction().execute(async (trx) => {
      await sql`INSERT INTO u VALUES (6); INSERT INTO u VALUES (7)`.execute(trx);
      return count(trx);
    });
    expect(both).toBe(6);
  });
});
