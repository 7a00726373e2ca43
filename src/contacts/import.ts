// Contact CSV imports (issue 27; docs/operator.md "Contact imports"). An upload is checked row by
// row with the rules of POST /api/v1/contacts (ContactInput, the per-contact attribute count, the
// plan's contact limit) and kept as a `previewed` import with every failing row and why; once
// started, the contact-imports job imports it in the background: a streamed parse (csv-parse) and,
// per batch of BATCH rows, one transaction with one UPDATE and one INSERT for the whole batch.
// Imported contacts emit no `contact.created` (api.md §4).
import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { CsvError, parse } from 'csv-parse';
import { sql } from 'kysely';
import { getAccount } from '../accounts/service.js';
import type { Executor, Trx } from '../db/index.js';
import type { AccountRow } from '../db/types.js';
import { isDatabaseUnavailable } from '../http/error-handler.js';
import { ApiError, invalid } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import { runJob } from '../jobs/scheduler.js';
import { newId } from '../lib/ids.js';
import { effectiveLimits } from '../limits/plans.js';
import type { Services } from '../services.js';
import { type AttributePatch, assertAttributeRoom, MAX_FIELDS_PER_ACCOUNT, rememberFields } from './attributes.js';
import { ATTRIBUTE_KEY, ContactInput, MAX_ATTRIBUTES_PER_REQUEST } from './schemas.js';

/** The largest file accepted (about 200,000 contacts with a few attributes). */
export const IMPORT_MAX_MIB = 20;
const IMPORT_MAX_BYTES = IMPORT_MAX_MIB * 1024 * 1024;
/**
 * Rows per transaction (one UPDATE and one INSERT each). A batch's own work on the server's thread
 * (building its arrays, reading its answers) is one stretch other requests wait behind: 1,000 rows
 * held it 8–16 ms, 250 rows about a quarter of that, for a third fewer rows a second
 * (docs/performance.md, "Issue 27's two figures on a quiet machine"). PGlite's statements ran on
 * that thread too until the embedded database got its own (docs/architecture.md).
 */
const BATCH = 250;
/** Rows shown in the preview. */
const PREVIEW_ROWS = 5;
/** How long a claim holds an import without a committed batch before another run may take it. */
const LEASE_MS = 60_000;
/**
 * The longest stretch of parsing and checking without giving the event loop a turn: other
 * requests are answered between slices (checking a batch of 250 rows is ~25–50 ms of CPU).
 */
const SLICE_MS = 2;
/**
 * The parser reads the file in pieces of this many characters, each parsed in one go (≈ 150 rows,
 * under a millisecond): a 64 KiB piece held the event loop longer than a slice (csv-parse parses
 * what it is given before the loop reading its records gets a turn).
 */
const PIECE = 8_192;
/** Failing rows returned with the import itself; the rest through GET …/failures. */
const FAILURES_INLINE = 100;

export interface RowProblem {
  /** The column whose value failed (`phone`, `name`, an attribute key), or '' for the whole row. */
  column: string;
  value: string;
  reason: string;
}
export interface RowFailure {
  row: number;
  problems: RowProblem[];
}
interface CsvRecord {
  /** The file's line where the record ends (the header is line 1): a spreadsheet's row number. */
  line: number;
  cells: string[];
}
interface Checked {
  line: number;
  phone: string;
  name: string | undefined;
  attributes: Record<string, string>;
}

/** Reads an upload's body up to the limit (413 past it, before reading further). */
export async function readCsvBody(payload: AsyncIterable<Buffer>, declaredLength: string | undefined): Promise<Buffer> {
  const tooLarge = () => new ApiError('contact_import_too_large', { params: { max: IMPORT_MAX_MIB } });
  if (declaredLength !== undefined && Number(declaredLength) > IMPORT_MAX_BYTES) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of payload) {
    size += chunk.length;
    if (size > IMPORT_MAX_BYTES) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The file's text: UTF-8 only (a leading BOM dropped), no NUL. */
export function csvText(body: Buffer): string {
  if (body.includes(0)) throw new ApiError('contact_import_nul');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new ApiError('contact_import_not_utf8');
  }
}

