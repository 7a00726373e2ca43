// Backups and restores as docs/operating.md "Backups and restores" tells them: a PostgreSQL
// database backed up with `pg_dump -Fc` and restored with `pg_restore` into a new database, and an
// embedded data directory copied while the server is stopped, each serve the same answers as the
// original (contacts, messages, cases, webhook deliveries, executions).
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { answers, populate } from '../business.js';
import { startReceiver } from '../fakes/receiver.js';
import { dropPostgresDatabase, freshPostgresDatabase, startTestApp } from '../harness.js';

const cleanup: (() => unknown)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs a PostgreSQL client tool; throws with its stderr when it fails. */
function tool(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: 60_000 }, (err, _stdout, stderr) => (err ? reject(new Error(`${cmd}: ${stderr}`)) : resolve()));
  });
}

describe('backups and restores (docs/operating.md "Backups and restores")', () => {
  it.skipIf(!process.env.DATABASE_URL)(
    'PostgreSQL: pg_dump -Fc of a populated database, taken while it serves, restored with pg_restore into a new database, serves the same answers',
    async () => {
      const receiver = await startReceiver();
      cleanup.push(() => receiver.close());
      const clock = new ManualClock();
      const original = await startTestApp({ clock });
      const dump = join(tempDir('chasqui-dump-'), 'chasqui.dump');
      let business: Awaited<ReturnType<typeof populate>>;
      let expected: Record<string, any>;
      try {
        business = await populate(original, receiver);
        expected = await answers(original, business);
        await tool('pg_dump', ['-Fc', '-f', dump, original.databaseUrl]);
      } finally {
        await original.close(); // drops the original database
      }
      expect(expected.contacts.data).toHaveLength(2);
      expect(expected.delivery.attemptLog).toHaveLength(2);

      const restoredUrl = await freshPostgresDatabase(inject('databaseUrl')!);
      cleanup.push(() => dropPostgresDatabase(restoredUrl));
      await tool('pg_restore', ['--no-owner', '--exit-on-error', '-d', restoredUrl, dump]);
      const restored = await startTestApp({ clock, env: { DATABASE_URL: restoredUrl } });
      try {
        expect(await answers(restored, business)).toEqual(expected);
      } finally {
        await restored.close();
      }
    },
    120_000,
  );

  it('embedded database: stop the server, copy DATA_DIR, start on the copy in another place: the same answers', async () => {
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const clock = new ManualClock();
    const dataDir = tempDir('chasqui-data-');
    const original = await startTestApp({ clock, env: { DATA_DIR: dataDir, DATABASE_URL: '' } });
    let business: Awaited<ReturnType<typeof populate>>;
    let expected: Record<string, any>;
    try {
      business = await populate(original, receiver);
      expected = await answers(original, business);
    } finally {
      await original.close();
    }
    expect(expected.cases.data).toHaveLength(2);
    expect(expected.execution).toMatchObject({ status: 'completed' });

    const copy = join(tempDir('chasqui-restore-'), 'data');
    cpSync(dataDir, copy, { recursive: true });
    rmSync(dataDir, { recursive: true, force: true }); // the original is gone: only the copy serves
    const restored = await startTestApp({ clock, env: { DATA_DIR: copy, DATABASE_URL: '' } });
    try {
      expect(await answers(restored, business)).toEqual(expected);
    } finally {
      await restored.close();
    }
  }, 120_000);
});
