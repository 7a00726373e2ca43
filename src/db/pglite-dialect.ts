// A Kysely dialect for PGlite. PGlite is one connection; kysely-pglite interleaved other queries
// into open transactions (design/architecture.md). Here every query and every transaction holds
// one mutex from acquireConnection to releaseConnection, and a transaction runs inside
// pglite.transaction() on the database's thread (pglite-thread.ts), so nothing else reaches the
// connection while it is open.
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
} from 'kysely';
import type { EmbeddedDatabase } from './pglite-thread.js';

/** FIFO mutex. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();
  lock(): Promise<() => void> {
    let release!: () => void;
    const next = new Promise<void>((r) => {
      release = r;
    });
    const ready = this.tail.then(() => release);
    this.tail = this.tail.then(() => next);
    return ready;
  }
}

class PGliteConnection implements DatabaseConnection {
  constructor(private readonly pg: EmbeddedDatabase) {}

  async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    if (q.parameters.length === 0 && q.query.kind === 'RawNode') {
      // Raw text without parameters may hold several statements (migrations): simple protocol,
      // as pg does for the same call.
      return { rows: (await this.pg.exec(q.sql)).rows as R[] };
    }
    const res = await this.pg.query<R>(q.sql, q.parameters as unknown[]);
    const affected = res.affectedRows;
    return {
      rows: res.rows,
      ...(affected !== undefined && q.query.kind !== 'SelectQueryNode' ? { numAffectedRows: BigInt(affected) } : {}),
    };
  }

  // biome-ignore lint/correctness/useYield: streaming is not supported on PGlite
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streamQuery is not supported on PGlite');
  }
}

class PGliteDriver implements Driver {
  private readonly mutex = new Mutex();
  private readonly releases = new WeakMap<PGliteConnection, () => void>();
  constructor(private readonly pg: EmbeddedDatabase) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    // Inside a transaction, always query through its trx handle: a query on the outer db
    // would wait here for the connection its own transaction holds.
    const release = await this.mutex.lock();
    const conn = new PGliteConnection(this.pg);
    this.releases.set(conn, release);
    return conn;
  }

  async beginTransaction(): Promise<void> {
    await this.pg.begin();
  }
  async commitTransaction(): Promise<void> {
    await this.pg.end(true);
  }
  async rollbackTransaction(): Promise<void> {
    await this.pg.end(false);
  }

  async releaseConnection(conn: DatabaseConnection): Promise<void> {
    const release = this.releases.get(conn as PGliteConnection);
    if (!release) return;
    this.releases.delete(conn as PGliteConnection);
    release();
  }

  async destroy(): Promise<void> {
    const release = await this.mutex.lock();
    try {
      if (!this.pg.closed) await this.pg.close();
    } finally {
      release();
    }
  }
}

export class PGliteDialect implements Dialect {
  constructor(private readonly pg: EmbeddedDatabase) {}
  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver() {
    return new PGliteDriver(this.pg);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
  createIntrospector(db: Parameters<Dialect['createIntrospector']>[0]) {
    return new PostgresIntrospector(db);
  }
}