/**
 * The file's records, parsed as a stream of PIECE-character pieces; a malformed file → 400 naming its line.
 * Every SLICE_MS of work (this parse and what the caller does with each record) the event loop
 * gets a turn, so the server keeps answering while a 100,000-row file is read.
 */
async function* records(text: string): AsyncGenerator<CsvRecord> {
  let since = performance.now();
  function* pieces() {
    for (let i = 0; i < text.length; i += PIECE) yield text.slice(i, i + PIECE);
  }
  const parser = Readable.from(pieces()).pipe(
    parse({ relax_column_count: true, skip_empty_lines: true, info: true, bom: true, max_record_size: 1_000_000 }),
  );
  try {
    for await (const r of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      yield { line: r.info.lines, cells: r.record };
      if (performance.now() - since >= SLICE_MS) {
        await nextTurn();
        since = performance.now();
      }
    }
  } catch (err) {
    if (err instanceof CsvError)
      throw new ApiError('contact_import_malformed', { params: { line: (err as { lines?: number }).lines ?? 1 } });
    throw err;
  } finally {
    parser.destroy();
  }
}

/** The header's attribute keys (after phone and name), checked as the API checks keys. */
function attributeKeys(header: string[]): string[] {
  const cells = header.map((c) => c.trim());
  if (cells.length < 2 || cells[0]?.toLowerCase() !== 'phone' || cells[1]?.toLowerCase() !== 'name') {
    throw new ApiError('contact_import_header');
  }
  const keys = cells.slice(2);
  if (keys.length > MAX_ATTRIBUTES_PER_REQUEST)
    throw invalid(['columns'], textFor('attributes_too_many', { max: MAX_ATTRIBUTES_PER_REQUEST }));
  const seen = new Set<string>();
  keys.forEach((key, i) => {
    if (!ATTRIBUTE_KEY.test(key)) throw new ApiError('contact_import_header_key', { params: { column: i + 3, key } });
    if (seen.has(key)) throw new ApiError('contact_import_header_repeated', { params: { key } });
    seen.add(key);
  });
  return keys;
}

/** The account's fields plus the header's new keys must fit MAX_FIELDS_PER_ACCOUNT (409, as the API). */
async function assertFieldsRoom(db: Executor, accountId: string, keys: string[]): Promise<void> {
  const r = await sql<{ known: number; fresh: number }>`
    SELECT (SELECT count(*)::int FROM contact_fields WHERE account_id = ${accountId}) AS known,
           (SELECT count(*)::int FROM unnest(${keys}::text[]) AS k
             WHERE NOT EXISTS (SELECT 1 FROM contact_fields f WHERE f.account_id = ${accountId} AND f.key = k)) AS fresh`.execute(db);
  const { known, fresh } = r.rows[0] ?? { known: 0, fresh: 0 };
  if (known + fresh > MAX_FIELDS_PER_ACCOUNT) {
    throw new ApiError('attribute_fields_limit', {
      params: { max: MAX_FIELDS_PER_ACCOUNT, wanted: fresh, free: Math.max(0, MAX_FIELDS_PER_ACCOUNT - known) },
    });
  }
}

/**
 * One record checked by POST /api/v1/contacts's own schema: phone, name (an empty cell keeps the
 * contact's name), attributes (an empty cell sets nothing).
 */
