// `chasqui db move-to` (docs/operating.md "Moving from the embedded database to PostgreSQL"): a
// business that started on the embedded database moves to PostgreSQL without losing anything.
// The data is made through the real app on a PGlite data directory, the move runs as the real
// CLI process, and the app started on PostgreSQL must answer exactly as before. These need
// DATABASE_URL; the refusals that come before any PostgreSQL write run without it too.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { runDue, writes } from '../automations.js';
import { answers, populate } from '../business.js';
import { startReceiver } from '../fakes/receiver.js';
import { dropPostgresDatabase, freshPhone, freshPostgresDatabase, startTestApp } from '../harness.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const cleanup: (() => unknown)[] = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `chasqui db move-to <url>` as a child process, with the data directory as its only database setting. */
function moveTo(url: string, dataDir: string): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir };
  for (const k of ['DATABASE_URL', 'REDIS_URL', 'ADMIN_TOKEN']) delete env[k];
  const args = ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'db', 'move-to', url];
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: ROOT, env, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Row counts of a few tables and the migrations' versions: what "nothing written" compares. */
async function snapshot(url: string): Promise<unknown> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT (SELECT count(*) FROM accounts) AS accounts, (SELECT count(*) FROM messages) AS messages,
              (SELECT count(*) FROM webhook_attempts) AS attempts, (SELECT string_agg(version, ',' ORDER BY version) FROM schema_migrations) AS versions`,
    );
    return rows[0];
  } finally {
    await client.end();
  }
}

/** Runs statements on a database, one after the other. */
async function sqlOn(url: string, statements: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const text of statements) await client.query(text);
  } finally {
    await client.end();
  }
}

/** A stopped embedded data directory with one account (key, number) and one contact. */
async function smallSource(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'chasqui-move-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const source = await startTestApp({ env: { DATA_DIR: dir, DATABASE_URL: `pglite://${dir}/pglite` } });
  try {
    const acct = await source.createAccount();
    expect((await acct.call('POST', '/contacts', { phone: freshPhone(), name: 'Ana' })).status).toBe(201);
  } finally {
    await source.close();
  }
  return dir;
}

/** A new, empty PostgreSQL database dropped when the file ends. */
async function emptyTarget(): Promise<string> {
  const url = await freshPostgresDatabase(inject('databaseUrl')!);
  cleanup.push(() => dropPostgresDatabase(url));
  return url;
}

