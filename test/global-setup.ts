// Migrates an embedded database once and dumps it; every test file starts from that dump
// (≈0.5 s instead of ≈2.5 s per file). With DATABASE_URL=postgres://… files use PostgreSQL.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../src/db/index.js';
import { listMigrations, migrate } from '../src/db/migrate.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The newest modification time under a path (a file or a folder's files). */
function newest(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return readdirSync(path).reduce((max, name) => Math.max(max, newest(join(path, name))), st.mtimeMs);
}

/**
 * The console's built app (dist/console-app), which the server serves at /console: built here when
 * it is missing or older than its sources (a fresh clone's `npm ci && npm test` has no build step).
 */
async function buildConsoleIfStale(): Promise<void> {
  const index = join(ROOT, 'dist/console-app/index.html');
  const sources = Math.max(newest(join(ROOT, 'console')), newest(join(ROOT, 'vite.config.ts')));
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return;
  const { build } = await import('vite');
  // Vitest sets NODE_ENV=test, which Vite would honour: build what `npm run build` builds (no
  // Preact debug code), then give the tests their NODE_ENV back.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ configFile: join(ROOT, 'vite.config.ts'), logLevel: 'warn', mode: 'production' });
  } finally {
    process.env.NODE_ENV = nodeEnv;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  await buildConsoleIfStale();
  const url = process.env.DATABASE_URL;
  if (url?.startsWith('postgres')) {
    project.provide('databaseUrl', url);
    return;
  }
  const hash = createHash('sha256')
    .update(
      listMigrations()
        .map((m) => m.sql)
        .join('\n'),
    )
    .digest('hex')
    .slice(0, 16);
  const file = join(tmpdir(), `chasqui-pglite-${hash}.tar`);
  if (!existsSync(file)) {
    const d = await openDatabase({ kind: 'memory' });
    await migrate(d.db);
    const dump = await d.pglite!.dumpDataDir('none');
    writeFileSync(`${file}.tmp`, Buffer.from(await dump.arrayBuffer()));
    await d.close();
    const { renameSync } = await import('node:fs');
    renameSync(`${file}.tmp`, file);
  }
  project.provide('pgliteTemplate', file);
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate?: string;
    databaseUrl?: string;
  }
}
