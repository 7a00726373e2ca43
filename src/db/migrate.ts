// Versioned SQL migrations in migrations/*.sql, shared by PGlite and PostgreSQL. Each file runs
// once, in its own transaction, under an advisory lock so two starting processes never race.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { Db } from './index.js';

// src/db and dist/db both sit two levels below the package root.
export const migrationsDir = fileURLToPath(new URL('../../migrations/', import.meta.url));
const MIGRATION_LOCK = 4_242_001;

export function listMigrations(dir = migrationsDir): { version: string; sql: string }[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: f.replace(/\.sql$/, ''), sql: readFileSync(`${dir}${f}`, 'utf8') }));
}

/** Applies pending migrations; returns the versions applied now. */
export async function migrate(db: Db): Promise<string[]> {
  await sql`CREATE TABLE IF NOT EXISTS schema_migrations (
    version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`.execute(db);
  const applied: string[] = [];
  for (const m of listMigrations()) {
    const did = await db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(trx);
      const seen = await sql<{ version: string }>`SELECT version FROM schema_migrations WHERE version = ${m.version}`.execute(trx);
      if (seen.rows.length > 0) return false;
      await sql.raw(m.sql).execute(trx);
      await sql`INSERT INTO schema_migrations (version) VALUES (${m.version})`.execute(trx);
      return true;
    });
    if (did) applied.push(m.version);
  }
  return applied;
}
