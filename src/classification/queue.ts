// The classification queue (spec agents.md "Classification and score of cases"): the inbound
// transaction queues a row after each of a case's first three inbound messages; the
// `classification` job (every 250 ms, and woken in-process after the inbound commit) claims due
// rows with FOR UPDATE SKIP LOCKED — the oldest row of each case only, so a case is classified
// one message at a time — classifies outside any transaction, writes in one transaction and
// deletes the row.
import { sql } from 'kysely';
import { normalizeText } from '../automations/text.js';
import type { InboundCase } from '../cases/open.js';
import { applyClassification, noReasonSql } from '../cases/service.js';
import type { Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { ReasonRow } from '../db/types.js';
import { wakeable } from '../jobs/wakeable.js';
import { newId } from '../lib/ids.js';
import { ModelError } from '../llm/types.js';
import type { Services } from '../services.js';
import { classifyByKeywords, classifyByModel, keywordAnswers, scoreOf, type Verdict } from './classify.js';
import { listReasonRows } from './reasons.js';

/** The messages classified: a case's first three inbound messages. */
export const CLASSIFIED_MESSAGES = 3;
/** A claimed row is given back (due again) when its claim is this old: the model call's retries fit in it. */
export const CLASSIFY_LEASE_MS = 180_000;
/** A row claimed this many times without finishing is dropped. */
const MAX_ATTEMPTS = 5;
/** Rows claimed per statement (classified concurrently: one per case). */
const BATCH = 16;

/**
 * Inside the inbound transaction, after openCaseForInbound counted the message: queues the
 * case's classification when it is one of its first three inbound messages and its reason is
 * still pending (or was set by the classifier: its score follows the next messages). Nothing to
 * do after the third: no statement. Returns whether a row was queued (wake the worker after commit).
 */
export async function queueClassification(trx: Trx, accountId: string, c: InboundCase, messageId: string, now: Date): Promise<boolean> {
  if (c.inboundCount > CLASSIFIED_MESSAGES) return false;
  const classify = c.reasonStatus === 'pending' || (c.reasonStatus === 'set' && c.reasonSource === 'classifier');
  if (!classify) return false;
  // One statement: an account without a catalogue has nothing to classify — nothing is queued,
  // and its case's third message sets reasonStatus `none` right here.
  const last = c.inboundCount === CLASSIFIED_MESSAGES;
  const { rows } = await sql<{ queued: boolean }>`
    WITH catalogue AS (
      SELECT EXISTS (SELECT 1 FROM reasons WHERE account_id = ${accountId} AND deleted_at IS NULL) AS yes),
    q AS (
      INSERT INTO case_classifications (id, case_id, message_id, nth, run_at, created_at)
      SELECT ${newId()}, ${c.id}, ${messageId}, ${c.inboundCount}, ${now}, ${now} FROM catalogue WHERE yes),
    n AS (${noReasonSql(c.id, now)} AND ${last} AND NOT (SELECT yes FROM catalogue))
    SELECT yes AS queued FROM catalogue`.execute(trx);
  return rows[0]?.queued ?? false;
}

interface Claimed {
  id: string;
  case_id: string;
  message_id: string;
  nth: number;
  attempts: number;
}

/** Claims up to `limit` due rows, the oldest of each case whose older rows are all done; run_at becomes the lease's end. */
async function claim(s: Services, limit: number): Promise<Claimed[]> {
  const now = s.clock.now();
  const lease = new Date(now.getTime() + CLASSIFY_LEASE_MS);
  const r = await sql<Claimed>`
    UPDATE case_classifications SET run_at = ${lease}, attempts = attempts + 1
    WHERE id IN (
      SELECT c.id FROM case_classifications c
      WHERE c.run_at <= ${now}
        AND NOT EXISTS (
          SELECT 1 FROM case_classifications o
          WHERE o.case_id = c.case_id AND (o.nth < c.nth OR (o.nth = c.nth AND o.id < c.id)))
      ORDER BY c.run_at LIMIT ${limit}
      FOR UPDATE OF c SKIP LOCKED)
    RETURNING id, case_id, message_id, nth, attempts`.execute(s.db);
  return r.rows;
}

const dropRow = (trx: Trx | Services['db'], id: string) => trx.deleteFrom('case_classifications').where('id', '=', id).execute();

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
  if (row.attempts > MAX_ATTEMPTS) {
    s.log.warn({ caseId: row.case_id }, 'classification: dropped after repeated failures');
    await dropRow(s.db, row.id);
    return 0;
  }
  const c = await s.db
    .selectFrom('cases')
    .select(['id', 'account_id', 'conversation_id', 'created_at', 'reason_status', 'reason_source', 'reason_id'])
    .where('id', '=', row.case_id)
    .executeTakeFirst();
  const rescoring = c?.reason_status === 'set' && c.reason_source === 'classifier';
  if (!c || !(c.reason_status === 'pending' || rescoring)) {
    await dropRow(s.db, row.id);
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
      await dropRow(s.db, row.id);
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
    const done = await applyClassification(
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
    await dropRow(trx, row.id);
    return done;
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
    for (const r of results) {
      if (r.status === 'rejected') s.log.warn({ err: { message: (r.reason as Error).message } }, 'classification failed; tried again');
    }
    n += rows.length;
    // A failed row stays claimed until its lease lapses: the loop ends when nothing else is due.
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
