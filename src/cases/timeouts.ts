// The `case-timeouts` job (decisions.md "Cases"): stale open-stage cases move to the lost stage,
// then open cases past their inactivity deadline close. Batches of BATCH cases, each batch one
// transaction with its events; rows are claimed with FOR UPDATE SKIP LOCKED and the condition is
// re-checked under the lock, so a customer message arriving meanwhile wins.
import { sql } from 'kysely';
import type { Executor } from '../db/index.js';
import type { Services } from '../services.js';
import { emitCaseEvent, emitCaseEvents } from './service.js';

const BATCH = 200;

/**
 * An open-stage case with no customer reply for the pipeline's `staleDays` moves to the
 * pipeline's (first) lost stage: `case.stage_changed`. If it was still open it closes with
 * closeReason `stale` (`case.closed`); if it had already closed for inactivity its closeReason
 * becomes `stale` (it turned to lost on its own) without a second `case.closed`; other close
 * reasons are kept. Cases with an outcome, or in pipelines without a lost stage, are left alone.
 */
async function staleBatch(s: Services): Promise<number> {
  const now = s.clock.now();
  const n = await s.db.transaction().execute(async (trx) => {
    const rows = await moveStale(trx, now);
    for (const r of rows) await emitCaseEvents(trx, r.was_open ? ['case.stage_changed', 'case.closed'] : ['case.stage_changed'], r.id, now);
    return rows.length;
  });
  if (n > 0) s.dispatcher.wake();
  return n;
}

/**
 * staleBatch's statement: up to BATCH stale cases moved to their pipeline's lost stage. Read per
 * open stage, with the stage's bound in the index condition (`cases_stage_last_inbound`): only
 * the stale cases are visited, not every case with a stage (a bound written as
 * `last_inbound_at + stale_days <= now` cannot use the index).
 */
export async function moveStale(trx: Executor, now: Date): Promise<{ id: string; was_open: boolean }[]> {
  const { rows } = await sql<{ id: string; was_open: boolean }>`
    WITH due AS (
      SELECT c.id, c.status = 'open' AS was_open, lost.id AS lost_id
      FROM stages st
      JOIN pipelines p ON p.id = st.pipeline_id
      JOIN LATERAL (
        SELECT l.id FROM stages l WHERE l.pipeline_id = p.id AND l.kind = 'lost' ORDER BY l.position, l.id LIMIT 1
      ) lost ON true
      CROSS JOIN LATERAL (
        SELECT c.id, c.status, c.last_inbound_at FROM cases c
        WHERE c.stage_id = st.id AND c.outcome IS NULL
          AND c.last_inbound_at <= ${now}::timestamptz - make_interval(days => p.stale_days)
        ORDER BY c.last_inbound_at
        LIMIT ${BATCH}
        FOR UPDATE OF c SKIP LOCKED
      ) c
      WHERE st.kind = 'open'
      ORDER BY c.last_inbound_at
      LIMIT ${BATCH}
    )
    UPDATE cases c SET
      stage_id = due.lost_id,
      stage_entered_at = ${now}::timestamptz,
      stage_amount = NULL,
      status = 'closed',
      closed_at = CASE WHEN due.was_open THEN ${now}::timestamptz ELSE c.closed_at END,
      close_reason = CASE WHEN due.was_open OR c.close_reason = 'inactivity' THEN 'stale' ELSE c.close_reason END,
      closed_by = CASE WHEN due.was_open THEN NULL ELSE c.closed_by END,
      updated_at = ${now}::timestamptz
    FROM due
    WHERE c.id = due.id
    RETURNING c.id, due.was_open`.execute(trx);
  return rows;
}

/** Open cases whose lastInboundAt + inactivityHours ≤ now close with closeReason `inactivity`. */
async function inactivityBatch(s: Services): Promise<number> {
  const now = s.clock.now();
  const n = await s.db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ id: string }>`
      WITH due AS (
        SELECT id FROM cases
        WHERE status = 'open' AND last_inbound_at + make_interval(hours => inactivity_hours) <= ${now}::timestamptz
        ORDER BY last_inbound_at
        LIMIT ${BATCH}
        FOR UPDATE SKIP LOCKED
      )
      UPDATE cases c SET status = 'closed', closed_at = ${now}::timestamptz, close_reason = 'inactivity', updated_at = ${now}::timestamptz
      FROM due
      WHERE c.id = due.id
      RETURNING c.id`.execute(trx);
    for (const r of rows) await emitCaseEvent(trx, 'case.closed', r.id, now);
    return rows.length;
  });
  if (n > 0) s.dispatcher.wake();
  return n;
}

/** Runs both rules until nothing is due; returns how many cases changed. */
export async function runCaseTimeouts(s: Services): Promise<number> {
  let changed = 0;
  for (const batch of [staleBatch, inactivityBatch]) {
    for (;;) {
      const n = await batch(s);
      changed += n;
      if (n < BATCH) break;
    }
  }
  return changed;
}
