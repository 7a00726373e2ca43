// What someone holding a copy of the database would read (docs/privacy.md): the tests of sealed
// secrets and of erasure search these for every value that must not be there.
import { execFile } from 'node:child_process';
import { sql } from 'kysely';
import type { TestApp } from './harness.js';

/**
 * A logical dump: on PostgreSQL `pg_dump` (plain SQL, every table's rows); on PGlite, which has no
 * pg_dump, every row of every table of the public schema as its text — the same content.
 */
export async function logicalDump(app: TestApp): Promise<string> {
  if (app.rt.database.kind === 'postgres') {
    return new Promise((resolve, reject) => {
      execFile('pg_dump', ['--no-owner', app.databaseUrl], { maxBuffer: 512 * 1024 * 1024, timeout: 60_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`pg_dump: ${stderr}`)) : resolve(stdout),
      );
    });
  }
  const db = app.rt.services.db;
  const tables = await sql<{ name: string }>`
    SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`.execute(db);
  const parts: string[] = [];
  for (const t of tables.rows) {
    const rows = await sql<{ r: string }>`SELECT t::text AS r FROM ${sql.raw(t.name)} t`.execute(db);
    parts.push(`-- ${t.name}`, ...rows.rows.map((x) => x.r));
  }
  return parts.join('\n');
}

/**
 * The raw bytes a file-level backup holds: on PGlite its data directory (`dumpDataDir`, an
 * uncompressed tar of every page and the WAL); on PostgreSQL the logical dump above.
 */
export async function rawBackup(app: TestApp): Promise<Buffer> {
  const pglite = app.rt.database.pglite;
  if (!pglite) return Buffer.from(await logicalDump(app));
  const tar = await pglite.dumpDataDir('none');
  return Buffer.from(await tar.arrayBuffer());
}

/** The values of `needles` found in `haystack` (as UTF-8 text), to assert an empty list. */
export function found(haystack: string | Buffer, needles: string[]): string[] {
  const buf = typeof haystack === 'string' ? Buffer.from(haystack) : haystack;
  return needles.filter((n) => buf.includes(Buffer.from(n)));
}
