// Prepared statements on PostgreSQL (docs/architecture.md "Prepared statements on PostgreSQL"). Every statement
// with parameters that the process has sent before runs as a named prepared statement on its
// connection: PostgreSQL parses and plans it once per connection instead of once per call (after
// five runs it may keep a generic plan, when that plan is no costlier than the custom ones). On the
// inbound → first-reply path, planning alone was more of PostgreSQL's time than running the
// statements (docs/performance.md "Prepared statements and fewer round trips").
//
// The Kysely pool is the pg pool seen through `preparingPool`: the same connections, the same
// order; only the protocol messages differ. Statements without parameters (BEGIN, COMMIT,
// migrations of several statements) keep the simple protocol.
import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';

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

class PreparingClient implements PostgresPoolClient {
  constructor(
    private readonly client: pg.PoolClient,
    private readonly names: StatementNames,
  ) {}

  query(text: any, parameters?: ReadonlyArray<unknown>): any {
    if (typeof text !== 'string') return this.client.query(text);
    const values = parameters ? [...parameters] : [];
    const name = values.length > 0 ? this.names.nameOf(text) : undefined;
    if (!name) return this.client.query(text, values) as Promise<PostgresQueryResult<unknown>>;
    return (this.client.query({ name, text, values }) as Promise<PostgresQueryResult<unknown>>).catch((err: unknown) => {
      if (!isStalePlan(err)) throw err;
      this.names.renew(text);
      // Every connection prepares the text again, under a new name (the stale one stays unused
      // until the connection closes). Inside a transaction, the transaction was aborted and runs
      // again (db/retry.ts); alone, the statement runs again at once.
      if (this.client.getTransactionStatus() !== 'I') throw err;
      return this.client.query(text, values);
    });
  }

  release(): void {
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
