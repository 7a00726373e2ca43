// Templates (api.md §2, decisions.md "Resources"): the operator creates them and moves their
// status; the public API reads them. A deleted template is kept (messages point at it) but is
// invisible: reads and sends answer 404 (operator-api.md).
import type { Executor } from '../db/index.js';
import type { TemplateRow } from '../db/types.js';
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
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) throw new ApiError('template_not_found');
}
