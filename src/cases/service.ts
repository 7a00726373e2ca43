// Case transitions (api.md §3 "Case"): outcome, stage changes, manual close, reason by a person.
// Each change and its case.* event are written in one transaction (outbox).
import { sql } from 'kysely';
import { v5 as uuidv5 } from 'uuid';
import type { Executor, Trx } from '../db/index.js';
import type { By, CaseRow, CaseUpdate } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { isUuid } from '../lib/ids.js';
import type { Services } from '../services.js';
import { type EventKind, emitEvent } from '../webhooks/outbox.js';
import { type CaseJoined, type CaseView, caseEventData, casesQuery, caseView, loadCase } from './view.js';

export type CaseEventKind = Extract<EventKind, `case.${string}`>;

/** Writes one case.* event with the whole case as it is now in `trx`. */
export const emitCaseEvent = (trx: Executor, kind: CaseEventKind, caseId: string, now: Date): Promise<CaseJoined> =>
  emitCaseEvents(trx, [kind], caseId, now);

/** Writes case.* events, in order, of one state of the case (read once). */
export async function emitCaseEvents(trx: Executor, kinds: CaseEventKind[], caseId: string, now: Date): Promise<CaseJoined> {
  const row = await loadCase(trx, caseId);
  if (!row) throw new Error(`case ${caseId} vanished inside its transaction`);
  const data = caseEventData(row);
  for (const kind of kinds) await emitEvent(trx, { accountId: row.account_id, kind, data }, now);
  return row;
}

/** Locks the account's case (404 when it is not the account's, or the id is not a UUID). */
async function lockCase(trx: Trx, accountId: string, id: string) {
  if (!isUuid(id)) throw new ApiError('case_not_found');
  const c = await trx
    .selectFrom('cases')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
  if (!c) throw new ApiError('case_not_found');
  return c;
}

export async function getCaseView(db: Executor, accountId: string, id: string): Promise<CaseView> {
  if (!isUuid(id)) throw new ApiError('case_not_found');
  const row = await loadCase(db, id);
  if (!row || row.account_id !== accountId) throw new ApiError('case_not_found');
  return caseView(row);
}

/** Runs a case change in a transaction, wakes the dispatcher after commit, returns the Case. */
async function change(s: Services, fn: (trx: Trx, now: Date) => Promise<CaseJoined>): Promise<CaseView> {
  const now = s.clock.now();
  const row = await s.db.transaction().execute((trx) => fn(trx, now));
  s.dispatcher.wake();
  return caseView(row);
}

export interface OutcomeInput {
  result: 'won' | 'lost';
  amount?: number | undefined;
  currency?: string | undefined;
  note?: string | undefined;
  externalId?: string | undefined;
}

/**
 * Marks a sale or a loss (api.md §3: status unchanged; `case.outcome`). Allowed on closed cases
 * too: a sale is often confirmed after the conversation went quiet. A later call replaces it.
 */
export function setOutcome(
  s: Services,
  accountId: string,
  caseId: string,
  input: OutcomeInput,
  source: 'api' | 'person',
  by: By | null = null,
): Promise<CaseView> {
  return change(s, async (trx, now) => {
    const c = await lockCase(trx, accountId, caseId);
    await trx
      .updateTable('cases')
      .set({
        outcome: input.result,
        outcome_amount: input.amount ?? null,
        outcome_currency: input.currency ?? null,
        outcome_note: input.note ?? null,
        outcome_external_id: input.externalId ?? null,
        outcome_source: source,
        outcome_by: by ? JSON.stringify(by) : null,
        outcome_at: now,
        updated_at: now,
      })
      .where('id', '=', c.id)
      .execute();
    return emitCaseEvent(trx, 'case.outcome', c.id, now);
  });
}

/**
 * Moves an open case to a stage of its pipeline (or, for a case in no pipeline, of any pipeline
 * of the account): `case.stage_changed`; a `won`/`lost` stage also closes it with closeReason
 * `stage` (`case.closed`), closedBy `by` (a connected AI app; null for an API key). A closed case →
 * 409 case_closed. Moving to the stage it is in changes only the amount (and emits only if the amount changed).
 */
export function changeStage(
  s: Services,
  accountId: string,
  caseId: string,
  input: { stageId: string; amount?: number | undefined },
  by: By | null = null,
): Promise<CaseView> {
  return change(s, async (trx, now) => {
    const c = await lockCase(trx, accountId, caseId);
    if (c.status !== 'open') throw new ApiError('case_closed_stage');
    return moveToStage(trx, accountId, c, input, now, by);
  });
}

