// Pipelines and their stages (decisions.md "Resources": Pipeline). The first pipeline of an account
// is its default: new cases open in its first `open` stage.
import { sql } from 'kysely';
import { z } from 'zod';
import type { Db, Executor, Trx } from '../db/index.js';
import type { PipelineRow, StageRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import { Timestamp, Uuid } from '../http/schemas.js';
import { isUuid, newId } from '../lib/ids.js';

export const STAGE_KINDS = ['open', 'won', 'lost'] as const;

export const StageView = z.object({
  id: Uuid,
  name: z.string(),
  kind: z.enum(STAGE_KINDS),
  position: z.number().int().describe('Order of the stage in the pipeline, from 0'),
});

export const PipelineView = z.object({
  id: Uuid,
  name: z.string(),
  stages: z.array(StageView),
  inactivityHours: z.number().int().describe('Hours without customer messages after which a case closes'),
  staleDays: z.number().int().describe('Days without customer reply after which an open-stage case moves to the lost stage'),
  default: z.boolean().describe('New cases open in the default pipeline'),
  createdAt: Timestamp,
});
export type PipelineView = z.infer<typeof PipelineView>;

export function pipelineView(p: PipelineRow, stages: StageRow[]): PipelineView {
  return {
    id: p.id,
    name: p.name,
    stages: stages
      .filter((st) => st.pipeline_id === p.id)
      .sort((a, b) => a.position - b.position)
      .map((st) => ({ id: st.id, name: st.name, kind: st.kind, position: st.position })),
    inactivityHours: p.inactivity_hours,
    staleDays: p.stale_days,
    default: p.is_default,
    createdAt: p.created_at.toISOString(),
  };
}

export const PipelineInput = z
  .strictObject({
    name: z.string().trim().min(1).max(200),
    stages: z
      .array(z.strictObject({ name: z.string().trim().min(1).max(200), kind: z.enum(STAGE_KINDS) }))
      .min(1)
      .max(50),
    inactivityHours: z.number().int().min(1).max(8760).optional().describe('Default 24'),
    staleDays: z.number().int().min(1).max(3650).optional().describe('Default 30'),
    default: z.boolean().optional().describe('Make it the account’s default pipeline (the first one always is)'),
  })
  .superRefine((p, ctx) => {
    // New cases enter the first `open` stage: a pipeline without one could hold no new case.
    if (!p.stages.some((st) => st.kind === 'open')) {
      ctx.addIssue({ code: 'custom', path: ['stages'], message: textFor('pipeline_needs_open_stage') });
    }
  });
export type PipelineInput = z.infer<typeof PipelineInput>;

/** POST /admin/v1/accounts/{id}/pipelines: the pipeline and its stages in one transaction. */
export const addPipeline = (db: Db, accountId: string, input: PipelineInput, now: Date): Promise<PipelineView> =>
  db.transaction().execute((trx) => createPipeline(trx, accountId, input, now));

export async function createPipeline(trx: Trx, accountId: string, input: PipelineInput, now: Date): Promise<PipelineView> {
  // One writer per account at a time decides which pipeline is the default.
  await sql`SELECT id FROM accounts WHERE id = ${accountId} FOR UPDATE`.execute(trx);
  const hasDefault = await trx
    .selectFrom('pipelines')
    .select('id')
    .where('account_id', '=', accountId)
    .where('is_default', '=', true)
    .executeTakeFirst();
  const makeDefault = !hasDefault || input.default === true;
  if (makeDefault && hasDefault) {
    await trx.updateTable('pipelines').set({ is_default: false }).where('account_id', '=', accountId).execute();
  }
  const p = await trx
    .insertInto('pipelines')
    .values({
      id: newId(),
      account_id: accountId,
      name: input.name,
      inactivity_hours: input.inactivityHours ?? 24,
      stale_days: input.staleDays ?? 30,
      is_default: makeDefault,
      created_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  const stages = await trx
    .insertInto('stages')
    .values(input.stages.map((st, position) => ({ id: newId(), pipeline_id: p.id, name: st.name, kind: st.kind, position })))
    .returningAll()
    .execute();
  return pipelineView(p, stages);
}

/** A pipeline of the account (404 otherwise, also for ids that are not UUIDs). */
export async function getPipeline(db: Executor, accountId: string, id: string): Promise<PipelineRow> {
  if (!isUuid(id)) throw new ApiError('pipeline_not_found');
  const p = await db.selectFrom('pipelines').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
  if (!p) throw new ApiError('pipeline_not_found');
  return p;
}

export async function stagesOf(db: Executor, pipelineIds: string[]): Promise<StageRow[]> {
  if (pipelineIds.length === 0) return [];
  return db.selectFrom('stages').selectAll().where('pipeline_id', 'in', pipelineIds).orderBy('position').execute();
}

/** Cursor page of the account's pipelines, in creation order (UUIDv7 ids). */
export async function listPipelines(
  db: Executor,
  accountId: string,
  q: { limit: number; after?: string | undefined },
): Promise<{ data: PipelineView[]; hasMore: boolean; nextCursor: string | null }> {
  let query = db.selectFrom('pipelines').selectAll().where('account_id', '=', accountId);
  if (q.after) query = query.where('id', '>', q.after);
  const rows = await query
    .orderBy('id')
    .limit(q.limit + 1)
    .execute();
  const hasMore = rows.length > q.limit;
  const page = hasMore ? rows.slice(0, q.limit) : rows;
  const stages = await stagesOf(
    db,
    page.map((p) => p.id),
  );
  return {
    data: page.map((p) => pipelineView(p, stages)),
    hasMore,
    nextCursor: hasMore ? (page[page.length - 1]?.id ?? null) : null,
  };
}