function checkRecord(rec: CsvRecord, keys: string[]): Checked | RowFailure {
  const want = keys.length + 2;
  if (rec.cells.length !== want) {
    return { row: rec.line, problems: [{ column: '', value: '', reason: textFor('import_row_columns', { got: rec.cells.length, want }) }] };
  }
  const [phone = '', rawName = ''] = rec.cells;
  const name = rawName.trim() === '' ? undefined : rawName.trim();
  const attributes: Record<string, string> = {};
  keys.forEach((k, i) => {
    const v = rec.cells[i + 2] ?? '';
    if (v !== '') attributes[k] = v;
  });
  const r = ContactInput.safeParse({ phone: phone.trim(), ...(name !== undefined ? { name } : {}), attributes });
  if (r.success) return { line: rec.line, phone: r.data.phone, name, attributes };
  const problems = r.error.issues.map((i): RowProblem => {
    const [first, second] = i.path;
    if (first === 'attributes' && typeof second === 'string') return { column: second, value: attributes[second] ?? '', reason: i.message };
    if (first === 'name') return { column: 'name', value: rawName, reason: i.message };
    return { column: 'phone', value: phone, reason: i.message };
  });
  return { row: rec.line, problems };
}

interface Existing {
  id: string;
  phone: string;
  attributes: Record<string, string>;
}
interface BatchPlan {
  updates: (Checked & { id: string })[];
  inserts: Checked[];
  failures: RowFailure[];
}

/**
 * What the rows of one batch become, with the rules that need the database: a phone repeated in
 * the file (its first row counts), an existing contact's attribute count (assertAttributeRoom), and
 * the plan's contact limit (`room`: contacts the account may still create; null: no limit).
 * With `lock`, the batch's existing contacts are locked first (docs/architecture.md "Lock order").
 */
async function planBatch(
  db: Executor,
  accountId: string,
  rows: (Checked | RowFailure)[],
  seen: Map<string, number>,
  room: { left: number | null; limit: number | null },
  lock: boolean,
): Promise<BatchPlan> {
  const plan: BatchPlan = { updates: [], inserts: [], failures: [] };
  const fresh: Checked[] = [];
  for (const r of rows) {
    if ('problems' in r) plan.failures.push(r);
    else {
      const first = seen.get(r.phone);
      if (first !== undefined && first !== r.line) {
        plan.failures.push({
          row: r.line,
          problems: [{ column: 'phone', value: r.phone, reason: textFor('import_row_repeated', { row: first }) }],
        });
      } else {
        seen.set(r.phone, r.line);
        fresh.push(r);
      }
    }
  }
  const phones = fresh.map((r) => r.phone).sort();
  const found = phones.length
    ? await sql<Existing>`
        SELECT id, phone, attributes FROM contacts
        WHERE account_id = ${accountId} AND phone = ANY(${phones}::text[])
        ORDER BY phone ${lock ? sql`FOR NO KEY UPDATE` : sql``}`.execute(db)
    : { rows: [] };
  const existing = new Map(found.rows.map((e) => [e.phone, e]));
  for (const r of fresh) {
    const e = existing.get(r.phone);
    if (e) {
      try {
        assertAttributeRoom(e.attributes, r.attributes);
        plan.updates.push({ ...r, id: e.id });
      } catch (err) {
        plan.failures.push({ row: r.line, problems: [{ column: '', value: '', reason: reasonOf(err) }] });
      }
    } else if (room.left !== null && room.left <= 0) {
      plan.failures.push({
        row: r.line,
        problems: [{ column: 'phone', value: r.phone, reason: textFor('contact_limit', { limit: room.limit ?? 0 }) }],
      });
    } else {
      if (room.left !== null) room.left -= 1;
      plan.inserts.push(r);
    }
  }
  return plan;
}

const reasonOf = (err: unknown): string =>
  (err as { problems?: { message: string }[] }).problems?.map((p) => p.message).join(' ') ?? (err as Error).message;