/**
 * Moves a locked open case to a stage (the rules of changeStage). Also the automation `stage`
 * step's, which locks the conversation's open case with lockOpenCase before its own rows.
 */
export async function moveToStage(
  trx: Trx,
  accountId: string,
  c: CaseRow,
  input: { stageId: string; amount?: number | undefined },
  now: Date,
  by: By | null = null,
): Promise<CaseJoined> {
  const stage = await trx
    .selectFrom('stages')
    .innerJoin('pipelines', 'pipelines.id', 'stages.pipeline_id')
    .selectAll('stages')
    .where('pipelines.account_id', '=', accountId)
    .where('stages.id', '=', input.stageId)
    .executeTakeFirst();
  if (!stage || (c.pipeline_id && stage.pipeline_id !== c.pipeline_id)) throw new ApiError('stage_not_found');
  if (stage.id === c.stage_id) {
    const same = input.amount === undefined || (c.stage_amount !== null && Number(c.stage_amount) === input.amount);
    if (same) return (await loadCase(trx, c.id))!;
    await trx.updateTable('cases').set({ stage_amount: input.amount, updated_at: now }).where('id', '=', c.id).execute();
    return emitCaseEvent(trx, 'case.stage_changed', c.id, now);
  }
  const closes = stage.kind === 'won' || stage.kind === 'lost';
  const set: CaseUpdate = {
    pipeline_id: stage.pipeline_id,
    stage_id: stage.id,
    stage_entered_at: now,
    stage_amount: input.amount ?? null,
    updated_at: now,
    ...(closes ? { status: 'closed', closed_at: now, close_reason: 'stage', closed_by: by ? JSON.stringify(by) : null } : {}),
  };
  await trx.updateTable('cases').set(set).where('id', '=', c.id).execute();
  return emitCaseEvents(trx, closes ? ['case.stage_changed', 'case.closed'] : ['case.stage_changed'], c.id, now);
}

/** A person closes the case (operator API): closeReason `manual`; already closed → 409. */
export function closeManually(s: Services, accountId: string, caseId: string, by: By | null): Promise<CaseView> {
  return change(s, async (trx, now) => {
    const c = await lockCase(trx, accountId, caseId);
    if (c.status !== 'open') throw new ApiError('case_closed');
    await trx
      .updateTable('cases')
      .set({ status: 'closed', closed_at: now, close_reason: 'manual', closed_by: by ? JSON.stringify(by) : null, updated_at: now })
      .where('id', '=', c.id)
      .execute();
    return emitCaseEvent(trx, 'case.closed', c.id, now);
  });
}

// Reasons named by a person get stable ids per account and name (until reasons are a catalogue).
const REASON_NS = '6f1c3e2a-93b4-4d1e-8a57-2c0f5b7d9e41';
export const reasonId = (accountId: string, reason: string, subreason?: string): string =>
  uuidv5(`${accountId}\u0000${reason.toLowerCase()}${subreason !== undefined ? `\u0000${subreason.toLowerCase()}` : ''}`, REASON_NS);

/**
 * A person sets the reason (operator API): reasonSource `person`, reasonStatus `set`, confidence 1,
 * reasonSetBy/At; `case.classified`. Allowed on closed cases (labelling after the fact).
 */
export function setReasonByPerson(
  s: Services,
  accountId: string,
  caseId: string,
  input: { reason: string; subreason?: string | undefined; by?: By | undefined },
): Promise<CaseView> {
  return change(s, async (trx, now) => {
    const c = await lockCase(trx, accountId, caseId);
    await trx
      .updateTable('cases')
      .set({
        reason: input.reason,
        reason_id: reasonId(accountId, input.reason),
        subreason: input.subreason ?? null,
        subreason_id: input.subreason !== undefined ? reasonId(accountId, input.reason, input.subreason) : null,
        reason_source: 'person',
        reason_status: 'set',
        reason_confidence: 1,
        reason_set_by: input.by ? JSON.stringify(input.by) : null,
        reason_set_at: now,
        updated_at: now,
      })
      .where('id', '=', c.id)
      .execute();
    return emitCaseEvent(trx, 'case.classified', c.id, now);
  });
}

