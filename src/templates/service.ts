// Templates (api.md §2, decisions.md "Resources"): the operator creates them and moves their
// status; the public API reads them. A deleted template is kept (messages point at it) but is
// invisible: reads and sends answer 404 (operator.md).
import { sql } from 'kysely';
import { announceChange, notifyChangeOfRow } from '../channel/hot-reads.js';
import type { Db, Executor } from '../db/index.js';
import type { TemplateRow, TemplateVariable } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { newId } from '../lib/ids.js';

export interface TemplateView {
  id: string;
  name: string;
  category: string;
  language: string;
  status: string;
  body: string;
  variables: { name: string; label: string; example: string }[];
  createdAt: string;
  updatedAt: string;
}

export function templateView(t: TemplateRow): TemplateView {
  return {
    id: t.id,
    name: t.name,
    category: t.category,
    language: t.language,
    status: t.status,
    body: t.body,
    // Each name once (a Cloud template may use one named variable in its header and its body).
    variables: t.variables
      .filter((v, i, all) => all.findIndex((w) => w.name === v.name) === i)
      .map((v) => ({ name: v.name, label: v.label, example: v.example })),
    createdAt: t.created_at.toISOString(),
    updatedAt: t.updated_at.toISOString(),
  };
}

export async function listTemplates(
  db: Executor,
  accountId: string,
  q: { status?: string | undefined; category?: string | undefined },
): Promise<TemplateView[]> {
  let query = db.selectFrom('templates').selectAll().where('account_id', '=', accountId).where('deleted_at', 'is', null);
  if (q.status) query = query.where('status', '=', q.status);
  if (q.category) query = query.where('category', '=', q.category);
  const rows = await query.orderBy('id').execute();
  return rows.map(templateView);
}

/** A template of the account that is not deleted, or 404 (another account's id too). */
export async function getTemplate(db: Executor, accountId: string, id: string): Promise<TemplateRow> {
  const t = await db
    .selectFrom('templates')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!t) throw new ApiError('template_not_found');
  return t;
}

export interface NewTemplate {
  name: string;
  category: string;
  language: string;
  body: string;
  variables: { name: string; label?: string | undefined; example?: string | undefined }[];
  status: string;
}

const isUniqueViolation = (err: unknown): boolean => (err as { code?: string } | null)?.code === '23505';

