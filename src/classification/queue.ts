// The classification queue (spec agents.md "Classification and score of cases"): the inbound
// transaction queues a row after each of a case's first three inbound messages; the
// `classification` job (every 250 ms, and woken in-process after the inbound commit) claims due
// rows with FOR UPDATE SKIP LOCKED and a claim token — the oldest row of each case only, so a
// case is classified one message at a time — classifies outside any transaction, writes in one
// transaction and deletes the row. Every write checks the token: a worker whose lease lapsed and
// whose row was claimed again writes nothing. A row that fails for our own reason is tried again by QUEUE_RETRY_SCHEDULE, then
// parked as a dead letter (jobs/dead-letters.ts).
import { sql } from 'kysely';
import { normalizeText } from '../automations/text.js';
import { applyClassification, noReasonSql } from '../cases/service.js';
import type { Executor, Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { ReasonRow } from '../db/types.js';
import { describeFailure, LAPSED, logDeath, maxTries, recordDeath, retryAt } from '../jobs/dead-letters.js';
import { wakeable } from '../jobs/wakeable.js';
import { newId } from '../lib/ids.js';
import { ModelError } from '../llm/types.js';
import type { Services } from '../services.js';
import { classifyByKeywords, classifyByModel, keywordAnswers, scoreOf, type Verdict } from './classify.js';
import { hasCatalogueSql, listReasonRows } from './reasons.js';

/** The messages classified: a case's first three inbound messages. */
export const CLASSIFIED_MESSAGES = 3;
/** A claimed row is given back (due again) when its claim is this old: the model call's retries fit in it. */
export const CLASSIFY_LEASE_MS = 180_000;
/** Rows claimed per statement (classified concurrently: one per case). */
const BATCH = 16;

/** A case an inbound message was counted in (cases/open.ts), with that message. */
export interface CountedMessage {
  caseId: string;
  inboundCount: number;
  reasonStatus: string;
  reasonSource: string | null;
  messageId: string;
}

/**
 * Inside the inbound transaction, after openCasesForInbound counted the messages: queues each
 * case's classification when the message is one of its first three inbound messages and its
 * reason is still pending (or was set by the classifier: its score follows the next messages).
 * One statement for the batch, none when nothing is due. An account without a catalogue has
 * nothing to classify: nothing is queued, and a case's third message sets reasonStatus `none`
 * right here. `catalogue`: whether the account has one, as a statement of this transaction just
 * read it (the cases' statements: hasCatalogueSql) — without one, and no case at its third
 * message, there is nothing to write and no statement. Returns whether a row was queued (wake the
 * worker after commit).
 */
export async function queueClassifications(
  trx: Trx,
  accountId: string,
  counted: CountedMessage[],
  now: Date,
  catalogue?: boolean,
): Promise<boolean> {
  const due = counted.filter(
    (c) =>
      c.inboundCount <= CLASSIFIED_MESSAGES &&
      (c.reasonStatus === 'pending' || (c.reasonStatus === 'set' && c.reasonSource === 'classifier')),
  );
  if (due.length === 0) return false;
  const last = due.filter((c) => c.inboundCount === CLASSIFIED_MESSAGES).map((c) => c.caseId);
  if (catalogue === false && last.length === 0) return false;
  const { rows } = await sql<{ queued: boolean }>`
    WITH catalogue AS (SELECT ${hasCatalogueSql(accountId)} AS yes),
    q AS (
      INSERT INTO case_classifications (id, case_id, message_id, nth, run_at, created_at)
      SELECT u.id, u.case_id, u.message_id, u.nth, ${now}, ${now}
      FROM unnest(${due.map(() => newId())}::uuid[], ${due.map((c) => c.caseId)}::uuid[], ${due.map((c) => c.messageId)}::uuid[],
        ${due.map((c) => c.inboundCount)}::int[]) AS u(id, case_id, message_id, nth), catalogue
      WHERE catalogue.yes
      ORDER BY u.id),
    n AS (${noReasonSql(last, now)} AND NOT (SELECT yes FROM catalogue))
    SELECT yes AS queued FROM catalogue`.execute(trx);
  return rows[0]?.queued ?? false;
}

interface Claimed {
  id: string;
  case_id: string;
  message_id: string;
  nth: number;
  attempts: number;
  last_error: string | null;
  /** This claim's token: every write below checks it is still the row's. */
  claim: string;
}

/**
 * Claims up to `limit` due rows, the oldest of each case whose older rows are all done (a dead one
 * no longer holds the case's later ones); run_at becomes the lease's end. Both reads go through
 * indexes of the live rows (`case_classifications_due`, `_case`): dead rows, whose run_at stays
 * old, are not walked by every claim.
 */
export async function claim(s: Services, limit: number, db: Executor = s.db): Promise<Claimed[]> {
  const now = s.clock.now();
  const lease = new Date(now.getTime() + CLASSIFY_LEASE_MS);
  const r = await sql<Claimed>`
    UPDATE case_classifications SET run_at = ${lease}, attempts = attempts + 1, claim = ${newId()}
    WHERE id IN (
      SELECT c.id FROM case_classifications c
      WHERE c.run_at <= ${now} AND c.dead_at IS NULL
        AND NOT EXISTS (
          SELECT 1 FROM case_classifications o
          WHERE o.case_id = c.case_id AND o.dead_at IS NULL AND (o.nth < c.nth OR (o.nth = c.nth AND o.id < c.id)))
      ORDER BY c.run_at LIMIT ${limit}
      FOR UPDATE OF c SKIP LOCKED)
    RETURNING id, case_id, message_id, nth, attempts, last_error, claim`.execute(db);
  return r.rows;
}

/**
 * A classification that failed for our own reason: due again by QUEUE_RETRY_SCHEDULE, or parked
 * as a dead letter after its last try (`lapsed`: its claims lapsed that often, it is not tried again).
 */
async function failed(s: Services, row: Claimed, error: string, lapsed = false): Promise<void> {
  const now = s.clock.now();
  const at = lapsed ? null : retryAt(s, row.attempts);
  if (at) {
    await s.db
      .updateTable('case_classifications')
      .set((eb) => ({ run_at: at, claim: null, failed_at: eb.fn.coalesce('failed_at', eb.val(now)), last_error: error }))
      .where('id', '=', row.id)
      .where('claim', '=', row.claim)
      .execute();
    return;
  }
  const died = await transaction(s.db, async (trx) => {
    const parked = await trx
      .updateTable('case_classifications')
      .set((eb) => ({ dead_at: now, claim: null, failed_at: eb.fn.coalesce('failed_at', eb.val(now)), last_error: error }))
      .where('id', '=', row.id)
      .where('claim', '=', row.claim)
      .where('dead_at', 'is', null)
      .returning('failed_at')
      .executeTakeFirst();
    if (!parked) return false;
    await recordDeath(
      trx,
      {
        queue: 'classification',
        itemId: row.id,
        accountId: sql`(SELECT account_id FROM cases WHERE id = ${row.case_id})`,
        firstFailedAt: parked.failed_at ?? now,
        attempts: row.attempts,
        lastError: error,
      },
      now,
    );
    return true;
  });
  if (died) logDeath(s, { queue: 'classification', itemId: row.id, attempts: row.attempts, lastError: error });
}

/** Operator's retry of a dead classification (admin/dead-letters.ts): due now, tries counted afresh. */
export async function reviveClassification(trx: Trx, itemId: string, now: Date): Promise<boolean> {
  const r = await trx
    .updateTable('case_classifications')
    .set({ dead_at: null, attempts: 0, failed_at: null, last_error: null, claim: null, run_at: now })
    .where('id', '=', itemId)
    .where('dead_at', 'is not', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Operator's discard of a dead classification: the case keeps what it has. */
export async function discardClassification(trx: Trx, itemId: string): Promise<void> {
  await trx.deleteFrom('case_classifications').where('id', '=', itemId).where('dead_at', 'is not', null).execute();
}

/** Deletes the row while this claim holds it; false when the claim lapsed and the row was claimed again (or is gone). */
async function dropRow(trx: Trx | Services['db'], row: Claimed): Promise<boolean> {
  const r = await trx.deleteFrom('case_classifications').where('id', '=', row.id).where('claim', '=', row.claim).executeTakeFirst();
  return r.numDeletedRows > 0n;
}

/** The texts of the case's first `nth` inbound messages, oldest first (reactions and media without caption left out). */
async function caseTexts(s: Services, c: { conversation_id: string; created_at: Date }, row: Claimed): Promise<string[]> {
  const upTo = s.db.selectFrom('messages').select('created_at').where('id', '=', row.message_id);
  const rows = await s.db
    .selectFrom('messages')
    .select('text')
    .where('conversation_id', '=', c.conversation_id)
    .where('direction', '=', 'inbound')
    .where('type', '<>', 'reaction')
    .where('created_at', '>=', c.created_at)
    .where('created_at', '<=', upTo)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(row.nth)
    .execute();
  // The case's messages are the last `nth` up to the queued one (the case counted them).
  return rows
    .reverse()
    .map((m) => m.text)
    .filter((t): t is string => t !== null && t !== '');
}

/** The verdict: the model when there is one (a ModelError falls back to the keyword rules), else the keywords. */
async function decide(s: Services, catalogue: ReasonRow[], texts: string[]): Promise<Verdict> {
  if (s.llm && catalogue.length > 0 && texts.length > 0) {
    try {
      return await classifyByModel(s.llm, catalogue, texts);
    } catch (err) {
      if (!(err instanceof ModelError)) throw err;
      s.log.warn({ err: { message: err.message } }, 'classification: model failed, keyword rules used');
    }
  }
  return classifyByKeywords(catalogue, texts);
}

/** Classifies one claimed row; returns 1 when `case.classified` was emitted. */
async function classifyRow(s: Services, row: Claimed): Promise<number> {
  // Claimed more often than the schedule allows without an outcome: its process died (or hung) each time.
  if (row.attempts > maxTries(s)) {
    await failed(s, { ...row, attempts: row.attempts - 1 }, row.last_error ?? LAPSED, true);
    return 0;
  }
  const c = await s.db
    .selectFrom('cases')
    .select(['id', 'account_id', 'conversation_id', 'created_at', 'reason_status', 'reason_source', 'reason_id'])
    .where('id', '=', row.case_id)
    .executeTakeFirst();
  const rescoring = c?.reason_status === 'set' && c.reason_source === 'classifier';
  if (!c || !(c.reason_status === 'pending' || rescoring)) {
    await dropRow(s.db, row);
    return 0;
  }
  const catalogue = await listReasonRows(s.db, c.account_id);
  // Without a catalogue there is nothing to choose: the third message only ends it as `none`.
  const texts = catalogue.length > 0 ? await caseTexts(s, c, row) : [];
  let verdict = await decide(s, catalogue, texts);
  if (rescoring) {
    // The reason stays; only its score follows the messages (keyword answers unless the model
    // chose the same reason and answered its questions).
    const reason = catalogue.find((r) => r.id === c.reason_id);
    if (!reason?.scoring) {
      await dropRow(s.db, row);
      return 0;
    }
    if (verdict.reason?.id !== reason.id) {
      verdict = {
        reason,
        subreason: null,
        confidence: 0,
        detail: keywordAnswers(reason, normalizeText(texts.join('\n'))),
        via: 'keywords',
      };
    }
  }
  const emitted = await transaction(s.db, async (trx) => {
    // The row first, while this claim holds it: a late worker (its lease lapsed, the row claimed
    // again) deletes nothing and writes nothing. Only the claim statement (SKIP LOCKED) and a
    // failure of this same claim take the row, so this lock waits for nobody who waits for the case.
    if (!(await dropRow(trx, row))) return false;
    return applyClassification(
      trx,
      c.id,
      {
        nth: row.nth,
        reason: verdict.reason,
        subreason: verdict.subreason,
        confidence: verdict.confidence,
        score: scoreOf(verdict.detail),
        detail: verdict.detail,
      },
      s.clock.now(),
    );
  });
  if (emitted) s.dispatcher.wake();
  return emitted ? 1 : 0;
}

/** One pass: claims and classifies until nothing is due; returns the rows done. */
async function pass(s: Services): Promise<number> {
  let n = 0;
  for (;;) {
    const rows = await claim(s, BATCH);
    if (rows.length === 0) return n;
    const results = await Promise.allSettled(rows.map((r) => classifyRow(s, r)));
    for (const [i, r] of results.entries()) {
      if (r.status === 'fulfilled') continue;
      s.log.warn({ err: { message: (r.reason as Error).message } }, 'classification failed; tried again');
      // Not recorded (the database itself failing): its lease lapses and it is claimed again.
      await failed(s, rows[i]!, describeFailure(r.reason)).catch(() => {});
    }
    n += rows.length;
    if (rows.length < BATCH) return n;
  }
}

const worker = wakeable('classification', pass);

/** After an inbound commit that queued a row: classify now instead of at the next tick. */
export const wakeClassifier = (s: Services): void => worker.wake(s);

/**
 * The `classification` job: waits for this process's pass in progress (its rows are claimed, not
 * due), then classifies everything due now; returns the rows done (POST /admin/v1/jobs/classification/run).
 */
export const runClassifications = (s: Services): Promise<number> => worker.run(s);

/** Shutdown (runtime.ts, before the database closes): no new wake; waits for the pass in progress. */
export const stopClassifier = (s: Services): Promise<void> => worker.stop(s);
