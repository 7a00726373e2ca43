// What `chasqui db move-to` reads from the catalog, the same way on PGlite and on PostgreSQL: our
// tables in foreign-key order, their columns, the sequences they own, and a per-table checksum.
// Everything is derived from pg_catalog, so a table a later migration adds is never forgotten.

/** One query on either side (PGlite or a pg client), returning its rows. */
export type Query = <R>(text: string, params?: unknown[]) => Promise<R[]>;

/** Filled by the target's own migrations, compared by version instead of copied. */
export const MIGRATIONS_TABLE = 'schema_migrations';

/**
 * The session settings that make a row's text the same on PGlite (PostgreSQL 18) and PostgreSQL
 * 15: timestamps in UTC and ISO, floats in their shortest exact form. Rows travel and are
 * checksummed as that text.
 */
export const SESSION_SETTINGS = [
  "SET TimeZone = 'UTC'",
  "SET DateStyle = 'ISO, MDY'",
  "SET IntervalStyle = 'postgres'",
  'SET extra_float_digits = 1',
  "SET bytea_output = 'hex'",
];

export const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`;

export interface TableInfo {
  name: string;
  /** Every column in order, with its type: both sides must list the same. */
  shape: string;
  /** The columns an INSERT may write (not GENERATED … STORED), in order. */
  writable: string[];
}

/** Our tables (the current schema's), each with its columns; schema_migrations included. */
export async function tables(q: Query): Promise<Map<string, TableInfo>> {
  const rows = await q<{ name: string; shape: string; writable: string[] }>(
    `SELECT c.relname AS name,
            string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum) AS shape,
            array_agg(a.attname ORDER BY a.attnum) FILTER (WHERE a.attgenerated = '') AS writable
       FROM pg_class c
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
      GROUP BY c.relname
      ORDER BY c.relname`,
  );
  return new Map(rows.map((r) => [r.name, r]));
}

/**
 * The tables in an order where every table comes after the tables its foreign keys point at
 * (Kahn's algorithm, ties by name so the order is stable). A cycle cannot be copied table by
 * table, so it is an error, not a guess.
 */
export async function foreignKeyOrder(q: Query, names: string[]): Promise<string[]> {
  const edges = await q<{ child: string; parent: string }>(
    `SELECT DISTINCT ch.relname AS child, pa.relname AS parent
       FROM pg_constraint k
       JOIN pg_class ch ON ch.oid = k.conrelid
       JOIN pg_class pa ON pa.oid = k.confrelid
      WHERE k.contype = 'f' AND k.conrelid <> k.confrelid AND ch.relnamespace = current_schema()::regnamespace`,
  );
  const parents = new Map(names.map((n) => [n, new Set<string>()]));
  for (const e of edges) if (parents.has(e.parent)) parents.get(e.child)?.add(e.parent);
  const order: string[] = [];
  const done = new Set<string>();
  while (order.length < names.length) {
    const ready = names.filter((n) => !done.has(n) && [...(parents.get(n) ?? [])].every((p) => done.has(p)));
    if (ready.length === 0) {
      const left = names.filter((n) => !done.has(n));
      throw new Error(`the foreign keys of ${left.join(', ')} form a cycle: they cannot be copied table by table`);
    }
    for (const n of ready.sort()) {
      order.push(n);
      done.add(n);
    }
  }
  return order;
}

export interface OwnedSequence {
  table: string;
  column: string;
  sequence: string;
}

/** The sequences our columns own (bigserial, identity): set on the target after the copy. */
export function ownedSequences(q: Query): Promise<OwnedSequence[]> {
  return q<OwnedSequence>(
    `SELECT t.relname AS table, a.attname AS column, s.relname AS sequence
       FROM pg_depend d
       JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
       JOIN pg_class t ON t.oid = d.refobjid
       JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
      WHERE d.classid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
        AND t.relnamespace = current_schema()::regnamespace
      ORDER BY 1, 2`,
  );
}

/** The versions a database's migrations table lists, in order. */
export async function migrationVersions(q: Query): Promise<string[]> {
  return (await q<{ version: string }>(`SELECT version FROM ${MIGRATIONS_TABLE} ORDER BY version`)).map((r) => r.version);
}

/** The tables of `names` that hold at least one row. */
export async function nonEmpty(q: Query, names: string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const parts = names.map((n, i) => `SELECT ${i} AS i WHERE EXISTS (SELECT 1 FROM ${ident(n)})`);
  const rows = await q<{ i: number }>(parts.join(' UNION ALL '));
  return rows.map((r) => names[r.i]!);
}

export interface Checksum {
  rows: number;
  /** The first 16 hex digits of the md5 of the sum below. */
  checksum: string;
}

/**
 * The row count and a checksum of a table: the sum of the first 60 bits of each row's md5 (of
 * its text under SESSION_SETTINGS), so it needs no order and no memory beyond one row, unlike an
 * md5 of a string_agg of the whole table.
 */
export async function checksum(q: Query, table: string): Promise<Checksum> {
  const [r] = await q<Checksum>(
    `SELECT count(*)::int8 AS rows,
            left(md5(coalesce(sum(('x' || left(md5(t::text), 15))::bit(60)::int8::numeric), 0)::text), 16) AS checksum
       FROM ${ident(table)} t`,
  );
  return { rows: Number(r!.rows), checksum: r!.checksum };
}