/** Contacts the account may still create under its plan (null: no limit); with `lock`, the account row is locked. */
async function contactRoom(db: Executor, account: AccountRow, lock: boolean): Promise<{ left: number | null; limit: number | null }> {
  const limit = effectiveLimits(account.plan, account.limits).contacts;
  if (limit === null) return { left: null, limit: null };
  if (lock) await sql`SELECT id FROM accounts WHERE id = ${account.id} FOR NO KEY UPDATE`.execute(db);
  const r = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM contacts WHERE account_id = ${account.id} AND erased_at IS NULL`.execute(db);
  return { left: Math.max(0, limit - (r.rows[0]?.n ?? 0)), limit };
}

async function storeFailures(db: Executor, importId: string, failures: RowFailure[]): Promise<void> {
  for (let i = 0; i < failures.length; i += BATCH) {
    const part = failures.slice(i, i + BATCH);
    await sql`
      INSERT INTO contact_import_failures (import_id, row_number, problems)
      SELECT ${importId}::uuid, t.r, t.p::jsonb
      FROM unnest(${part.map((f) => f.row)}::int[], ${part.map((f) => JSON.stringify(f.problems))}::text[]) AS t(r, p)
      ON CONFLICT (import_id, row_number) DO UPDATE SET problems = EXCLUDED.problems`.execute(db);
  }
}

export interface ImportView {
  id: string;
  object: 'contact_import';
  state: 'previewed' | 'queued' | 'running' | 'done' | 'failed';
  columns: string[];
  totalRows: number;
  /** Rows that pass the checks (at the preview; the import checks again as it goes). */
  validRows: number;
  processedRows: number;
  created: number;
  updated: number;
  failed: number;
  preview: { row: number; phone: string; name: string; attributes: Record<string, string> }[];
  /** The first failing rows by row number; every one through GET …/imports/{importId}/failures. */
  failures: RowFailure[];
  hasMoreFailures: boolean;
  error: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

interface ImportRow {
  id: string;
  account_id: string;
  state: ImportView['state'];
  columns: string[];
  preview: ImportView['preview'];
  total_rows: number;
  valid_rows: number;
  processed_rows: number;
  created_count: number;
  updated_count: number;
  failed_count: number;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}
const VIEW_COLUMNS = sql`id, account_id, state, columns, preview, total_rows, valid_rows, processed_rows, created_count,
  updated_count, failed_count, error, created_at, started_at, finished_at`;

/** A page of an import's failing rows by row number, after row `after`. */
export async function importFailures(db: Executor, accountId: string, importId: string, q: { limit: number; after?: number | undefined }) {
  await importRow(db, accountId, importId);
  const r = await sql<{ row_number: number; problems: RowProblem[] }>`
    SELECT row_number, problems FROM contact_import_failures
    WHERE import_id = ${importId} AND row_number > ${q.after ?? 0}
    ORDER BY row_number LIMIT ${q.limit + 1}`.execute(db);
  const more = r.rows.length > q.limit;
  const data = r.rows.slice(0, q.limit).map((f) => ({ row: f.row_number, problems: f.problems }));
  return { data, hasMore: more, nextCursor: more ? (data.at(-1)?.row ?? null) : null };
}

async function importRow(db: Executor, accountId: string, importId: string): Promise<ImportRow> {
  const r = await sql<ImportRow>`SELECT ${VIEW_COLUMNS} FROM contact_imports WHERE id = ${importId} AND account_id = ${accountId}`.execute(
    db,
  );
  const row = r.rows[0];
  if (!row) throw new ApiError('contact_import_not_found');
  return row;
}

export async function getImport(db: Executor, accountId: string, importId: string): Promise<ImportView> {
  const row = await importRow(db, accountId, importId);
  const f = await importFailures(db, accountId, importId, { limit: FAILURES_INLINE });
  const d = (x: Date | null) => (x ? new Date(x).toISOString() : null);
  return {
    id: row.id,
    object: 'contact_import',
    state: row.state,
    columns: row.columns,
    totalRows: row.total_rows,
    validRows: row.valid_rows,
    processedRows: row.processed_rows,
    created: row.created_count,
    updated: row.updated_count,
    failed: row.failed_count,
    preview: row.preview,
    failures: f.data,
    hasMoreFailures: f.hasMore,
    error: row.error,
    createdAt: new Date(row.created_at).toISOString(),
    startedAt: d(row.started_at),
    finishedAt: d(row.finished_at),
  };
}

/**
 * POST …/contacts/imports: the file checked whole, row by row, without writing any contact; kept
 * as an import in state `previewed` with every failing row (its number, the value, the reason).
 */
export async function previewImport(s: Services, account: AccountRow, body: Buffer): Promise<ImportView> {
  const text = csvText(body);
  const now = s.clock.now();
  let keys: string[] | null = null;
  let total = 0;
  let valid = 0;
  const preview: ImportView['preview'] = [];
  const failures: RowFailure[] = [];
  const seen = new Map<string, number>();
  const room = await contactRoom(s.db, account, false);
  let pending: (Checked | RowFailure)[] = [];
  const flush = async () => {
    const plan = await planBatch(s.db, account.id, pending, seen, room, false);
    valid += plan.updates.length + plan.inserts.length;
    failures.push(...plan.failures);
    pending = [];
    await nextTurn();
  };
  for await (const rec of records(text)) {
    if (keys === null) {
      keys = attributeKeys(rec.cells);
      await assertFieldsRoom(s.db, account.id, keys);
      continue;
    }
    total += 1;
    if (preview.length < PREVIEW_ROWS) {
      const attributes: Record<string, string> = {};
      keys.forEach((k, i) => {
        attributes[k] = rec.cells[i + 2] ?? '';
      });
      preview.push({ row: rec.line, phone: rec.cells[0] ?? '', name: rec.cells[1] ?? '', attributes });
    }
    pending.push(checkRecord(rec, keys));
    if (pending.length >= BATCH) await flush();
  }
  if (pending.length) await flush();
  if (keys === null || total === 0) throw new ApiError('contact_import_empty');
  failures.sort((a, b) => a.row - b.row);
  const id = newId();
  await s.db.transaction().execute(async (trx) => {
    await sql`
      INSERT INTO contact_imports (id, account_id, state, csv, columns, preview, total_rows, valid_rows, failed_count, created_at)
      VALUES (${id}, ${account.id}, 'previewed', ${text}, ${JSON.stringify(['phone', 'name', ...(keys ?? [])])}::jsonb,
              ${JSON.stringify(preview)}::jsonb, ${total}, ${valid}, ${failures.length}, ${now})`.execute(trx);
    await storeFailures(trx, id, failures);
  });
  return getImport(s.db, account.id, id);
}

/** POST …/imports/{importId}/start: `previewed` → `queued`, then the job takes it (now, in this process). */
export async function startImport(s: Services, accountId: string, importId: string): Promise<ImportView> {
  const now = s.clock.now();
  const r = await sql`
    UPDATE contact_imports SET state = 'queued', run_at = ${now}
    WHERE id = ${importId} AND account_id = ${accountId} AND state = 'previewed'`.execute(s.db);
  if (Number(r.numAffectedRows ?? 0) === 0) {
    await importRow(s.db, accountId, importId);
    throw new ApiError('contact_import_started');
  }
  // The job's next tick would take it within a second; this takes it now (or after a run in progress).
  void runJob(s, 'contact-imports').catch((err) =>
    s.log.warn({ err: { message: (err as Error).message }, importId }, 'contact import run failed'),
  );
  return getImport(s.db, accountId, importId);
}

interface Claimed {
  id: string;
  account_id: string;
  csv: string;
  processed_rows: number;
}

/** Takes one due import (queued, or running with its lease lapsed) with SKIP LOCKED and a lease. */
async function claim(s: Services): Promise<Claimed | null> {
  const now = s.clock.now();
  const r = await sql<Claimed>`
    UPDATE contact_imports SET state = 'running', locked_until = ${new Date(now.getTime() + LEASE_MS)},
      started_at = coalesce(started_at, ${now})
    WHERE id = (
      SELECT id FROM contact_imports
      WHERE state IN ('queued', 'running') AND run_at <= ${now} AND (locked_until IS NULL OR locked_until <= ${now})
      ORDER BY run_at LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id, account_id, csv, processed_rows`.execute(s.db);
  return r.rows[0] ?? null;
}

/** Applies one batch in `trx` (the lock order of upsertContact: contacts, account, fields). Returns rows done. */
async function applyBatch(
  trx: Trx,
  s: Services,
  account: AccountRow,
  imp: Claimed,
  batch: (Checked | RowFailure)[],
  seen: Map<string, number>,
  range: { first: number; last: number; processed: number },
): Promise<{ created: number; updated: number }> {
  const now = s.clock.now();
  const lockedContacts = await planBatch(trx, account.id, batch, seen, { left: null, limit: null }, true);
  // The contact limit is counted under the account's lock, after the contacts were locked.
  const room = await contactRoom(trx, account, true);
  const plan: BatchPlan = { updates: lockedContacts.updates, inserts: [], failures: lockedContacts.failures };
  for (const r of lockedContacts.inserts) {
    if (room.left !== null && room.left <= 0) {
      plan.failures.push({
        row: r.line,
        problems: [{ column: 'phone', value: r.phone, reason: textFor('contact_limit', { limit: room.limit ?? 0 }) }],
      });
    } else {
      if (room.left !== null) room.left -= 1;
      plan.inserts.push(r);
    }
  }
  const attrs = (r: Checked) => JSON.stringify(r.attributes satisfies AttributePatch);
  if (plan.updates.length) {
    const u = plan.updates;
    await sql`
      UPDATE contacts AS c SET name = coalesce(t.name, c.name), attributes = c.attributes || t.attrs::jsonb, updated_at = ${now}
      FROM unnest(${u.map((r) => r.id)}::uuid[], ${u.map((r) => r.name ?? null)}::text[], ${u.map(attrs)}::text[]) AS t(id, name, attrs)
      WHERE c.id = t.id`.execute(trx);
  }
  let created = 0;
  if (plan.inserts.length) {
    const n = plan.inserts;
    const done = await sql<{ phone: string }>`
      INSERT INTO contacts (id, account_id, phone, name, attributes, created_at, updated_at)
      SELECT t.id, ${account.id}::uuid, t.phone, coalesce(t.name, ''), t.attrs::jsonb, ${now}::timestamptz, ${now}::timestamptz
      FROM unnest(${n.map(() => newId())}::uuid[], ${n.map((r) => r.phone)}::text[], ${n.map((r) => r.name ?? null)}::text[],
                  ${n.map(attrs)}::text[]) AS t(id, phone, name, attrs)
      ON CONFLICT (account_id, phone) WHERE phone IS NOT NULL DO NOTHING
      RETURNING phone`.execute(trx);
    created = done.rows.length;
    // Created meanwhile by another request (after this batch's read): not overwritten blindly.
    const inserted = new Set(done.rows.map((r) => r.phone));
    for (const r of n) {
      if (!inserted.has(r.phone))
        plan.failures.push({ row: r.line, problems: [{ column: 'phone', value: r.phone, reason: textFor('import_row_raced') }] });
    }
  }
  const keys = [...new Set([...plan.updates, ...plan.inserts].flatMap((r) => Object.keys(r.attributes)))];
  await rememberFields(trx, account.id, keys, now);
  // The batch's rows are re-judged: a preview failure that passes now is no failure any more.
  await sql`DELETE FROM contact_import_failures WHERE import_id = ${imp.id} AND row_number BETWEEN ${range.first} AND ${range.last}`.execute(
    trx,
  );
  await storeFailures(trx, imp.id, plan.failures);
  const moved = await sql`
    UPDATE contact_imports SET processed_rows = ${range.processed + batch.length},
      created_count = created_count + ${created}, updated_count = updated_count + ${plan.updates.length},
      failed_count = (SELECT count(*)::int FROM contact_import_failures WHERE import_id = ${imp.id}),
      locked_until = ${new Date(now.getTime() + LEASE_MS)}
    WHERE id = ${imp.id} AND state = 'running' AND processed_rows = ${range.processed}`.execute(trx);
  // Another run took the import over (this one's lease lapsed): this batch is theirs to do.
  if (Number(moved.numAffectedRows ?? 0) === 0) throw new LeaseLost();
  return { created, updated: plan.updates.length };
}

class LeaseLost extends Error {}

/** Runs one claimed import to its end, from the first row not yet committed. Returns contacts written. */
async function runImport(s: Services, imp: Claimed): Promise<number> {
  const account = await getAccount(s.db, imp.account_id);
  let keys: string[] | null = null;
  const seen = new Map<string, number>();
  let index = 0;
  let processed = imp.processed_rows;
  let written = 0;
  let batch: (Checked | RowFailure)[] = [];
  const flush = async () => {
    const range = { first: lineOf(batch[0]), last: lineOf(batch.at(-1)), processed };
    const r = await s.db.transaction().execute((trx) => applyBatch(trx, s, account, imp, batch, seen, range));
    processed += batch.length;
    written += r.created + r.updated;
    // GET /me shows the growing count within its TTL (accounts/view-cache.ts reads it again in
    // the background); the view is dropped only when the import ends.
    batch = [];
    await nextTurn();
  };
  try {
    for await (const rec of records(imp.csv)) {
      if (keys === null) {
        keys = attributeKeys(rec.cells);
        continue;
      }
      const checked = checkRecord(rec, keys);
      index += 1;
      if (index <= processed) {
        // Committed by an earlier run: only what the rows after it need (the phones seen).
        if (!('problems' in checked) && !seen.has(checked.phone)) seen.set(checked.phone, checked.line);
        continue;
      }
      batch.push(checked);
      if (batch.length >= BATCH) await flush();
    }
    if (batch.length) await flush();
    await sql`
      UPDATE contact_imports SET state = 'done', csv = NULL, locked_until = NULL, finished_at = ${s.clock.now()}
      WHERE id = ${imp.id} AND state = 'running'`.execute(s.db);
    s.accountViews.changed(account.id);
  } catch (err) {
    if (err instanceof LeaseLost) return written;
    if (isDatabaseUnavailable(err)) throw err;
    // Nothing a later run could do better (the account's field limit reached meanwhile, a bug):
    // the import ends failed, with what it imported so far kept and the reason shown.
    const reason = err instanceof ApiError ? err.message : textFor('internal');
    if (!(err instanceof ApiError)) s.log.warn({ err: { message: (err as Error).message }, importId: imp.id }, 'contact import failed');
    await sql`
      UPDATE contact_imports SET state = 'failed', error = ${reason}, csv = NULL, locked_until = NULL, finished_at = ${s.clock.now()}
      WHERE id = ${imp.id}`.execute(s.db);
    s.accountViews.changed(account.id);
  }
  return written;
}

const lineOf = (r: Checked | RowFailure | undefined): number => (r === undefined ? 0 : 'problems' in r ? r.row : r.line);

/** A preview nobody started is deleted (with its file) after this long. */
const PREVIEW_KEPT_MS = 24 * 3_600_000;

/**
 * The contact-imports job: deletes the previews nobody started within PREVIEW_KEPT_MS (their
 * files hold customers' data), then runs every due import to its end; returns the contacts written.
 */
export async function runContactImports(s: Services): Promise<number> {
  const stale = new Date(s.clock.now().getTime() - PREVIEW_KEPT_MS);
  await sql`DELETE FROM contact_imports WHERE state = 'previewed' AND created_at < ${stale}`.execute(s.db);
  let n = 0;
  for (;;) {
    const imp = await claim(s);
    if (!imp) return n;
    n += await runImport(s, imp);
  }
}
