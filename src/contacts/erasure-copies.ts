// The copies of a person's data outside their own rows (erasure.ts): outbox events and the
// webhook delivery log, stored idempotent responses, Meta batches still queued, contact imports'
// previews and failing rows. Found by their ids (contact, conversations, messages) or their phone
// in every spelling a payload uses; scrubbed in the erasure's transaction.
import { type RawBuilder, sql } from 'kysely';
import type { Trx } from '../db/index.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export interface Person {
  accountId: string;
  contactId: string;
  conversationIds: string[];
  /** Their messages: a message's events (message.status…) name it by id and by its Meta id, not by them. */
  messageIds: string[];
  /** Canonical digits, null for a social-only contact. */
  phone: string | null;
  socialchatId: string | null;
  /** When the contact was made: no event about them is older (a day's margin covers clocks read apart in one request). */
  since: Date;
}

/**
 * How a payload may write the phone: the canonical digits (inside "+…" too), and Meta's wa_id,
 * which drops Argentina's mobile 9 ("54 9 11…" → "54 11…") and keeps Mexico's old 1 ("52 1…").
 */
export function phoneSpellings(phone: string): string[] {
  const out = [phone];
  if (phone.startsWith('549')) out.push(`54${phone.slice(3)}`);
  if (phone.startsWith('52') && !phone.startsWith('521')) out.push(`521${phone.slice(2)}`);
  return out;
}

/** The strings that identify the person in a JSON payload. */
function markers(p: Person): string[] {
  return [p.contactId, ...p.conversationIds, ...(p.phone ? phoneSpellings(p.phone) : []), ...(p.socialchatId ? [p.socialchatId] : [])];
}

/** `text` contains one of the markers (plain substring, no pattern characters). */
const mentions = (column: RawBuilder<unknown>, needles: string[]) =>
  sql<boolean>`EXISTS (SELECT 1 FROM unnest(${needles}::text[]) n WHERE strpos(${column}, n) > 0)`;

export async function scrubCopies(trx: Trx, p: Person): Promise<void> {
  const needles = markers(p);
  // Outbox events that carry them: the payload replaced; deliveries not yet made are never made;
  // what receivers answered (it may echo the payload) is dropped from the delivery log.
  const eventIds = (
    await sql<{ id: string }>`
      UPDATE events SET data = '{"erased": true}'::jsonb
      WHERE account_id = ${p.accountId} AND created_at >= ${new Date(p.since.getTime() - DAY_MS)}
        AND (${mentions(sql`data::text`, needles)} OR (kind LIKE 'message.%' AND data->>'id' = ANY(${p.messageIds}::text[])))
      RETURNING id`.execute(trx)
  ).rows.map((e) => e.id);
  if (eventIds.length > 0) {
    await sql`
      UPDATE webhook_deliveries SET status = 'skipped', skip_reason = 'erased', next_attempt_at = NULL, lease_until = NULL
      WHERE event_id = ANY(${eventIds}::uuid[]) AND status = 'pending'`.execute(trx);
    await sql`
      UPDATE webhook_deliveries SET last_error = NULL WHERE event_id = ANY(${eventIds}::uuid[])`.execute(trx);
    await sql`
      UPDATE webhook_attempts SET response_excerpt = NULL, error = NULL
      WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE event_id = ANY(${eventIds}::uuid[]))`.execute(trx);
  }
  // Stored responses of idempotent requests (a send's, a contact's): a repeat runs anew.
  await sql`
    DELETE FROM idempotency_keys
    WHERE account_id = ${p.accountId} AND response_body IS NOT NULL AND ${mentions(sql`response_body::text`, needles)}`.execute(trx);
  // Queued batches name them by their number (WhatsApp) or their Instagram-scoped id.
  const ids = [...(p.phone ? phoneSpellings(p.phone) : []), ...(p.socialchatId ? [p.socialchatId] : [])];
  if (ids.length > 0) await scrubInboundQueue(trx, ids);
  if (p.phone) await scrubImports(trx, p.accountId, p.phone);
}

/**
 * Drops from `v` (parsed JSON) the innermost array elements that mention one of `needles`: arrays
 * are cleaned inside first, so a batch's entry stays and only their message, status or profile goes.
 */
function without(v: unknown, needles: string[]): unknown {
  if (Array.isArray(v)) return v.map((x) => without(x, needles)).filter((x) => !needles.some((n) => JSON.stringify(x).includes(n)));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, without(x, needles)]));
  return v;
}

/**
 * Meta and Instagram batches still queued (or parked) that mention them: their messages, statuses
 * and contact entries are taken out of the batch (the rest of it, other customers', is processed as before),
 * and their ordering keys go (nothing of theirs is left to order).
 */
async function scrubInboundQueue(trx: Trx, names: string[]): Promise<void> {
  // Meta's ids are long digit strings: a short social id could match anything; such a one is skipped.
  const spellings = names.filter((x) => x.length >= 8);
  if (spellings.length === 0) return;
  const rows = await sql<{ id: string; body: string }>`
    SELECT id::text, body FROM inbound_queue WHERE ${mentions(sql`body`, spellings)} FOR UPDATE`.execute(trx);
  for (const row of rows.rows) {
    let body: string;
    try {
      body = JSON.stringify(without(JSON.parse(row.body), spellings));
    } catch {
      body = '{}'; // not JSON: nothing to keep that could be processed
    }
    await sql`
      UPDATE inbound_queue SET body = ${body},
        keys = ARRAY(SELECT k FROM unnest(keys) k WHERE NOT ${mentions(sql`k`, spellings)})
      WHERE id = ${row.id}::bigint`.execute(trx);
    await sql`DELETE FROM inbound_queue_keys WHERE queue_id = ${row.id}::bigint AND ${mentions(sql`key`, spellings)}`.execute(trx);
  }
}

/**
 * Contact imports of the account: their row leaves the preview and the failing rows. An import
 * not yet ended still holds its uploaded file until it ends (docs/privacy.md says so).
 */
async function scrubImports(trx: Trx, accountId: string, phone: string): Promise<void> {
  await sql`
    UPDATE contact_imports SET preview = COALESCE((
      SELECT jsonb_agg(r ORDER BY (r->>'row')::int) FROM jsonb_array_elements(preview) r
      WHERE regexp_replace(r->>'phone', '\D', '', 'g') <> ${phone}), '[]'::jsonb)
    WHERE account_id = ${accountId} AND strpos(preview::text, ${phone}) > 0`.execute(trx);
  await sql`
    DELETE FROM contact_import_failures f USING contact_imports i
    WHERE f.import_id = i.id AND i.account_id = ${accountId}
      AND EXISTS (SELECT 1 FROM jsonb_array_elements(f.problems) x WHERE regexp_replace(x->>'value', '\D', '', 'g') = ${phone})`.execute(
    trx,
  );
}