export interface CaseListQuery {
  stage?: string | undefined;
  status: 'open' | 'closed' | 'all';
  limit: number;
  /** Offset pages (the public route). */
  offset?: number | undefined;
  /** Cursor pages (the console's board): the last case id of the previous page. */
  after?: string | undefined;
  /** The board's filters (docs/operator.md): reason name (any case), score bucket, who answered. */
  reason?: string | undefined;
  score?: 'hot' | 'warm' | 'cold' | 'none' | undefined;
  handledBy?: 'none' | 'automation' | 'ai' | 'human' | 'mixed' | undefined;
}

/** A case of the board: the Case plus its contact's phone or username and the conversation's last message time. */
export type BoardCaseRow = CaseJoined & { contact_phone: string | null; contact_username: string | null; last_message_at: Date | null };

/**
 * One page of a pipeline's cases, newest first (openedAt desc, id desc): THE listing of
 * GET /api/v1/pipelines/{id}/cases (offset pages) and of the console's board,
 * GET /admin/v1/accounts/{id}/pipelines/{pipelineId}/cases (cursor pages, filters, card data).
 */
async function pipelineCasesPage(db: Executor, pipelineId: string, q: CaseListQuery, board: boolean) {
  // The page is cut on `cases` alone (the pipeline index walks the offset without touching
  // other tables), then only its rows are joined with contact, pipeline and stage: joining
  // first made PostgreSQL hash-join the whole pipeline before skipping the offset.
  let ids = db.selectFrom('cases').select('cases.id').where('cases.pipeline_id', '=', pipelineId);
  if (q.stage) ids = ids.where('cases.stage_id', '=', q.stage);
  if (q.status !== 'all') ids = ids.where('cases.status', '=', q.status);
  if (q.reason) ids = ids.where(sql<string>`lower(cases.reason)`, '=', q.reason.toLowerCase());
  if (q.score === 'none') ids = ids.where('cases.score', 'is', null);
  else if (q.score === 'hot') ids = ids.where('cases.score', '>=', 70);
  else if (q.score === 'warm') ids = ids.where('cases.score', '>=', 40).where('cases.score', '<', 70);
  else if (q.score === 'cold') ids = ids.where('cases.score', '<', 40);
  if (q.handledBy) ids = ids.where('cases.handled_by', '=', q.handledBy);
  // Keyset: strictly after the cursor case in the listing's order (an unknown id: nothing after it).
  if (q.after) {
    ids = ids.where(sql<boolean>`(cases.opened_at, cases.id) < (SELECT c2.opened_at, c2.id FROM cases c2 WHERE c2.id = ${q.after})`);
  }
  const pageIds = ids
    .orderBy('cases.opened_at', 'desc')
    .orderBy('cases.id', 'desc')
    .limit(q.limit + 1)
    .offset(q.offset ?? 0);
  const rows = await casesQuery(db)
    .$if(board, (qb) =>
      qb.select((eb) => [
        'contacts.phone as contact_phone',
        'contacts.socialchat_username as contact_username',
        eb
          .selectFrom('messages')
          .select((m) => m.fn.max('messages.created_at').as('at'))
          .whereRef('messages.conversation_id', '=', 'cases.conversation_id')
          .as('last_message_at'),
      ]),
    )
    .where('cases.id', 'in', pageIds)
    .orderBy('cases.opened_at', 'desc')
    .orderBy('cases.id', 'desc')
    .execute();
  const hasMore = rows.length > q.limit;
  return { rows: (hasMore ? rows.slice(0, q.limit) : rows) as BoardCaseRow[], hasMore };
}

/** GET /pipelines/{id}/cases: newest first (openedAt desc, id desc), offset pages. */
export async function listPipelineCases(
  db: Executor,
  pipelineId: string,
  q: CaseListQuery,
): Promise<{ data: CaseView[]; hasMore: boolean; nextOffset: number }> {
  const { rows, hasMore } = await pipelineCasesPage(db, pipelineId, q, false);
  const data = rows.map(caseView);
  return { data, hasMore, nextOffset: (q.offset ?? 0) + data.length };
}

/** The console's board (GET /admin/v1/accounts/{id}/pipelines/{pipelineId}/cases): cursor pages of cards. */
export async function listBoardCases(db: Executor, pipelineId: string, q: CaseListQuery) {
  const { rows, hasMore } = await pipelineCasesPage(db, pipelineId, q, true);
  const data = rows.map((r) => ({
    ...caseView(r),
    contact: { id: r.contact_id, name: r.contact_name ?? '', phone: r.contact_phone, username: r.contact_username },
    lastMessageAt: r.last_message_at ? new Date(r.last_message_at).toISOString() : null,
  }));
  return { data, hasMore, nextCursor: hasMore ? (data.at(-1)?.id ?? null) : null };
}

