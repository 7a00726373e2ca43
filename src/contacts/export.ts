// GET …/contacts/export (docs/operator.md "Contact export"): every contact of the account as CSV
// — phone, name, then one column per attribute field of the account — streamed: pages of PAGE
// contacts read by id cursor, written through csv-stringify as the client reads (backpressure).
// The file imports back as it is (POST …/contacts/imports takes the same columns).
import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify';
import { sql } from 'kysely';
import type { Executor } from '../db/index.js';

const PAGE = 1000;

/** The columns of the export: phone, name and the account's attribute fields, in creation order. */
async function exportColumns(db: Executor, accountId: string): Promise<string[]> {
  const r = await sql<{ key: string }>`
    SELECT key FROM contact_fields WHERE account_id = ${accountId} ORDER BY created_at, key`.execute(db);
  return ['phone', 'name', ...r.rows.map((f) => f.key)];
}

async function* contactRecords(db: Executor, accountId: string, keys: string[]): AsyncGenerator<string[]> {
  let after: string | null = null;
  for (;;) {
    const page: { id: string; phone: string | null; name: string; attributes: Record<string, string> }[] = (
      await sql<{ id: string; phone: string | null; name: string; attributes: Record<string, string> }>`
        SELECT id, phone, name, attributes FROM contacts
        WHERE account_id = ${accountId} AND erased_at IS NULL ${after ? sql`AND id > ${after}` : sql``}
        ORDER BY id LIMIT ${PAGE}`.execute(db)
    ).rows;
    for (const c of page) yield [c.phone ? `+${c.phone}` : '', c.name, ...keys.map((k) => c.attributes[k] ?? '')];
    if (page.length < PAGE) return;
    after = page[page.length - 1]?.id ?? null;
  }
}

/** The CSV stream of the account's contacts (UTF-8, header first). */
export async function exportContacts(db: Executor, accountId: string): Promise<Readable> {
  const columns = await exportColumns(db, accountId);
  const rows = Readable.from(contactRecords(db, accountId, columns.slice(2)));
  const out = stringify({ header: true, columns, bom: false });
  rows.on('error', (err) => out.destroy(err));
  return rows.pipe(out);
}