describe.skipIf(!process.env.DATABASE_URL)('chasqui db move-to (PostgreSQL)', () => {
  it('moves a populated embedded database into an empty PostgreSQL: every table matches, and the app on PostgreSQL answers as before (contacts, messages, cases, webhook deliveries, executions)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chasqui-move-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const clock = new ManualClock();
    const before = await startTestApp({ clock, env: { DATA_DIR: dir, DATABASE_URL: `pglite://${dir}/pglite` } });
    let business: Awaited<ReturnType<typeof populate>>;
    let expected: Record<string, any>;
    const target = await emptyTarget();
    try {
      business = await populate(before, receiver);
      expected = await answers(before, business);
    } finally {
      await before.close();
    }
    expect(expected.contacts.data).toHaveLength(2);
    expect(expected.contacts.data.find((c: any) => c.attributes.ciudad === 'Rosario')).toBeTruthy();
    expect(expected.conversation.data).toHaveLength(2);
    expect(expected.cases.data).toHaveLength(2);
    expect(expected.execution).toMatchObject({ status: 'completed' });
    expect(expected.delivery.attemptLog.map((a: any) => a.statusCode)).toEqual([500, 200]);

    const moved = await moveTo(target, dir);
    expect(moved.stderr).toBe('');
    expect(moved.code).toBe(0);
    expect(moved.stdout).toMatch(/Copying \d+ tables in one transaction on the target \(all-or-nothing\)/);
    expect(moved.stdout).toMatch(/^ {2}messages +[1-9]\d* rows/m);
    expect(moved.stdout).toMatch(/^webhook_attempts +\d+ +[0-9a-f]{16} +ok$/m);
    expect(moved.stdout).not.toMatch(/MISMATCH/);
    expect(moved.stdout).toMatch(/Every table matches.*\n.*DATABASE_URL=postgres:\/\//);

    const after = await startTestApp({ clock, env: { DATA_DIR: mkdtempSync(join(tmpdir(), 'chasqui-moved-')), DATABASE_URL: target } });
    try {
      expect(await answers(after, business)).toEqual(expected);
      // The owned sequences continue past the copied rows: a new execution logs its steps.
      const phone = freshPhone();
      await writes(after, business.acct, phone, 'estado');
      await runDue(after);
      const list = await after.admin('GET', `/accounts/${business.acct.id}/automations/${business.automationId}/executions`);
      expect(list.body.data).toHaveLength(2);
      expect(list.body.data[0]).toMatchObject({ status: 'running', currentStepId: 'q' });
    } finally {
      await after.close();
    }
  }, 180_000);

  it('all-or-nothing: a copy that fails halfway leaves every table of the target empty, and running it again once the cause is gone succeeds', async () => {
    const dir = await smallSource();
    const target = await emptyTarget();
    // The cause, from outside the command: once the migrations create `contacts`, it refuses rows
    // (accounts, keys and numbers are copied before it).
    await sqlOn(target, [
      `CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`,
      `CREATE FUNCTION test_arm() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN
         IF EXISTS (SELECT 1 FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE TABLE' AND object_identity = 'public.contacts') THEN
           CREATE TRIGGER refuse BEFORE INSERT ON public.contacts FOR EACH ROW EXECUTE FUNCTION test_refuse();
         END IF; END $$`,
      'CREATE EVENT TRIGGER test_arm ON ddl_command_end EXECUTE FUNCTION test_arm()',
    ]);

    const failed = await moveTo(target, dir);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/^ {2}accounts +1 rows/m);
    expect(failed.stderr).toMatch(
      /The copy failed at contacts: refused by the test\. Nothing was kept.*\(all-or-nothing\)\. .*run the move again/,
    );
    expect(await snapshot(target)).toMatchObject({ accounts: 0, messages: 0, attempts: 0 });

    await sqlOn(target, ['DROP EVENT TRIGGER test_arm', 'DROP TRIGGER refuse ON contacts']);
    const again = await moveTo(target, dir);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/^contacts +1 +[0-9a-f]{16} +ok$/m);
    expect(await snapshot(target)).toMatchObject({ accounts: 1 });
  }, 120_000);

  it('the comparison catches a row changed on the way: MISMATCH on that table, exit 2, and the target left as it is', async () => {
    const dir = await smallSource();
    const target = await emptyTarget();
    // Once the migrations create `contacts`, the target changes each name it receives.
    await sqlOn(target, [
      `CREATE FUNCTION test_alter() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.name := NEW.name || '!'; RETURN NEW; END $$`,
      `CREATE FUNCTION test_arm() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN
         IF EXISTS (SELECT 1 FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE TABLE' AND object_identity = 'public.contacts') THEN
           CREATE TRIGGER alter_name BEFORE INSERT ON public.contacts FOR EACH ROW EXECUTE FUNCTION test_alter();
         END IF; END $$`,
      'CREATE EVENT TRIGGER test_arm ON ddl_command_end EXECUTE FUNCTION test_arm()',
    ]);

    const run = await moveTo(target, dir);
    expect(run.code).toBe(2);
    expect(run.stdout).toMatch(/^contacts +1 +[0-9a-f]{16} → [0-9a-f]{16} +MISMATCH$/m);
    expect(run.stdout).toMatch(/^accounts +1 +[0-9a-f]{16} +ok$/m);
    expect(run.stdout).toMatch(/MISMATCH: the tables marked above differ\. The target is left as it is/);
    expect(run.stdout).not.toMatch(/Every table matches/);
    expect(await snapshot(target)).toMatchObject({ accounts: 1 });
  }, 120_000);

  it('refuses a target that already holds data: exit 1, "not empty", and nothing written', async () => {
    const dir = await smallSource();
    const target = await emptyTarget();
    const used = await startTestApp({ env: { DATABASE_URL: target } });
    const acct = await used.createAccount();
    expect((await acct.call('POST', '/contacts', { phone: freshPhone() })).status).toBe(201);
    await used.close();
    const was = await snapshot(target);

    const refused = await moveTo(target, dir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/The target database is not empty \(rows in .*accounts.*\).*nothing was written/);
    expect(await snapshot(target)).toEqual(was);
  }, 120_000);
});

describe('chasqui db move-to: what it refuses before writing to PostgreSQL', () => {
  it('a data directory a server has open ("stop the server first"), one without a database, and a target it cannot reach: exit 1, said plainly, the password never printed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chasqui-move-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const unreachable = 'postgres://chasqui:secreto@127.0.0.1:1/chasqui';
    const running = await startTestApp({ env: { DATA_DIR: dir, DATABASE_URL: `pglite://${dir}/pglite` } });
    let busy: Run;
    try {
      busy = await moveTo(unreachable, dir);
    } finally {
      await running.close();
    }
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/pglite is in use \(its postmaster\.pid exists\): stop the server first, PGlite is one process/);

    const empty = mkdtempSync(join(tmpdir(), 'chasqui-move-'));
    cleanup.push(() => rmSync(empty, { recursive: true, force: true }));
    const none = await moveTo(unreachable, empty);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^No embedded database in .*pglite/);

    const stopped = await moveTo(unreachable, dir);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toMatch(/^Cannot connect to postgres:\/\/chasqui:\*\*\*\*@127\.0\.0\.1:1\/chasqui: .*Create the database first/);
    expect([busy, none, stopped].map((r) => r.stdout + r.stderr).join()).not.toContain('secreto');
  }, 120_000);
});
