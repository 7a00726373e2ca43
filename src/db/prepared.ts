// Prepared statements on PostgreSQL (docs/architecture.md "Prepared statements on PostgreSQL"). Every statement
// with parameters that the process has sent before runs as a named prepared statement on its
// connection: PostgreSQL parses and plans it once per connection instead of once per call (after
// five runs it may keep a generic plan, when that plan is no costlier than the custom ones). On the
// inbound → first-reply path, planning alone was more of PostgreSQL's time than running the
// statements (docs/performance.md "Prepared statements and fewer round trips").
//
// The Kysely pool is the pg pool seen through `preparingPool`: the same connections, the same
// order; only the protocol messages differ. Statements without parameters (COMMIT, migrations of
// several statements) keep the simple protocol.
//
// A transaction's BEGIN travels with its first statement (docs/architecture.md "Prepared
// statements on PostgreSQL"): Kysely's `begin` is held back and sent in front of the next statement
// in the same write, as the extended protocol's Bind and Execute of a BEGIN prepared once per
// connection, before that statement's own messages and one Sync. PostgreSQL runs both in order and
// answers once: one round trip where there were two. A transaction that sends nothing before its
// COMMIT or ROLLBACK sends nothing at all.
import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import pg from 'pg';

/**
 * Statement texts and their names, shared by every connection of the process. A text is named on
 * its second sighting, so one-off texts (an IN list of a rare length) are never prepared; past
 * `max` texts, new ones run unnamed. Each connection prepares a name the first time it runs it.
 */
export class StatementNames {
  private readonly names = new Map<string, string | null>();
  private next = 0;

  constructor(private readonly max = 2_000) {}

  nameOf(text: string): string | undefined {
    const known = this.names.get(text);
    if (known) return known;
    if (known === null) {
      const name = `chasqui_${(this.next++).toString(36)}`;
      this.names.set(text, name);
      return name;
    }
    if (this.names.size < this.max) this.names.set(text, null);
    return undefined;
  }

  /** The text's prepared statements are stale: connections prepare it again under a new name. */
  renew(text: string): void {
    if (this.names.get(text)) this.names.set(text, `chasqui_${(this.next++).toString(36)}`);
  }
}

/**
 * A statement prepared before a schema change that altered its result's columns (a migration of a
 * newer release while this process runs): PostgreSQL refuses it on every connection that prepared it.
 */
export function isStalePlan(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return e?.code === '0A000' && typeof e.message === 'string' && e.message.includes('cached plan must not change result type');
}

/** Kysely's transaction starts: `begin`, or `start transaction …` with an isolation level or access mode. */
const BEGIN = /^(begin|start transaction\b.*)$/i;
const END = /^(commit|rollback)$/i;

/** What a held-back BEGIN (or the COMMIT or ROLLBACK of a transaction that sent nothing) answers. */
const empty = (command: string): PostgresQueryResult<unknown> =>
  ({ command: command.toUpperCase(), rowCount: null, rows: [] }) as unknown as PostgresQueryResult<unknown>;

/** Names of the BEGIN texts prepared on connections (one per text: `begin`, each isolation level). */
const beginNames = new Map<string, string>();
const beginName = (text: string): string => {
  const known = beginNames.get(text);
  if (known) return known;
  const name = `chasqui_begin_${beginNames.size}`;
  beginNames.set(text, name);
  return name;
};

// pg's Query, as far as this file extends it (its own methods, not in @types/pg).
interface Connection {
  parsedStatements: Record<string, string>;
  bind(config: { portal: string; statement: string; values: unknown[] }): void;
  execute(config: { portal: string }): void;
}
interface QueryInternals {
  requiresPreparation(): boolean;
  prepare(connection: Connection): void;
  handleCommandComplete(msg: unknown, connection: Connection): void;
}
const QueryBase = pg.Query as unknown as new (
  config: pg.QueryConfig,
  callback: (err: Error | undefined, result: PostgresQueryResult<unknown>) => void,
) => pg.Query & QueryInternals;

/**
 * A statement with its transaction's BEGIN in front, in one write and one Sync: Bind and Execute of
 * the BEGIN (already prepared on this connection, so no Parse whose answer pg would take for the
 * statement's), then the statement as pg sends it. PostgreSQL answers BEGIN's CommandComplete
 * first; it is not part of the statement's result.
 */
