// Where a send leaves from and what it says (api.md §4): the number (the given one or the
// account's default), the template (APPROVED), and the template's variables with their fallbacks.
// Used by sendMessage (send.ts), campaigns and automations.
import { sql } from 'kysely';
import type { HotReads } from '../channel/hot-reads.js';
import type { Db } from '../db/index.js';
import { type JsonRow, withDates } from '../db/json-row.js';
import type { PhoneNumberRow, TemplateRow, TemplateVariable } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { isUuid } from '../lib/ids.js';

/**
 * The number a send leaves from: the given one (unknown or another account's → 409, not
 * connected → 409), else the account's default number, or its oldest connected one when the
 * default is disconnected (decisions.md "Endpoints": none connected → 409).
 */
export async function numberForSend(db: Db, accountId: string, phoneNumberId?: string): Promise<PhoneNumberRow> {
  return (await senderFor(db, accountId, phoneNumberId)).number;
}

/** A template that can be sent: it exists, is not deleted (404) and is APPROVED (409). */
export async function templateForSend(db: Db, accountId: string, id: string): Promise<TemplateRow> {
  const t = isUuid(id)
    ? await db.selectFrom('templates').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
    : undefined;
  return checkTemplate(t);
}

function checkTemplate(t: TemplateRow | undefined): TemplateRow {
  if (!t || t.deleted_at) throw new ApiError('template_not_found');
  if (t.status !== 'APPROVED') throw new ApiError('template_not_approved', { params: { name: t.name, status: t.status } });
  return t;
}

/** The number and template a send names, as stored (not yet checked). */
interface Sender {
  number: PhoneNumberRow | undefined;
  template: TemplateRow | undefined;
}

/**
 * numberForSend and, when `templateId` is given, templateForSend in one statement (one round
 * trip): the number's refusals first, then the template's. With `hot` (channel/hot-reads.ts) a
 * usable pair comes from this process's copy, kept until a writer announces a change; a refusal
 * is always read anew.
 */
export async function senderFor(
  db: Db,
  accountId: string,
  phoneNumberId: string | undefined,
  templateId?: string,
  hot?: HotReads,
): Promise<{ number: PhoneNumberRow; template: TemplateRow | null }> {
  // api.md §7: "no connected number with the given phoneNumberId" → 409, whatever its form.
  if (phoneNumberId !== undefined && !isUuid(phoneNumberId)) throw new ApiError('phone_number_unknown');
  const load = () => readSender(db, accountId, phoneNumberId, templateId);
  const found = hot
    ? await hot.read(accountId, `send ${phoneNumberId ?? 'default'} ${templateId ?? '-'}`, load, (f) => usable(f, templateId))
    : await load();
  const n = found.number;
  if (!n) throw new ApiError(phoneNumberId !== undefined ? 'phone_number_unknown' : 'no_connected_number');
  if (n.status !== 'connected') throw new ApiError('phone_number_disconnected');
  if (templateId === undefined) return { number: n, template: null };
  return { number: n, template: checkTemplate(found.template) };
}

/** A pair a send may use as it is: kept by the hot reads (a refusal never is). */
const usable = (f: Sender, templateId: string | undefined): boolean =>
  f.number?.status === 'connected' &&
  (templateId === undefined || (f.template !== undefined && !f.template.deleted_at && f.template.status === 'APPROVED'));

async function readSender(db: Db, accountId: string, phoneNumberId: string | undefined, templateId: string | undefined): Promise<Sender> {
  const number =
    phoneNumberId !== undefined
      ? sql`SELECT to_jsonb(n) FROM phone_numbers n WHERE account_id = ${accountId} AND id = ${phoneNumberId}`
      : sql`SELECT to_jsonb(n) FROM phone_numbers n WHERE account_id = ${accountId} AND status = 'connected'
            ORDER BY is_default DESC, created_at, id LIMIT 1`;
  const template =
    templateId === undefined
      ? sql`NULL::jsonb`
      : isUuid(templateId)
        ? sql`(SELECT to_jsonb(t) FROM templates t WHERE account_id = ${accountId} AND id = ${templateId})`
        : sql`NULL::jsonb`;
  const { rows } = await sql<{ number: JsonRow | null; template: JsonRow | null }>`
    SELECT (${number}) AS number, ${template} AS template`.execute(db);
  const r = rows[0];
  return {
    number: r?.number ? withDates<PhoneNumberRow>(r.number, ['created_at']) : undefined,
    template: r?.template ? withDates<TemplateRow>(r.template, ['created_at', 'updated_at', 'deleted_at']) : undefined,
  };
}

export const has = (o: Record<string, string>, k: string): boolean => Object.hasOwn(o, k) && typeof o[k] === 'string' && o[k].trim() !== '';

/**
 * Each of the template's variables in its order: the value sent, else the contact's attribute of
 * that name, else the template's example (api.md §4). A blank value counts as missing (the
 * channel refuses empty parameters); keys the template does not have are ignored.
 */
export function resolveVariables(
  variables: TemplateVariable[],
  given: Record<string, string>,
  attributes: Record<string, string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of variables) {
    out[v.name] = has(given, v.name) ? given[v.name]! : has(attributes, v.name) ? attributes[v.name]! : (v.example ?? '');
  }
  return out;
}
