// Executions (docs/automations.md "Executions"): started by the API, the incoming webhook, an
// operator's test or an inbound message (triggers.ts); read with their step log; cancelled by the
// operator. At most one runs per conversation (a unique index): a second start answers 409.

import { sql } from 'kysely';
import { conversationUpdatedOf } from '../console/bus.js';
import { contactForSend } from '../contacts/service.js';
import { conversationFor, setHandlingSql } from '../conversations/service.js';
import type { Executor, Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { AccountRow, AutomationRow, ExecutionRow } from '../db/types.js';
import { ApiError, invalid } from '../http/errors.js';
import { isUuid, newId } from '../lib/ids.js';
import { canonicalPhone } from '../lib/phone.js';
import { numberForSend } from '../messages/send-from.js';
import type { Services } from '../services.js';
import { cancelRunning } from './cancel.js';
import type { Step } from './flow.js';
import { admitStart } from './loops.js';
import { type ExecutionView, executionView, type StepLogView, stepLogView } from './view.js';

export interface StartInput {
  account: AccountRow;
  automation: AutomationRow;
  /** The customer's phone, any international spelling. */
  to: string;
  phoneNumberId?: string | undefined;
  variables?: Record<string, unknown> | undefined;
  trigger: 'api' | 'webhook' | 'test';
  /** The Chasqui-Hop of the request that starts it (loops.ts); 0 without one. */
  hop?: number | undefined;
}

/** How long a start through the API waits for a short flow to end before it answers. */
export const START_WAIT_MS = 2_000;

/**
 * Inserts a running execution in `trx` (the caller holds the conversation's lock or relies on
 * the unique index) and shows the automation as the conversation's handling. Returns null when
 * the conversation already runs one.
 */
export async function insertExecution(
  trx: Trx,
  e: {
    automation: Pick<AutomationRow, 'id' | 'name' | 'account_id'>;
    /** The flow's first step (null: an empty flow, which ends at once). */
    firstStepId: string | null;
    conversationId: string;
    contactId: string;
    phoneNumberId: string | null;
    variables: Record<string, unknown>;
    trigger: string;
    test: boolean;
    /** A comment automation: the comment its first send answers privately. */
    replyCommentId?: string | null;
    /** Started by a request carrying Chasqui-Hop (loops.ts). */
    hop?: number;
  },
  now: Date,
): Promise<ExecutionRow | null> {
  // One statement: the execution (none when the conversation already runs one) and, only then,
  // the conversation's handling and its `conversation.updated`.
  const handling = setHandlingSql(e.conversationId, { type: 'automation', id: e.automation.id, name: e.automation.name, caseId: null });
  const u = conversationUpdatedOf('h', 'ev', [e.conversationId]);
  const { rows } = await sql<ExecutionRow & { notified?: unknown }>`
    WITH e AS (
      INSERT INTO automation_executions (id, account_id, automation_id, conversation_id, contact_id, phone_number_id, status,
        variables, current_step_id, state, test, trigger, reply_comment_id, hop, run_at, started_at, updated_at)
      VALUES (${newId()}, ${e.automation.account_id}, ${e.automation.id}, ${e.conversationId}, ${e.contactId}, ${e.phoneNumberId},
        'running', ${JSON.stringify(e.variables)}::jsonb, ${e.firstStepId}, 'ready', ${e.test}, ${e.trigger}, ${e.replyCommentId ?? null},
        ${e.hop ?? 0}, ${now}, ${now}, ${now})
      ON CONFLICT (conversation_id) WHERE status = 'running' DO NOTHING
      RETURNING *),
    h AS (${handling} AND EXISTS (SELECT 1 FROM e) RETURNING *),
    ev AS (${u.events})
    SELECT e.*, ${u.notify} AS notified FROM e`.execute(trx);
  if (!rows[0]) return null;
  const { notified: _, ...row } = rows[0];
  return row;
}

/**
 * Starts an execution for a phone (API, incoming webhook, operator test); the caller wakes the
 * runner or drives it: number (409s as POST
 * /messages), contact (created under the plan's limit: 402), conversation, the execution (409
 * when one runs), past the automation's start rate (429, loops.ts). Only active automations start, except tests.
 */
export async function startExecution(s: Services, input: StartInput): Promise<ExecutionRow> {
  const { account, automation } = input;
  if (input.trigger !== 'test' && automation.status !== 'active') throw new ApiError('automation_not_active');
  const phone = canonicalPhone(input.to);
  if (!phone.ok) throw invalid([input.trigger === 'webhook' ? 'phone' : 'to'], phone.message);
  const number = await numberForSend(s.db, account.id, input.phoneNumberId ?? automation.phone_number_id ?? undefined);
  // The automation's start rate (an operator's test is not counted): 429 past it.
  if (input.trigger !== 'test') await admitStart(s, automation);
  const now = s.clock.now();
  const { row, created } = await transaction(s.db, async (trx) => {
    const { contact, created } = await contactForSend(trx, account, phone.phone, now);
    const conversation = await conversationFor(trx, { accountId: account.id, contactId: contact.id, phoneNumberId: number.id }, now);
    const row = await insertExecution(
      trx,
      {
        automation,
        firstStepId: (automation.steps as Step[])[0]?.id ?? null,
        conversationId: conversation.id,
        contactId: contact.id,
        phoneNumberId: number.id,
        variables: input.variables ?? {},
        trigger: input.trigger,
        test: input.trigger === 'test',
        hop: input.hop ?? 0,
      },
      now,
    );
    if (!row) throw new ApiError('automation_running');
    return { row, created };
  });
  if (created) s.accountViews.changed(account.id);
  return row;
}

/** Starts, then lets a short flow run to its first wait (or end) before answering. */
export async function startAndSettle(s: Services, input: StartInput): Promise<ExecutionView> {
  const row = await startExecution(s, input);
  await s.automations.drive(row.id, START_WAIT_MS);
  return executionView(await getExecutionRow(s.db, row.account_id, row.automation_id, row.id));
}

export async function getExecutionRow(db: Executor, accountId: string, automationId: string, id: string): Promise<ExecutionRow> {
  const e =
    isUuid(id) && isUuid(automationId)
      ? await db
          .selectFrom('automation_executions')
          .selectAll()
          .where('account_id', '=', accountId)
          .where('automation_id', '=', automationId)
          .where('id', '=', id)
          .executeTakeFirst()
      : undefined;
  if (!e) throw new ApiError('execution_not_found');
  return e;
}

export async function getExecutionWithSteps(
  db: Executor,
  accountId: string,
  automationId: string,
  id: string,
): Promise<ExecutionView & { steps: StepLogView[] }> {
  const e = await getExecutionRow(db, accountId, automationId, id);
  const steps = await db.selectFrom('automation_steps').selectAll().where('execution_id', '=', e.id).orderBy('id').execute();
  return { ...executionView(e), steps: steps.map(stepLogView) };
}

export interface ExecutionListQuery {
  status?: ExecutionRow['status'] | undefined;
  limit: number;
  after?: string | undefined;
}

/** Newest first; `after` is the last id of the previous page. */
export async function listExecutions(
  db: Executor,
  accountId: string,
  automationId: string,
  q: ExecutionListQuery,
): Promise<{ data: ExecutionView[]; hasMore: boolean }> {
  let query = db
    .selectFrom('automation_executions')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('automation_id', '=', automationId)
    .orderBy('id', 'desc')
    .limit(q.limit + 1);
  if (q.status) query = query.where('status', '=', q.status);
  if (q.after) query = query.where('id', '<', q.after);
  const rows = await query.execute();
  return { data: rows.slice(0, q.limit).map(executionView), hasMore: rows.length > q.limit };
}

/** The operator stops a running execution (no event); one already ended → 409. */
export async function cancelExecution(s: Services, accountId: string, automationId: string, id: string): Promise<ExecutionView> {
  const e = await getExecutionRow(s.db, accountId, automationId, id);
  const now = s.clock.now();
  const cancelled = await transaction(s.db, (trx) => cancelRunning(trx, { executionId: e.id }, now));
  if (cancelled.length === 0) throw new ApiError('execution_not_running');
  return executionView(await getExecutionRow(s.db, accountId, automationId, id));
}