class AfterBegin extends QueryBase {
  private begun = false;

  constructor(
    private readonly begin: string,
    config: pg.QueryConfig,
    callback: (err: Error | undefined, result: PostgresQueryResult<unknown>) => void,
  ) {
    super(config, callback);
  }

  override requiresPreparation(): boolean {
    return true;
  }

  override prepare(connection: Connection): void {
    connection.bind({ portal: '', statement: this.begin, values: [] });
    connection.execute({ portal: '' });
    super.prepare(connection);
  }

  override handleCommandComplete(msg: unknown, connection: Connection): void {
    if (!this.begun) {
      this.begun = true;
      return;
    }
    super.handleCommandComplete(msg, connection);
  }
}

class PreparingClient implements PostgresPoolClient {
  /** Kysely's BEGIN, held back until the transaction's first statement. */
  private pendingBegin: string | null = null;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly names: StatementNames,
  ) {}

  query(text: any, parameters?: ReadonlyArray<unknown>): any {
    if (typeof text !== 'string') return this.client.query(text);
    const values = parameters ? [...parameters] : [];
    if (values.length === 0 && BEGIN.test(text)) {
      this.pendingBegin = text;
      return Promise.resolve(empty('BEGIN'));
    }
    const begin = this.pendingBegin;
    if (begin !== null) {
      this.pendingBegin = null;
      // Nothing was sent: there is no transaction to end.
      if (values.length === 0 && END.test(text)) return Promise.resolve(empty(text));
      // A text without parameters may hold several statements (the simple protocol only): its BEGIN goes first, alone.
      if (values.length === 0) return this.client.query(begin).then(() => this.run(text, values, null));
      return this.run(text, values, begin);
    }
    return this.run(text, values, null);
  }

  private run(text: string, values: unknown[], begin: string | null): Promise<PostgresQueryResult<unknown>> {
    const name = values.length > 0 ? this.names.nameOf(text) : undefined;
    if (!name && begin === null) return this.client.query(text, values) as Promise<PostgresQueryResult<unknown>>;
    const config: pg.QueryConfig = name ? { name, text, values } : { text, values };
    const sent = begin === null ? (this.client.query(config) as Promise<PostgresQueryResult<unknown>>) : this.afterBegin(begin, config);
    return sent.catch((err: unknown) => {
      if (!name || !isStalePlan(err)) throw err;
      this.names.renew(text);
      // Every connection prepares the text again, under a new name (the stale one stays unused
      // until the connection closes). Inside a transaction, the transaction was aborted and runs
      // again (db/retry.ts); alone, the statement runs again at once.
      if (this.client.getTransactionStatus() !== 'I') throw err;
      return this.client.query(text, values) as Promise<PostgresQueryResult<unknown>>;
    });
  }

  /** The statement with the held-back BEGIN in front; the first BEGIN of this connection prepares it alone. */
  private async afterBegin(begin: string, config: pg.QueryConfig): Promise<PostgresQueryResult<unknown>> {
    const name = beginName(begin);
    const connection = (this.client as unknown as { connection: Connection }).connection;
    if (connection.parsedStatements[name] !== begin) {
      await this.client.query({ name, text: begin });
      return this.client.query(config) as Promise<PostgresQueryResult<unknown>>;
    }
    return new Promise((resolve, reject) => {
      this.client.query(new AfterBegin(name, config, (err, result) => (err ? reject(err) : resolve(result))));
    });
  }

  release(): void {
    // A BEGIN held back and never followed (a transaction given up before it wrote) goes with it.
    this.pendingBegin = null;
    this.client.release();
  }
}

/** The pg pool as Kysely sees it: every client prepares its repeated statements. */
export function preparingPool(pool: pg.Pool, names = new StatementNames()): PostgresPool {
  const wrapped = new WeakMap<pg.PoolClient, PreparingClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let w = wrapped.get(client);
      if (!w) {
        w = new PreparingClient(client, names);
        wrapped.set(client, w);
      }
      return w;
    },
    end: () => pool.end(),
  };
}
