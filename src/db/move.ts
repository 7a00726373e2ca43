// `chasqui db move-to <postgres URL>`: copies the embedded database (PGlite) into an empty
// PostgreSQL database, all-or-nothing, then compares every table on both sides (docs/operating.md
// "Moving from the embedded database to PostgreSQL"). Rows travel as their own text (the
// record's output form, parsed back by the target's record input), a batch per round trip.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { type OpenDb, openDatabase } from './index.js';
import { migrate } from './migrate.js';
import {
  type Checksum,
  checksum,
  foreignKeyOrder,
  ident,
  MIGRATIONS_TABLE,
  migrationVersions,
  nonEmpty,
  ownedSequences,
  type Query,
  SESSION_SETTINGS,
  tables,
} from './move-catalog.js';
import type { EmbeddedDatabase, EmbeddedTx } from './pglite-thread.js';

/** A refusal before anything was written: the message says why, the command exits 1. */
export class MoveRefused extends Error {}

export interface MoveOptions {
  /** The PGlite data directory (DATA_DIR/pglite, or the path of DATABASE_URL=pglite:///path). */
  dataDir: string;
  targetUrl: string;
  /** Rows per round trip. */
  batchRows?: number;
  /** Where the server kept its operator token (DATA_DIR/admin-token), when ADMIN_TOKEN is unset. */
  adminTokenFile?: string | null;
  out: (line: string) => void;
}

export interface TableCheck {
  table: string;
  source: Checksum;
  target: Checksum;
  ok: boolean;
}

export interface MoveResult {
  checks: TableCheck[];
  rows: number;
  copySeconds: number;
  ok: boolean;
}

const fromPglite =
  (db: EmbeddedTx): Query =>
  async (text, params) =>
    (await db.query(text, params)).rows as never[];
const fromPg =
  (client: pg.PoolClient): Query =>
  async (text, params) =>
    (await client.query(text, params)).rows;

/** The URL without its password, for output. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '****';
    return u.toString();
  } catch {
    return '(an invalid URL)';
  }
}

/** PGlite writes postmaster.pid while a process has the directory open and removes it on close. */
function assertSourceFree(dataDir: string): void {
  if (!existsSync(join(dataDir, 'PG_VERSION')))
    throw new MoveRefused(`No embedded database in ${dataDir} (set DATA_DIR or DATABASE_URL=pglite:///path).`);
  if (existsSync(join(dataDir, 'postmaster.pid'))) {
    throw new MoveRefused(
      `${dataDir} is in use (its postmaster.pid exists): stop the server first, PGlite is one process. ` +
        'If no server runs (it was killed), start it once and stop it with Ctrl-C, or delete that file.',
    );
  }
}

const count = (n: number) => n.toLocaleString('en-US');