export async function createTemplate(db: Executor, accountId: string, t: NewTemplate, now: Date): Promise<TemplateRow> {
  const variables = t.variables.map((v) => ({ name: v.name, label: v.label ?? v.name, example: v.example ?? '' }));
  try {
    return await db
      .insertInto('templates')
      .values({
        id: newId(),
        account_id: accountId,
        name: t.name,
        category: t.category,
        language: t.language,
        body: t.body,
        variables: JSON.stringify(variables),
        status: t.status,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .returning(notifyChangeOfRow().as('notified'))
      .executeTakeFirstOrThrow();
  } catch (err) {
    // One live template per account, name and language (the channel's own rule).
    if (isUniqueViolation(err)) throw new ApiError('template_name_taken', { params: { name: t.name, language: t.language } });
    throw err;
  }
}

export async function setTemplateStatus(db: Executor, accountId: string, id: string, status: string, now: Date): Promise<TemplateRow> {
  const row = await db
    .updateTable('templates')
    .set({ status, updated_at: now })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    // Every process's sends see the new status at once (channel/hot-reads.ts).
    .returning(notifyChangeOfRow().as('notified'))
    .executeTakeFirst();
  if (!row) throw new ApiError('template_not_found');
  return row;
}

/** Soft delete: the row stays for the messages that used it; reads and sends answer 404. */
export async function deleteTemplate(db: Executor, accountId: string, id: string, now: Date): Promise<void> {
  const res = await db
    .updateTable('templates')
    .set({ deleted_at: now, updated_at: now })
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returning(notifyChangeOfRow().as('notified'))
    .executeTakeFirst();
  if (!res) throw new ApiError('template_not_found');
}

/** A template as the channel provider lists it (mapped to our columns); status DELETED: gone there. */
export interface ChannelTemplate {
  externalId: string | null;
  name: string;
  language: string;
  category: string;
  status: string | null;
  body: string;
  variables: TemplateVariable[];
}

/**
 * Stores the templates imported from the provider: matched by the provider's id, else by name and
 * language; DELETED ones are soft-deleted here too. One import per account at a time (the account
 * row is locked): two would race on the (account, name, language) index.
 */
export async function saveChannelTemplates(
  db: Db,
  accountId: string,
  fetched: ChannelTemplate[],
  now: Date,
): Promise<{ imported: number; updated: number; rows: TemplateRow[] }> {
  let imported = 0;
  let updated = 0;
  const rows = await db.transaction().execute(async (trx) => {
    await sql`SELECT id FROM accounts WHERE id = ${accountId} FOR UPDATE`.execute(trx);
    const out: TemplateRow[] = [];
    for (const m of fetched) {
      const existing = await findChannelTemplate(trx, accountId, m);
      if (m.status === 'DELETED') {
        if (existing) await trx.updateTable('templates').set({ deleted_at: now, updated_at: now }).where('id', '=', existing.id).execute();
        continue;
      }
      if (existing) {
        updated += 1;
        out.push(await updateFromChannel(trx, existing, m, now));
      } else {
        imported += 1;
        out.push(await insertFromChannel(trx, accountId, m, now));
      }
    }
    await announceChange(trx, accountId);
    return out;
  });
  return { imported, updated, rows };
}

async function findChannelTemplate(trx: Executor, accountId: string, m: ChannelTemplate): Promise<TemplateRow | undefined> {
  const live = trx.selectFrom('templates').selectAll().where('account_id', '=', accountId).where('deleted_at', 'is', null);
  return (
    (m.externalId ? await live.where('external_id', '=', m.externalId).executeTakeFirst() : undefined) ??
    (await live.where('name', '=', m.name).where('language', '=', m.language).executeTakeFirst())
  );
}

const updateFromChannel = (trx: Executor, existing: TemplateRow, m: ChannelTemplate, now: Date): Promise<TemplateRow> =>
  trx
    .updateTable('templates')
    .set({
      external_id: m.externalId ?? existing.external_id,
      category: m.category,
      status: m.status ?? existing.status,
      body: m.body,
      variables: JSON.stringify(m.variables),
      updated_at: now,
    })
    .where('id', '=', existing.id)
    .returningAll()
    .executeTakeFirstOrThrow();

const insertFromChannel = (trx: Executor, accountId: string, m: ChannelTemplate, now: Date): Promise<TemplateRow> =>
  trx
    .insertInto('templates')
    .values({
      id: newId(),
      account_id: accountId,
      name: m.name,
      category: m.category,
      language: m.language,
      body: m.body,
      variables: JSON.stringify(m.variables),
      status: m.status ?? 'PENDING',
      external_id: m.externalId,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();

/** A status or category change the provider reported for one of its templates. */
export interface ChannelTemplateChange {
  /** The provider's template id; else the template is found by name and language. */
  templateId: string | null;
  name: string | null;
  language: string | null;
  /** A new status (DELETED soft-deletes it), or null. */
  status: string | null;
  /** A new category (already one we know), or null. */
  category: string | null;
}

/**
 * Applies the change to the live templates of these accounts that match it: by the provider's id,
 * or by name + language when the row has no provider id yet. Returns how many changed.
 */
export async function applyChannelTemplateChange(db: Executor, accountIds: string[], u: ChannelTemplateChange, now: Date): Promise<number> {
  if (accountIds.length === 0 || (u.status === null && u.category === null)) return 0;
  if (!u.templateId && !(u.name && u.language)) return 0;
  const set: Record<string, unknown> = { updated_at: now };
  if (u.status === 'DELETED') set.deleted_at = now;
  else if (u.status) set.status = u.status;
  if (u.category) set.category = u.category;
  if (u.templateId) set.external_id = u.templateId;
  const { name, language, templateId } = u;
  const res = await db
    .updateTable('templates')
    .set(set)
    .where('account_id', 'in', accountIds)
    .where('deleted_at', 'is', null)
    .where((eb) => {
      const byId = templateId ? [eb('external_id', '=', templateId)] : [];
      const byName =
        name && language
          ? [eb.and([eb('name', '=', name), eb('language', '=', language), templateId ? eb('external_id', 'is', null) : eb.lit(true)])]
          : [];
      return eb.or([...byId, ...byName]);
    })
    .returning(notifyChangeOfRow().as('notified'))
    .execute();
  return res.length;
}
