// Reviews of advanced agents (docs/agents.md "Review"; spec agents.md "Review (advanced agents)").
// The transaction that ends a stretch of an agent with `review` queues one row (not for test
// stretches); the `agent-reviews` job (every second, and woken in-process after that commit)
// claims due rows with FOR UPDATE SKIP LOCKED under a claim token and a lease, makes ONE model
// call with a JSON-schema answer outside any transaction, and writes the outcome in one
// transaction with `agent.conversation_reviewed` — only while its claim still holds, so a row
// whose lease lapsed and was claimed again is written (and emitted) once. A model failure (after
// the client's own retries) leaves the review `failed` with a Spanish reason and emits nothing.
// The operator's rerun claims the row itself and runs the same code inside the request.
import { sql } from 'kysely';
import type { Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { AgentRow, ReviewRow, StretchRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { reviewErrors } from '../http/messages.es-AR.js';
import { page } from '../http/schemas.js';
import { wakeable } from '../jobs/wakeable.js';
import { newId } from '../lib/ids.js';
import { ModelError } from '../llm/types.js';
import type { Services } from '../services.js';
import { emitEvent } from '../webhooks/outbox.js';
import { normalizeReview, ReviewAnswer, type ReviewOutcome, reviewMessages } from './review-prompt.js';
import { getAgentRow } from './service.js';
import { stretchMessages } from './stretch-messages.js';

/** A claimed review is given back (due again) when its claim is this old: the model call's three tries fit in it. */
export const REVIEW_LEASE_MS = 180_000;
/** Rows claimed per statement (reviewed concurrently). */
const BATCH = 8;

/**
 * Inside the transaction that ends a stretch (its row already `ended`, with ended_by and
 * ended_at): queues its review when the agent has `review` and the stretch is not a test one.
 * Returns whether it queued (then call wakeReviews after the commit).
 */
export async function queueReview(trx: Trx, stretch: StretchRow, agent: Pick<AgentRow, 'review'>, now: Date): Promise<boolean> {
  if (agent.review === null || stretch.test) return false;
  if (stretch.ended_by === null) throw new Error('queueReview: the stretch has not ended');
  // Once per stretch: a second call for the same stretch queues nothing.
  const { rows } = await sql<{ id: string }>`
    INSERT INTO agent_reviews
      (id, account_id, agent_id, agent_version, stretch_id, conversation_id, contact_id, ended_by, run_at, created_at, updated_at)
    SELECT ${newId()}::uuid, ${stretch.account_id}::uuid, ${stretch.agent_id}::uuid, ${stretch.agent_version}::integer,
      ${stretch.id}::uuid, ${stretch.conversation_id}::uuid, ${stretch.contact_id}::uuid, ${stretch.ended_by}::text,
      ${now}::timestamptz, ${now}::timestamptz, ${now}::timestamptz
    WHERE NOT EXISTS (SELECT 1 FROM agent_reviews WHERE stretch_id = ${stretch.id}::uuid)
    RETURNING id`.execute(trx);
  return rows.length > 0;
}

/** Claims up to `limit` due rows under one claim token; run_at becomes the lease's end. */
async function claim(s: Services, limit: number): Promise<{ id: string; claim: string }[]> {
  const now = s.clock.now();
  const lease = new Date(now.getTime() + REVIEW_LEASE_MS);
  const token = newId();
  const r = await sql<{ id: string; claim: string }>`
    UPDATE agent_reviews SET run_at = ${lease}, claim = ${token}, updated_at = ${now}
    WHERE id IN (
      SELECT id FROM agent_reviews WHERE run_at <= ${now}
      ORDER BY run_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING id, claim`.execute(s.db);
  return r.rows;
}

/** The newest messages of a stretch the review shows (a longer stretch is reviewed on its latest ones). */
const MAX_MESSAGES = 200;

type Outcome = ({ status: 'done' } & ReviewOutcome) | { status: 'failed'; error: string };

/**
 * Writes a run's outcome while `token` still holds the claim: the fields describe this run (a
 * failure clears the previous results), runs + 1, nothing due. `done` emits
 * `agent.conversation_reviewed` in the same transaction. Null when the claim was lost.
 */
async function finish(s: Services, row: ReviewRow, token: string, o: Outcome): Promise<ReviewRow | null> {
  const now = s.clock.now();
  const done = await transaction(s.db, async (trx) => {
    const saved = await trx
      .updateTable('agent_reviews')
      .set({
        status: o.status,
        summary: o.status === 'done' ? o.summary : null,
        criteria: o.status === 'done' ? JSON.stringify(o.criteria) : null,
        extracted: o.status === 'done' ? JSON.stringify(o.extracted) : null,
        error: o.status === 'failed' ? o.error : null,
        reviewed_at: o.status === 'done' ? now : null,
        runs: sql<number>`runs + 1`,
        run_at: null,
        claim: null,
        updated_at: now,
      })
      .where('id', '=', row.id)
      .where('claim', '=', token)
      .returningAll()
      .executeTakeFirst();
    if (!saved || o.status !== 'done') return saved ?? null;
    await emitEvent(
      trx,
      {
        accountId: saved.account_id,
        kind: 'agent.conversation_reviewed',
        data: {
          agentId: saved.agent_id,
          agentVersion: String(saved.agent_version),
          conversationId: saved.conversation_id,
          contactId: saved.contact_id,
          endedBy: saved.ended_by,
          summary: o.summary,
          criteria: o.criteria,
          extracted: o.extracted,
        },
      },
      now,
    );
    return saved;
  });
  if (done?.status === 'done') s.dispatcher.wake();
  return done;
}

interface RunResult {
  /** The review as this run left it; null when the claim was lost (another run owns it) or the row is gone. */
  row: ReviewRow | null;
  /** The model failed after its retries (the review is `failed`). */
  modelFailed: boolean;
}

/** Runs one claimed review: the agent (even deleted since), the stretch's messages, one model call. */
async function runClaimed(s: Services, id: string, token: string): Promise<RunResult> {
  const row = await s.db.selectFrom('agent_reviews').selectAll().where('id', '=', id).where('claim', '=', token).executeTakeFirst();
  if (!row) return { row: null, modelFailed: false };
  const agent = await s.db.selectFrom('agents').selectAll().where('id', '=', row.agent_id).executeTakeFirst();
  const stretch = await s.db
    .selectFrom('agent_stretches')
    .select(['conversation_id', 'since_id', 'until_id'])
    .where('id', '=', row.stretch_id)
    .executeTakeFirst();
  // Both cascade to the review: gone together.
  if (!agent || !stretch) return { row: null, modelFailed: false };
  const llm = s.llm;
  if (llm === null) return { row: await finish(s, row, token, { status: 'failed', error: reviewErrors.modelMissing }), modelFailed: false };
  // The agent's review as it is now (an agent that stopped being advanced since: nothing to grade or extract).
  const config = agent.review ?? { criteria: [], extract: [] };
  const messages = await stretchMessages(s.db, stretch, { untilId: stretch.until_id, limit: MAX_MESSAGES });
  let answer: ReviewAnswer;
  try {
    answer = await llm.json({
      model: agent.model,
      messages: reviewMessages(agent, config, messages),
      name: 'review',
      schema: ReviewAnswer,
    });
  } catch (err) {
    if (!(err instanceof ModelError)) throw err;
    return { row: await finish(s, row, token, { status: 'failed', error: reviewErrors.modelFailed }), modelFailed: true };
  }
  return { row: await finish(s, row, token, { status: 'done', ...normalizeReview(config, answer) }), modelFailed: false };
}

/** One pass: claims and reviews until nothing is due; returns the rows handled. */
async function pass(s: Services): Promise<number> {
  let n = 0;
  for (;;) {
    const rows = await claim(s, BATCH);
    if (rows.length === 0) return n;
    const results = await Promise.allSettled(rows.map((r) => runClaimed(s, r.id, r.claim)));
    for (const r of results) {
      if (r.status === 'rejected') s.log.warn({ err: { message: (r.reason as Error).message } }, 'agent review failed; tried again');
    }
    n += rows.length;
    // A row that threw stays claimed until its lease lapses: the loop ends when nothing else is due.
    if (rows.length < BATCH) return n;
  }
}

const worker = wakeable('agent-reviews', pass);

/** After the commit that queued a review (queueReview returned true): review now instead of at the next tick. */
export const wakeReviews = (s: Services): void => worker.wake(s);

/** The `agent-reviews` job (POST /admin/v1/jobs/agent-reviews/run): reviews everything due now; returns the rows handled. */
export const runReviews = (s: Services): Promise<number> => worker.run(s);

/** Shutdown (runtime.ts, before the database closes): no new wake; waits for the pass in progress. */
export const stopReviews = (s: Services): Promise<void> => worker.stop(s);

// ---------------------------------------------------------------------------------------------
// Operator routes (agents/review-routes.ts)

export interface ReviewView {
  id: string;
  agentId: string;
  agentVersion: string;
  stretchId: string;
  conversationId: string;
  contactId: string;
  endedBy: ReviewRow['ended_by'];
  status: ReviewRow['status'];
  summary: string | null;
  criteria: ReviewRow['criteria'];
  extracted: ReviewRow['extracted'];
  error: string | null;
  runs: number;
  createdAt: string;
  reviewedAt: string | null;
}

export const reviewView = (r: ReviewRow): ReviewView => ({
  id: r.id,
  agentId: r.agent_id,
  agentVersion: String(r.agent_version),
  stretchId: r.stretch_id,
  conversationId: r.conversation_id,
  contactId: r.contact_id,
  endedBy: r.ended_by,
  status: r.status,
  summary: r.summary,
  criteria: r.criteria,
  extracted: r.extracted,
  error: r.error,
  runs: r.runs,
  createdAt: r.created_at.toISOString(),
  reviewedAt: r.reviewed_at ? r.reviewed_at.toISOString() : null,
});

/** GET …/agents/{agentId}/reviews: newest first, `after` = the last id of the previous page (404: unknown agent). */
export async function listReviews(
  s: Services,
  accountId: string,
  agentId: string,
  q: { limit: number; after?: string | undefined },
): Promise<{ data: ReviewView[]; hasMore: boolean; nextCursor: string | null }> {
  const agent = await getAgentRow(s.db, accountId, agentId);
  let query = s.db.selectFrom('agent_reviews').selectAll().where('agent_id', '=', agent.id);
  if (q.after) {
    query = query.where(
      sql<boolean>`(created_at, id) < (SELECT c.created_at, c.id FROM agent_reviews c WHERE c.id = ${q.after} AND c.agent_id = ${agent.id})`,
    );
  }
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(q.limit + 1)
    .execute();
  const p = page(rows, q.limit);
  return { data: p.data.map(reviewView), hasMore: p.hasMore, nextCursor: p.nextCursor };
}

/**
 * POST …/reviews/{reviewId}/rerun: claims the review (taking it from a run in progress, whose
 * outcome is then not written) and runs it now, inside the request: one model call, then
 * `agent.conversation_reviewed` again. No model configured → 409 (nothing stored); a model
 * failure → the review is `failed` and the request answers 502.
 */
export async function rerunReview(s: Services, accountId: string, agentId: string, reviewId: string): Promise<ReviewView> {
  const agent = await getAgentRow(s.db, accountId, agentId);
  const found = await s.db
    .selectFrom('agent_reviews')
    .select('id')
    .where('id', '=', reviewId)
    .where('agent_id', '=', agent.id)
    .executeTakeFirst();
  if (!found) throw new ApiError('agent_review_not_found');
  if (s.llm === null) throw new ApiError('agent_model_missing', { params: { review: 1 } });
  const now = s.clock.now();
  const token = newId();
  await s.db
    .updateTable('agent_reviews')
    .set({ claim: token, run_at: new Date(now.getTime() + REVIEW_LEASE_MS), updated_at: now })
    .where('id', '=', found.id)
    .execute();
  const r = await runClaimed(s, found.id, token);
  if (r.modelFailed) throw new ApiError('agent_model_failed');
  // Null: another rerun took the claim meanwhile; answer the review as it is.
  const row = r.row ?? (await s.db.selectFrom('agent_reviews').selectAll().where('id', '=', found.id).executeTakeFirst());
  if (!row) throw new ApiError('agent_review_not_found');
  return reviewView(row);
}
