// The reasons catalogue (docs/agents.md "Classification and score of cases"; spec agents.md "Classification and score of
// cases"): the account's reasons why customers write, their sub-reasons and scoring questions.
// The operator's CRUD; the demo seed inserts through insertReason inside its own transaction.
import { sql } from 'kysely';
import { z } from 'zod';
import type { Executor, Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { ReasonKeywords, ReasonRow } from '../db/types.js';
import { ApiError, ValidationError, type ValidationProblem } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import { Timestamp, Uuid } from '../http/schemas.js';
import { isUuid, newId } from '../lib/ids.js';
import type { Services } from '../services.js';

const Keywords = z
  .array(z.string().trim().min(1).max(100))
  .max(50)
  .describe('Matched normalised, as whole words (docs/agents.md "Classification and score of cases")');
const SubreasonInput = z.strictObject({
  id: Uuid.optional().describe('Kept on update (an id of this reason); generated when absent'),
  name: z.string().trim().min(1).max(120),
  keywords: Keywords,
});
const Question = z.strictObject({
  question: z.string().trim().min(1).max(300),
  weight: z.number().int().min(0).max(100),
  keywords: Keywords,
});
const Scoring = z
  .strictObject({ questions: z.array(Question).max(20) })
  .nullable()
  .describe('Scoring questions; null: the reason is not scored');

export const ReasonCreate = z.strictObject({
  name: z.string().trim().min(1).max(120).describe('Unique in the account'),
  keywords: Keywords,
  subreasons: z.array(SubreasonInput).max(30).default([]).describe('Default none'),
  scoring: Scoring.default(null),
});
export const ReasonPatch = z.strictObject({
  name: ReasonCreate.shape.name.optional(),
  keywords: Keywords.optional(),
  subreasons: z.array(SubreasonInput).max(30).optional().describe('Replaces the list; an entry with the id of a sub-reason keeps it'),
  scoring: Scoring.optional(),
});
export type ReasonInput = z.output<typeof ReasonCreate>;
export type ReasonPatchInput = z.infer<typeof ReasonPatch>;

export const ReasonView = z.object({
  id: Uuid,
  name: z.string(),
  keywords: z.array(z.string()),
  subreasons: z.array(z.object({ id: Uuid, name: z.string(), keywords: z.array(z.string()) })),
  scoring: z
    .object({ questions: z.array(z.object({ question: z.string(), weight: z.number().int(), keywords: z.array(z.string()) })) })
    .nullable(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type ReasonView = z.infer<typeof ReasonView>;

export const reasonView = (r: ReasonRow): ReasonView => ({
  id: r.id,
  name: r.name,
  keywords: r.keywords,
  subreasons: r.subreasons,
  scoring: r.scoring,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

/** The account's catalogue, oldest first (the order ties are broken in). */
export const listReasonRows = (db: Executor, accountId: string): Promise<ReasonRow[]> =>
  db
    .selectFrom('reasons')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();

export const listReasons = async (db: Executor, accountId: string): Promise<ReasonView[]> =>
  (await listReasonRows(db, accountId)).map(reasonView);

async function reasonRow(db: Executor, accountId: string, id: string, lock = false): Promise<ReasonRow> {
  let q = db.selectFrom('reasons').selectAll().where('account_id', '=', accountId).where('id', '=', id).where('deleted_at', 'is', null);
  if (lock) q = q.forUpdate();
  const r = isUuid(id) ? await q.executeTakeFirst() : undefined;
  if (!r) throw new ApiError('reason_not_found');
  return r;
}

export const getReason = async (db: Executor, accountId: string, id: string): Promise<ReasonView> =>
  reasonView(await reasonRow(db, accountId, id));

/** Sub-reason ids: kept when they name one of `current`, generated when absent; 400 otherwise. */
function subreasonsOf(input: ReasonInput['subreasons'], current: ReasonKeywords[]): ReasonKeywords[] {
  const known = new Set(current.map((s) => s.id));
  const seen = new Set<string>();
  const problems: ValidationProblem[] = [];
  const out = input.map((s, i) => {
    if (s.id !== undefined && (!known.has(s.id) || seen.has(s.id))) {
      problems.push({ path: ['subreasons', i, 'id'], message: textFor('reason_subreason_unknown') });
    }
    if (s.id !== undefined) seen.add(s.id);
    return { id: s.id ?? newId(), name: s.name, keywords: s.keywords };
  });
  if (problems.length > 0) throw new ValidationError(problems);
  return out;
}

/** Names are unique per account (case-insensitive): 409 reason_name_taken. The account row is locked first. */
async function assertNameFree(trx: Executor, accountId: string, name: string, except?: string): Promise<void> {
  let q = trx
    .selectFrom('reasons')
    .select('id')
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .where(sql<string>`lower(name)`, '=', name.toLowerCase());
  if (except) q = q.where('id', '<>', except);
  if (await q.executeTakeFirst()) throw new ApiError('reason_name_taken', { params: { name } });
}

const lockAccount = (trx: Trx, accountId: string) =>
  trx.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate().executeTakeFirst();

/** Stores a new reason in `trx` (operator API and demo seed); the caller locked the account. */
export async function insertReason(trx: Trx, accountId: string, input: ReasonInput, now: Date): Promise<ReasonRow> {
  await assertNameFree(trx, accountId, input.name);
  return trx
    .insertInto('reasons')
    .values({
      id: newId(),
      account_id: accountId,
      name: input.name,
      keywords: JSON.stringify(input.keywords),
      subreasons: JSON.stringify(subreasonsOf(input.subreasons, [])),
      scoring: input.scoring ? JSON.stringify(input.scoring) : null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export const createReason = (s: Services, accountId: string, input: ReasonInput): Promise<ReasonView> =>
  transaction(s.db, async (trx) => {
    if (!(await lockAccount(trx, accountId))) throw new ApiError('account_not_found');
    return reasonView(await insertReason(trx, accountId, input, s.clock.now()));
  });

export const updateReason = (s: Services, accountId: string, id: string, patch: ReasonPatchInput): Promise<ReasonView> =>
  transaction(s.db, async (trx) => {
    if (!(await lockAccount(trx, accountId))) throw new ApiError('account_not_found');
    const cur = await reasonRow(trx, accountId, id, true);
    if (patch.name !== undefined) await assertNameFree(trx, accountId, patch.name, cur.id);
    const row = await trx
      .updateTable('reasons')
      .set({
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(patch.keywords !== undefined ? { keywords: JSON.stringify(patch.keywords) } : {}),
        ...(patch.subreasons !== undefined ? { subreasons: JSON.stringify(subreasonsOf(patch.subreasons, cur.subreasons)) } : {}),
        ...(patch.scoring !== undefined ? { scoring: patch.scoring ? JSON.stringify(patch.scoring) : null } : {}),
        updated_at: s.clock.now(),
      })
      .where('id', '=', cur.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return reasonView(row);
  });

/** Deletes a reason (kept for the cases that carry it; gone from the catalogue). */
export const deleteReason = (s: Services, accountId: string, id: string): Promise<void> =>
  transaction(s.db, async (trx) => {
    const cur = await reasonRow(trx, accountId, id, true);
    const now = s.clock.now();
    await trx.updateTable('reasons').set({ deleted_at: now, updated_at: now }).where('id', '=', cur.id).execute();
  });

/**
 * Whether the account has a reasons catalogue (a live reason), as an SQL expression: the
 * classification queue's statement decides with it, and the inbound path's case statements return
 * it so a round of an account without one needs no classification statement for a case's first
 * two messages (classification/queue.ts queueClassifications).
 */
export const hasCatalogueSql = (accountId: string) =>
  sql<boolean>`EXISTS (SELECT 1 FROM reasons WHERE account_id = ${accountId} AND deleted_at IS NULL)`;
