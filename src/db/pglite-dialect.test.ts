// Our PGlite dialect under concurrent work (docs/architecture.md "Our own PGlite dialect"): PGlite
// is one connection, so every query and every transaction holds it until it ends. Transactions
// that commit and roll back run at once with plain queries between their steps; each step yields
// the event loop, so a dialect that let other work into an open transaction would show it here.
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Db, type Executor, type OpenDb, openDatabase } from './index.js';

let open: OpenDb;
let db: Db;

beforeEach(async () => {
  open = await openDatabase({ kind: 'memory' });
  db = open.db;
  await sql`CREATE TABLE t (id text PRIMARY KEY, who text NOT NULL)`.execute(db);
});
afterEach(async () => {
  await open.close();
});

/** Lets every other pending callback run (no timer: only what is already queued moves). */
const yieldTurns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

const insert = (q: Executor, id: string, who: string) => sql`INSERT INTO t (id, who) VALUES (${id}, ${who})`.execute(q);

const ids = async () => (await sql<{ id: string }>`SELECT id FROM t ORDER BY id`.execute(db)).rows.map((r) => r.id);

class Rollback extends Error {}

describe('our own PGlite dialect (docs/architecture.md): one connection, "nothing interleaves with an open transaction"', () => {
  it('many transactions at once, some rolling back: every committed row is there, no rolled-back row is, plain writes between them all stay', async () => {
    const expected: string[] = [];
    const work: Promise<unknown>[] = [];
    for (let n = 0; n < 40; n++) {
      const rollsBack = n % 3 === 0;
      const rows = [`tx${String(n).padStart(2, '0')}-a`, `tx${String(n).padStart(2, '0')}-b`];
      if (!rollsBack) expected.push(...rows);
      work.push(
        db
          .transaction()
          .execute(async (trx) => {
            await insert(trx, rows[0]!, 'tx');
            await yieldTurns(1 + (n % 4));
            await insert(trx, rows[1]!, 'tx');
            await yieldTurns(n % 3);
            if (rollsBack) throw new Rollback();
          })
          .catch((e) => {
            if (!(e instanceof Rollback)) throw e;
          }),
      );
      // A plain (autocommit) write and a read issued while those transactions are open.
      const plain = `plain${String(n).padStart(2, '0')}`;
      expected.push(plain);
      work.push(insert(db, plain, 'plain'));
      work.push(sql`SELECT count(*) FROM t`.execute(db));
    }
    await Promise.all(work);
    expect(await ids()).toEqual(expected.sort());
  });

  it('"a rollback never erases another\'s committed row": work issued during a transaction that rolls back survives it', async () => {
    let firstInserted!: () => void;
    const opened = new Promise<void>((r) => {
      firstInserted = r;
    });
    const failing = db
      .transaction()
      .execute(async (trx) => {
        await insert(trx, 'doomed', 'tx');
        firstInserted();
        await yieldTurns(20);
        throw new Rollback();
      })
      .catch((e) => (e instanceof Rollback ? 'rolled back' : Promise.reject(e)));
    await opened;
    // Issued while the failing transaction is open: one committing transaction and one plain write.
    const committing = db.transaction().execute(async (trx) => {
      await insert(trx, 'kept-tx', 'tx');
    });
    const plain = insert(db, 'kept-plain', 'plain');
    expect(await Promise.all([failing, committing, plain])).toEqual(['rolled back', undefined, expect.anything()]);
    expect(await ids()).toEqual(['kept-plain', 'kept-tx']);
  });

  it('a query issued while a transaction is open waits for it and never runs inside it', async () => {
    const order: string[] = [];
    let opened!: () => void;
    const isOpen = new Promise<void>((r) => {
      opened = r;
    });
    const rolledBack = db
      .transaction()
      .execute(async (trx) => {
        await insert(trx, 'uncommitted', 'tx');
        opened();
        await yieldTurns(20);
        order.push('transaction ends');
        throw new Rollback();
      })
      .catch((e) => {
        if (!(e instanceof Rollback)) throw e;
      });
    await isOpen;
    const seen = sql<{ n: number }>`SELECT count(*)::int AS n FROM t`.execute(db).then((r) => {
      order.push('query answers');
      return r.rows[0]!.n;
    });
    await rolledBack;
    // Inside the transaction it would have counted the uncommitted row, and answered first.
    expect(await seen).toBe(0);
    expect(order).toEqual(['transaction ends', 'query answers']);

    // The same with a transaction that commits: the waiting query sees the committed row.
    let reopened!: () => void;
    const isReopened = new Promise<void>((r) => {
      reopened = r;
    });
    const committed = db.transaction().execute(async (trx) => {
      await insert(trx, 'committed', 'tx');
      reopened();
      await yieldTurns(20);
    });
    await isReopened;
    const after = sql<{ n: number }>`SELECT count(*)::int AS n FROM t`.execute(db);
    await committed;
    expect((await after).rows[0]!.n).toBe(1);
  });
});
