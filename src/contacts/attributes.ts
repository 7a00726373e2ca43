// Contact attributes (api.md §4; decisions.md "Attribute counts"): a request's patch merged into
// the contact, within the counts per contact and per account.
import { sql } from 'kysely';
import type { Trx } from '../db/index.js';
import { ApiError, invalid } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';

/** Keys one contact may hold, and attribute fields one account may have (decisions.md "Attribute counts"). */
export const MAX_ATTRIBUTES_PER_CONTACT = 200;
export const MAX_FIELDS_PER_ACCOUNT = 1000;

/** Attributes as a request sends them: text sets a key, null removes it (JSON Merge Patch, RFC 7386). */
export type AttributePatch = Record<string, string | null>;

// Two-key advisory locks live apart from the one-key locks of jobs and seeding.
const FIELDS_LOCK_CLASS = 4_242_010;

/** The account's attribute keys among `keys` that are not fields yet. */
const unknownFields = (trx: Trx, accountId: string, keys: string[]) =>
  sql<{ key: string }>`
    SELECT k AS key FROM unnest(${keys}::text[]) AS k
    WHERE NOT EXISTS (SELECT 1 FROM contact_fields f WHERE f.account_id = ${accountId} AND f.key = k)`.execute(trx);

/**
 * Registers attribute keys the account did not have as text fields (api.md §4), at most
 * MAX_FIELDS_PER_ACCOUNT in all: 409 for a request that would create more. Requests that create
 * fields of one account take turns (a transaction advisory lock, taken last in the request), so two
 * cannot pass the limit together; one that creates none takes no lock. Keys travel as one array
 * parameter, whatever their number.
 */
export async function rememberFields(trx: Trx, accountId: string, keys: string[], now: Date): Promise<void> {
  if (keys.length === 0 || (await unknownFields(trx, accountId, keys)).rows.length === 0) return;
  await sql`SELECT pg_advisory_xact_lock(${FIELDS_LOCK_CLASS}::int, hashtext(${accountId}))`.execute(trx);
  const fresh = (await unknownFields(trx, accountId, keys)).rows.map((r) => r.key);
  const { n } = await trx
    .selectFrom('contact_fields')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  if (n + fresh.length > MAX_FIELDS_PER_ACCOUNT) {
    throw new ApiError('attribute_fields_limit', {
      params: { max: MAX_FIELDS_PER_ACCOUNT, wanted: fresh.length, free: Math.max(0, MAX_FIELDS_PER_ACCOUNT - n) },
    });
  }
  await sql`
    INSERT INTO contact_fields (account_id, key, created_at)
    SELECT ${accountId}, k, ${now} FROM unnest(${fresh}::text[]) AS k
    ON CONFLICT DO NOTHING`.execute(trx);
}

/**
 * The contact's key count after the patch must stay within MAX_ATTRIBUTES_PER_CONTACT (400 naming
 * `attributes`); a contact already past it (stored before the rule) may only shrink or stay.
 */
export function assertAttributeRoom(current: Record<string, string>, patch: AttributePatch): void {
  const keys = new Set(Object.keys(current));
  const before = keys.size;
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) keys.delete(k);
    else keys.add(k);
  }
  if (keys.size > MAX_ATTRIBUTES_PER_CONTACT && keys.size > before) {
    throw invalid(['attributes'], textFor('attributes_contact_full', { max: MAX_ATTRIBUTES_PER_CONTACT }));
  }
}

// Stored attributes never hold null, so stripping nulls after the merge removes exactly the keys sent as null.
export const mergePatch = (patch: AttributePatch) =>
  sql<Record<string, string>>`jsonb_strip_nulls(attributes || ${JSON.stringify(patch)}::jsonb)`;
