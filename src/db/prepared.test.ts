// Prepared statements on PostgreSQL (docs/architecture.md "Prepared statements on PostgreSQL"): a
// repeated statement runs prepared on its connection, and after a schema change that alters its
// result's columns (a newer release's migration while this process runs) it is prepared again —
// alone it runs again at once, in db/retry.ts's transaction the transaction runs again.
// PostgreSQL only (DATABASE_URL): PGlite has its own dialect and prepares nothing.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropPostgresDatabase, freshPostgresDatabase } from '../../test/harness.js';
import { type Db, type OpenDb, openDatabase } from './index.js';
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