export async function moveToPostgres(opts: MoveOptions): Promise<MoveResult> {
  const { out } = opts;
  if (!/^postgres(ql)?:\/\//.test(opts.targetUrl)) throw new MoveRefused('The target must be a postgres:// URL.');
  assertSourceFree(opts.dataDir);
  const shown = redactUrl(opts.targetUrl);
  out(`Moving the embedded database in ${opts.dataDir} to ${shown}`);
  let source: OpenDb | undefined;
  let target: OpenDb | undefined;
  let client: pg.PoolClient | undefined;
  try {
    source = await openDatabase({ kind: 'pglite', dataDir: opts.dataDir });
    const lite = source.pglite!;
    const src = fromPglite(lite);
    const applied = await migrate(source.db);
    out(applied.length ? `Source migrated: ${applied.join(', ')}` : 'Source is up to date.');
    const sourceTables = await tables(src);
    const names = [...sourceTables.keys()].filter((n) => n !== MIGRATIONS_TABLE);

    target = await openDatabase({ kind: 'postgres', url: opts.targetUrl }, { poolSize: 2 });
    client = await target.pool!.connect().catch((err: Error) => {
      throw new MoveRefused(`Cannot connect to ${shown}: ${err.message}. Create the database first (createdb) and check the URL.`);
    });
    const dst = fromPg(client);
    await prepareTarget(target, dst, sourceTables, names, out);
    if ((await migrationVersions(src)).join() !== (await migrationVersions(dst)).join()) {
      throw new MoveRefused('The two databases list different migrations: run the same Chasqui version on both.');
    }

    const order = await foreignKeyOrder(src, names);
    for (const s of SESSION_SETTINGS) {
      await lite.exec(s);
      await client.query(s);
    }
    const started = performance.now();
    const rows = await copyAll(lite, client, order, sourceTables, opts.batchRows ?? 2000, out);
    const copySeconds = (performance.now() - started) / 1000;
    out(`Copied ${count(rows)} rows in ${copySeconds.toFixed(1)} s (${count(Math.round(rows / Math.max(copySeconds, 0.001)))} rows/s).`);

    const checks = await compareAll(src, dst, order);
    printChecks(checks, out);
    const ok = checks.every((c) => c.ok);
    if (ok) printNext(opts, shown, out);
    else {
      out('');
      out('MISMATCH: the tables marked above differ. The target is left as it is for inspection; do not start on it.');
      out('Drop and recreate the target database, then run the move again (the embedded database is unchanged).');
    }
    return { checks, rows, copySeconds, ok };
  } finally {
    client?.release();
    await target?.close();
    await source?.close();
  }
}

/**
 * Refuses a target that holds our data before its migrations write anything, migrates it, and
 * refuses it when its tables are not the source's (same columns, same types, same order).
 */
async function prepareTarget(
  target: OpenDb,
  dst: Query,
  sourceTables: Map<string, { shape: string }>,
  names: string[],
  out: (line: string) => void,
): Promise<void> {
  const existing = [...(await tables(dst)).keys()].filter((n) => names.includes(n));
  await refuseNonEmpty(dst, existing);
  const applied = await migrate(target.db);
  out(applied.length ? `Target migrated: ${applied.length} migrations.` : 'Target is up to date.');
  const targetTables = await tables(dst);
  const differ = names.filter((n) => targetTables.get(n)?.shape !== sourceTables.get(n)!.shape);
  if (differ.length > 0) throw new MoveRefused(`The target's tables differ from the source's: ${differ.join(', ')}. Nothing was copied.`);
}

/** Each table's count and checksum on both sides. */
async function compareAll(src: Query, dst: Query, order: string[]): Promise<TableCheck[]> {
  const checks: TableCheck[] = [];
  for (const table of order) {
    const [a, b] = [await checksum(src, table), await checksum(dst, table)];
    checks.push({ table, source: a, target: b, ok: a.rows === b.rows && a.checksum === b.checksum });
  }
  return checks;
}

async function refuseNonEmpty(q: Query, names: string[]): Promise<void> {
  const full = await nonEmpty(q, names);
  if (full.length > 0) {
    throw new MoveRefused(
      `The target database is not empty (rows in ${full.slice(0, 5).join(', ')}${full.length > 5 ? ', …' : ''}). ` +
        'The move copies only into an empty database: nothing was written.',
    );
  }
}

/** The whole copy in one transaction on the target: a failure leaves its tables empty. */
async function copyAll(
  lite: EmbeddedDatabase,
  client: pg.PoolClient,
  order: string[],
  info: Map<string, { writable: string[] }>,
  batchRows: number,
  out: (line: string) => void,
): Promise<number> {
  const dst = fromPg(client);
  const width = Math.max(...order.map((t) => t.length));
  let total = 0;
  let current = '';
  await client.query('BEGIN');
  try {
    // Again inside the transaction, with writers held off until it ends: a server started on the
    // target meanwhile is caught here, or waits.
    await client.query(`LOCK TABLE ${order.map(ident).join(', ')} IN EXCLUSIVE MODE`);
    await refuseNonEmpty(dst, order);
    out(`Copying ${order.length} tables in one transaction on the target (all-or-nothing):`);
    await lite.transaction(async (tx) => {
      for (const table of order) {
        current = table;
        const t0 = performance.now();
        const cols = info.get(table)!.writable.map(ident).join(', ');
        const insert = `INSERT INTO ${ident(table)} (${cols}) OVERRIDING SYSTEM VALUE
                        SELECT ${cols} FROM unnest($1::text[]::${ident(table)}[])`;
        await tx.exec(`DECLARE move_rows NO SCROLL CURSOR FOR SELECT t::text AS r FROM ${ident(table)} t`);
        let rows = 0;
        for (;;) {
          const batch = (await tx.query<{ r: string }>(`FETCH ${batchRows} FROM move_rows`)).rows;
          if (batch.length === 0) break;
          await client.query(insert, [batch.map((b) => b.r)]);
          rows += batch.length;
        }
        await tx.exec('CLOSE move_rows');
        total += rows;
        out(`  ${table.padEnd(width)}  ${count(rows).padStart(10)} rows  ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      }
    });
    current = 'sequences';
    await setSequences(fromPglite(lite), dst);
    await client.query('COMMIT');
    return total;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    if (err instanceof MoveRefused) throw err;
    // A value the database quotes in its message (a row it could not read) may be personal data.
    const reason = (err as Error).message.replace(/: ".*$/s, ': "…"');
    throw new Error(
      `The copy failed at ${current}: ${reason}. Nothing was kept: the target's tables are empty again ` +
        '(all-or-nothing). Fix the cause and run the move again.',
    );
  }
}

/** Each owned sequence continues where the source's did, and never below the copied ids. */
async function setSequences(src: Query, dst: Query): Promise<void> {
  for (const s of await ownedSequences(src)) {
    const [seq] = await src<{ last_value: number; is_called: boolean }>(
      `SELECT last_value::int8 AS last_value, is_called FROM ${ident(s.sequence)}`,
    );
    const [max] = await dst<{ max: number | null }>(`SELECT max(${ident(s.column)})::int8 AS max FROM ${ident(s.table)}`);
    const last = Number(seq!.last_value);
    const top = Number(max!.max ?? 0);
    const [value, called] = top > last ? [top, true] : [last, seq!.is_called];
    await dst('SELECT setval($1::regclass, $2, $3)', [ident(s.sequence), value, called]);
  }
}

function printChecks(checks: TableCheck[], out: (line: string) => void): void {
  const width = Math.max(5, ...checks.map((c) => c.table.length));
  out('');
  out(`${'table'.padEnd(width)}  ${'rows'.padStart(10)}  ${'checksum'.padEnd(16)}  ok`);
  for (const c of checks) {
    const rows = c.source.rows === c.target.rows ? count(c.source.rows) : `${count(c.source.rows)} → ${count(c.target.rows)}`;
    const sum = c.source.checksum === c.target.checksum ? c.source.checksum : `${c.source.checksum} → ${c.target.checksum}`;
    out(`${c.table.padEnd(width)}  ${rows.padStart(10)}  ${sum.padEnd(16)}  ${c.ok ? 'ok' : 'MISMATCH'}`);
  }
}

function printNext(opts: MoveOptions, shown: string, out: (line: string) => void): void {
  out('');
  out('Every table matches (row counts and checksums). Next:');
  out(`  1. Start Chasqui on PostgreSQL: DATABASE_URL=${shown} npm start   (your password where **** is)`);
  const token = opts.adminTokenFile
    ? `it stays in ${opts.adminTokenFile} (on another machine: ADMIN_TOKEN=$(cat ${opts.adminTokenFile}))`
    : 'set the same ADMIN_TOKEN';
  out(`  2. The operator token: ${token}. API keys, webhook secrets and Cloud tokens moved with the data.`);
  out(`  3. Keep ${opts.dataDir} untouched as a backup until the new setup has served for a while; do not start on it again.`);
  out('  4. For several processes, add REDIS_URL (docs/operating.md "Running several processes").');
}

/** The command's action: the source from the configuration, the target from the argument. */
export async function moveToCommand(url: string, o: { batch?: string }): Promise<void> {
  const { loadConfig } = await import('../config.js');
  const config = loadConfig();
  if (config.database.kind !== 'pglite') {
    throw new MoveRefused(
      'The move reads the embedded database on disk: unset DATABASE_URL (PGlite in DATA_DIR/pglite) or set DATABASE_URL=pglite:///path.',
    );
  }
  const batchRows = Number(o.batch ?? 2000);
  if (!Number.isInteger(batchRows) || batchRows < 1 || batchRows > 100_000) throw new MoveRefused('--batch takes 1 to 100000 rows.');
  const result = await moveToPostgres({
    dataDir: config.database.dataDir,
    targetUrl: url,
    batchRows,
    adminTokenFile: config.ADMIN_TOKEN ? null : join(config.DATA_DIR, 'admin-token'),
    out: (line) => process.stdout.write(`${line}\n`),
  });
  // 2, not 1: something was written (the target is kept for inspection), unlike a refusal.
  if (!result.ok) process.exitCode = 2;
}
