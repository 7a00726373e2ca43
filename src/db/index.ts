// Opens the configured database (PGlite on disk or in memory, or PostgreSQL) behind one Kysely type.
import { mkdirSync } from 'node:fs';
import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.js';
import { PGliteDialect } from './pglite-dialect.js';
import { EmbeddedDatabase } from './pglite-thread.js';
import { preparingPool } from './prepared.js';
import type { Database } from './types.js';

export type Db = Kysely<Database>;
export type Trx = Transaction<Database>;
/** A query handle: the database, or a transaction open on it. */
export type Executor = Db | Trx;

export interface OpenDb {
  db: Db;
  kind: Config['database']['kind'];
  /** The underlying PGlite on its thread (embedded only): LISTEN, and tests dump its data directory. */
  pglite?: EmbeddedDatabase;
  pool?: pg.Pool;
  close(): Promise<void>;
}

// int8 (counts, sums) as JS numbers: every count we keep fits in 2^53.
pg.types.setTypeParser(20, (v) => Number(v));

export interface OpenOptions {
  /** A PGlite data-directory dump to start from (tests: a migrated template). */
  loadDataDir?: Blob;
  poolSize?: number;
}

export async function openDatabase(database: Config['database'], opts: OpenOptions = {}): Promise<OpenDb> {
  if (database.kind === 'postgres') {
    const pool = new pg.Pool({
      connectionString: database.url,
      max: opts.poolSize ?? 20,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
    });
    // A dropped connection must not crash the process: the pool replaces it. `error` on the pool
    // covers idle clients only; a client checked out between two queries (inside a transaction)
    // emits it on itself, which would be an unhandled 'error' event and kill the process when
    // PostgreSQL restarts (found by `npm run faults`). The query in flight still fails, and the
    // request answers 503.
    pool.on('error', () => {});
    pool.on('connect', (client) => {
      client.on('error', () => {});
    });
    // Repeated statements run prepared on each connection (prepared.ts).
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) });
    return { db, kind: 'postgres', pool, close: () => db.destroy() };
  }
  let dataDir: string | undefined;
  if (database.kind === 'pglite') {
    mkdirSync(database.dataDir, { recursive: true });
    dataDir = database.dataDir;
  }
  const pglite = await EmbeddedDatabase.open({
    ...(dataDir ? { dataDir } : {}),
    ...(opts.loadDataDir ? { loadDataDir: opts.loadDataDir } : {}),
  });
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  return { db, kind: database.kind, pglite, close: () => db.destroy() };
}