/** What the classifier decided for a case (src/classification/worker.ts). */
export interface ClassifierResult {
  /** The classification of the case's nth inbound message (1–3). */
  nth: number;
  reason: { id: string; name: string } | null;
  subreason: { id: string; name: string } | null;
  confidence: number;
  /** The reason's scoring answers; score null when the reason has no (weighted) questions. */
  score: number | null;
  detail: { question: string; weight: number; probability: number }[];
}

/**
 * A pending case whose classified messages found no reason: reasonStatus `none` (no event). A
 * statement the classification queue also composes into its own (an account without a catalogue).
 */
export const noReasonSql = (caseIds: string | readonly string[], now: Date) =>
  sql`UPDATE cases SET reason_status = 'none', updated_at = ${now}
    WHERE id = ANY (${typeof caseIds === 'string' ? [caseIds] : [...caseIds]}::uuid[]) AND reason_status = 'pending'`;

/**
 * The classifier's write (spec agents.md "Classification and score of cases"), in `trx` with
 * the case locked: a person's reason (reasonSource `person`) is never touched. A pending case
 * with a confidence ≥ 0.5 gets the reason (reasonSource `classifier`, status `set`) and its
 * score; a pending case after its third message without one gets reasonStatus `none`. A case
 * whose reason the classifier set keeps being scored after each of its first three messages
 * (same reason only). `case.classified` when the reason is set or the score changes; returns
 * whether it was emitted.
 */
export async function applyClassification(trx: Trx, caseId: string, r: ClassifierResult, now: Date): Promise<boolean> {
  const c = await trx.selectFrom('cases').selectAll().where('id', '=', caseId).forUpdate().executeTakeFirst();
  if (!c || c.reason_source === 'person') return false;
  const scoring = {
    score: r.score,
    score_detail: r.detail.length > 0 ? JSON.stringify(r.detail) : null,
  };
  if (c.reason_status === 'pending') {
    if (r.reason && r.confidence >= 0.5) {
      await trx
        .updateTable('cases')
        .set({
          reason_id: r.reason.id,
          reason: r.reason.name,
          subreason_id: r.subreason?.id ?? null,
          subreason: r.subreason?.name ?? null,
          reason_source: 'classifier',
          reason_status: 'set',
          reason_confidence: r.confidence,
          reason_set_by: null,
          reason_set_at: now,
          ...scoring,
          updated_at: now,
        })
        .where('id', '=', c.id)
        .execute();
      await emitCaseEvent(trx, 'case.classified', c.id, now);
      return true;
    }
    if (r.nth >= 3) await noReasonSql(c.id, now).execute(trx);
    return false;
  }
  if (c.reason_status !== 'set' || c.reason_source !== 'classifier' || !r.reason || r.reason.id !== c.reason_id) return false;
  if (JSON.stringify(c.score_detail ?? null) === JSON.stringify(r.detail.length > 0 ? r.detail : null) && c.score === r.score) return false;
  await trx
    .updateTable('cases')
    .set({ ...scoring, updated_at: now })
    .where('id', '=', c.id)
    .execute();
  if (c.score === r.score) return false;
  await emitCaseEvent(trx, 'case.classified', c.id, now);
  return true;
}

/** An AI agent's part in a case (agents.md "Effects"): who works it, shown as agentId / agentName. */
interface AgentOfCase {
  id: string;
  name: string;
}

/**
 * The agent handed the open case (locked by the caller) to the team: handedOffAt and the agent.
 * No case event: api.md §6 lists none for it (agent.handed_off tells).
 */
export async function markHandedOff(trx: Trx, open: CaseRow, agent: AgentOfCase, now: Date): Promise<void> {
  await trx
    .updateTable('cases')
    .set({ handed_off_at: now, agent_id: agent.id, agent_name: agent.name, updated_at: now })
    .where('id', '=', open.id)
    .execute();
}

/** The agent reached its goal: the open case (locked by the caller) gets goalAt and closes with `agent_goal` (case.closed). */
export async function markAgentGoal(trx: Trx, open: CaseRow, agent: AgentOfCase, now: Date): Promise<void> {
  await trx
    .updateTable('cases')
    .set({
      goal_at: now,
      agent_id: agent.id,
      agent_name: agent.name,
      status: 'closed',
      closed_at: now,
      close_reason: 'agent_goal',
      closed_by: null,
      updated_at: now,
    })
    .where('id', '=', open.id)
    .execute();
  await emitCaseEvent(trx, 'case.closed', open.id, now);
}
