// The end of an execution (docs/automations.md "Executions"): completed, handed off or failed, with
// the conversation's handling, an agent's stretch, the step log and the event in one transaction;
// and a claim that finds a send or http step started by an earlier claim (interrumpida).
import { startStretch } from '../agents/stretches.js';
import { openCaseOf } from '../cases/open.js';
import { addNote, clearHandling, clearHandlingWrite, setHandling } from '../conversations/service.js';
import type { AgentRow } from '../db/types.js';
import { executionErrors } from '../http/messages.es-AR.js';
import { type Death, recordDeath } from '../jobs/dead-letters.js';
import { emitEvent } from '../webhooks/outbox.js';
import { type Ctx, commit, count, type LogEntry, updateExecution } from './step-writes.js';

/** A send or http step was started by a claim that never finished it: fail rather than repeat. */
export async function interrupted(c: Ctx): Promise<void> {
  const log = await c.s.db.selectFrom('automation_steps').select(['id', 'step_id']).where('id', '=', c.row.effect_step!).executeTakeFirst();
  const stepId = log?.step_id ?? c.row.current_step_id ?? '?';
  await end(c, {
    status: 'failed',
    error: executionErrors.interrupted(stepId),
    finishLog: log ? { id: log.id, outcome: 'interrupted', detail: null } : undefined,
  });
}

interface Ending {
  status: 'completed' | 'handed_off' | 'failed';
  error?: string | undefined;
  log?: LogEntry;
  finishLog?: { id: string; outcome: string; detail: Record<string, unknown> | null } | undefined;
  /** A handoff's note for the team. */
  note?: string | null;
  /** An `agent` step: this agent's stretch starts as the execution completes. */
  agent?: Pick<AgentRow, 'id' | 'name' | 'version'> & { sinceId: string };
  /** Called when another stretch already runs in the conversation (the agent step's outcome). */
  agentBusy?: () => void;
  /** Our own failure on every try: the dead letter written with the end. */
  deadLetter?: Death;
}

/**
 * Ends the execution: its conversation's handling (the team after a handoff, else nobody), the
 * final row, the step log, and `automation.completed` / `automation.failed` (not for tests) in one
 * transaction.
 */
export async function end(c: Ctx, e: Ending): Promise<'rest'> {
  const now = c.s.clock.now();
  c.row = await commit(c, async (trx) => {
    const conversationId = c.row.conversation_id;
    if (e.status === 'handed_off') {
      // The conversation's lock comes before any case lock; the open case is only read here.
      const open = await openCaseOf(trx, conversationId);
      const by = { type: 'automation' as const, id: c.automation.id, name: c.automation.name };
      await setHandling(trx, conversationId, { type: 'team', id: null, name: null, caseId: open?.id ?? null });
      if (e.note) await addNote(trx, { accountId: c.account.id, conversationId, caseId: open?.id ?? null, text: e.note, by }, now);
    } else if (e.agent) {
      await clearHandling(trx, conversationId, 'automation');
      const started = await startStretch(
        trx,
        {
          accountId: c.account.id,
          agent: e.agent,
          conversationId,
          contactId: c.row.contact_id,
          phoneNumberId: c.row.phone_number_id,
          assignedBy: 'automation',
          executionId: c.row.id,
          test: c.row.test,
          sinceId: e.agent.sinceId,
        },
        now,
      );
      if (!started) e.agentBusy?.();
    }
    // Completed or failed without an agent to follow: the handling is cleared by the execution's
    // own statement (it runs first there: the conversation's lock before the execution row's).
    const clearing = e.status !== 'handed_off' && !e.agent ? clearHandlingWrite([conversationId], 'automation') : undefined;
    const row = await updateExecution(
      trx,
      c,
      {
        status: e.status,
        error: e.error ?? null,
        ended_at: now,
        run_at: null,
        claim: null,
        effect_step: null,
        variables: JSON.stringify(c.row.variables),
      },
      { ...(e.finishLog ? { finish: [e.finishLog] } : {}), ...(e.log ? { log: e.log } : {}) },
      clearing,
    );
    if (e.deadLetter) await recordDeath(trx, e.deadLetter, now);
    // The shared counter row last, before the event (see write()).
    if (e.log && e.status !== 'failed') await count(trx, c, false);
    if (!row.test) {
      const kind = e.status === 'failed' ? 'automation.failed' : 'automation.completed';
      const data = {
        executionId: row.id,
        automationId: row.automation_id,
        conversationId: row.conversation_id,
        contactId: row.contact_id,
        status: e.status,
        error: e.error ?? null,
        variables: row.variables,
      };
      await emitEvent(trx, { accountId: row.account_id, kind, data }, now);
    }
    return row;
  });
  return 'rest';
}
