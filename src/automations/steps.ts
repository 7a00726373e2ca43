// Running one claimed execution (docs/automations.md "Steps", "Durability"): the run loop and what
// each step kind means. The pieces live beside it: step-writes.ts (the claim's checked writes, the
// step log, the month's count, parking), step-effects.ts (send, ask and http: their outside
// effect), step-ask.ts (an ask's answer), step-end.ts (the end of an execution).
//
// Steps without an outbound effect (condition, set_attribute, wait, stage, handoff, end) are one
// transaction each: the step's own rows, the execution's new position, the step log and the
// month's step count commit together.
import type { Agent } from 'undici';
import { lockOpenCase } from '../cases/open.js';
import { moveToStage } from '../cases/service.js';
import { setContactAttribute } from '../contacts/service.js';
import { lockConversationBusy, setHandling } from '../conversations/service.js';
import type { Trx } from '../db/index.js';
import type { AccountRow, AutomationRow, ContactRow, ExecutionRow } from '../db/types.js';
import { executionErrors } from '../http/messages.es-AR.js';
import { describeFailure, LAPSED, logDeath, maxTries, retryAt } from '../jobs/dead-letters.js';
import type { Services } from '../services.js';
import { nextOf, type Step, type StepOf } from './flow.js';
import { httpStep } from './http-step.js';
import { answer } from './step-ask.js';
import { outbound, sendStep } from './step-effects.js';
import { end, interrupted } from './step-end.js';
import { type Ctx, Lost, moveTo, park, parkUntil, QuotaExceeded, refusalText, renderCtx, write } from './step-writes.js';
import { conditionOutcome, renderText } from './text.js';

/** A claimed execution with what its run reads first (one statement: runner.ts `claim`). */
export interface Claimed {
  row: ExecutionRow;
  automation: AutomationRow;
  contact: ContactRow;
  account: AccountRow;
}

/**
 * Runs a claimed execution until it waits (an answer, a timer), ends, or the process stops.
 * Returns how many transitions it made.
 */
export async function advance(s: Services, agent: Agent, claimed: Claimed, stopping: () => boolean): Promise<number> {
  const { row, automation, contact, account } = claimed;
  const c: Ctx = { s, agent, account, automation, steps: automation.steps as Step[], contact, row, later: [] };
  let n = 0;
  try {
    // Claimed more often than QUEUE_RETRY_SCHEDULE allows without a step done: its process died (or
    // hung) each time. It ends failed, as a dead letter, instead of a try more.
    if (c.row.tries > maxTries(s)) {
      await die(c, c.row.last_error ?? LAPSED, c.row.tries - 1);
      return 1;
    }
    if (c.row.effect_step) {
      await interrupted(c);
      return 1;
    }
    for (;;) {
      if (stopping()) {
        await park(c, c.s.clock.now());
        return n;
      }
      n += 1;
      const go = await turn(c);
      if (go === 'rest') return n;
    }
  } catch (err) {
    if (err instanceof Lost) {
      // Cancelled (or taken) meanwhile: a finished send or request still gets its end in the log.
      const f = c.finish;
      if (f) {
        const detail = f.log.detail ? JSON.stringify(f.log.detail) : null;
        await s.db
          .updateTable('automation_steps')
          .set({ ended_at: s.clock.now(), outcome: f.log.outcome, detail })
          .where('id', '=', f.log.id)
          .execute()
          .catch(() => {});
      }
      return n;
    }
    s.log.warn({ err: { message: (err as Error).message }, executionId: row.id }, 'automation step failed unexpectedly');
    const error = describeFailure(err);
    const at = retryAt(s, c.row.tries);
    // After its last try it ends failed, as a dead letter; a failure to record that leaves the
    // claim to lapse, and the next claim finds it past its tries.
    if (!at)
      return (
        n +
        (await die(c, error)
          .then(() => 1)
          .catch(() => 0))
      );
    // Looked at again by the schedule; if an outbound effect had started, that claim fails it (interrumpida).
    const now = s.clock.now();
    await s.db
      .updateTable('automation_executions')
      .set((eb) => ({ claim: null, run_at: at, failed_at: eb.fn.coalesce('failed_at', eb.val(now)), last_error: error }))
      .where('id', '=', row.id)
      .where('claim', '=', row.claim)
      .where('status', '=', 'running')
      .execute()
      .catch(() => {});
    return n;
  }
}

/**
 * Our own failure on every try: the execution ends `failed` (automation.failed, the conversation
 * freed) and a dead letter records it in the same transaction; the operator may retry it.
 */
async function die(c: Ctx, error: string, tries = c.row.tries): Promise<void> {
  const firstFailedAt = c.row.failed_at ?? c.s.clock.now();
  await end(c, {
    status: 'failed',
    error: executionErrors.ourFailure,
    deadLetter: { queue: 'executions', itemId: c.row.id, accountId: c.account.id, firstFailedAt, attempts: tries, lastError: error },
  });
  logDeath(c.s, { queue: 'executions', itemId: c.row.id, attempts: tries, lastError: error });
}

/**
 * Operator's retry of a dead execution (admin/dead-letters.ts): running again from the step where
 * it stopped, due now, with its tries counted afresh and the conversation handled by the
 * automation. False when it is not failed any more, or its conversation has another running
 * execution or an agent's running stretch (the caller answers 409).
 */
export async function reviveExecution(trx: Trx, itemId: string, now: Date): Promise<boolean> {
  const dead = await trx
    .selectFrom('automation_executions as e')
    .innerJoin('automations as a', 'a.id', 'e.automation_id')
    .select(['e.conversation_id', 'a.id', 'a.name'])
    .where('e.id', '=', itemId)
    .where('e.status', '=', 'failed')
    .executeTakeFirst();
  if (!dead || (await lockConversationBusy(trx, dead.conversation_id))) return false;
  await trx
    .updateTable('automation_executions')
    .set({
      status: 'running',
      error: null,
      ended_at: null,
      claim: null,
      run_at: now,
      tries: 0,
      failed_at: null,
      last_error: null,
      updated_at: now,
    })
    .where('id', '=', itemId)
    .execute();
  await setHandling(trx, dead.conversation_id, { type: 'automation', id: dead.id, name: dead.name, caseId: null });
  return true;
}

/** One transition of the execution; 'rest' when it waits or ended. */
async function turn(c: Ctx): Promise<'go' | 'rest'> {
  const now = c.s.clock.now();
  const step = c.steps.find((x) => x.id === c.row.current_step_id);
  if (!step) {
    if (c.row.current_step_id === null) return end(c, { status: 'completed' });
    return end(c, { status: 'failed', error: executionErrors.stepMissing(c.row.current_step_id) });
  }
  if (c.row.state === 'asked') return answer(c, step as StepOf<'ask'>, now);
  if (c.row.state === 'waiting') {
    if (c.row.deadline_at && now < c.row.deadline_at) return parkUntil(c, c.row.deadline_at);
    await write(c, { set: moveTo(nextOf(step, c.steps)), closeOpenLog: { stepId: step.id, outcome: 'ok' } });
    return 'go';
  }
  try {
    return await runStep(c, step, now);
  } catch (err) {
    if (err instanceof QuotaExceeded) {
      const error = err.resource === 'automationSteps' ? executionErrors.stepsQuota(err.limit) : executionErrors.httpQuota(err.limit);
      return end(c, { status: 'failed', error });
    }
    throw err;
  }
}

async function runStep(c: Ctx, step: Step, now: Date): Promise<'go' | 'rest'> {
  const next = nextOf(step, c.steps);
  switch (step.type) {
    case 'send':
      return sendStep(c, step, step.text !== undefined ? { text: step.text } : { template: step.template! }, () => ({
        set: moveTo(next),
        outcome: 'ok',
      }));
    case 'ask': {
      const options = step.options?.length ? `\n\n${step.options.map((o, i) => `${i + 1}. ${o}`).join('\n')}` : '';
      return sendStep(c, step, { text: `${step.text}${options}` }, () => {
        const deadline = new Date(c.s.clock.ms() + (step.timeoutMinutes ?? 1440) * 60_000);
        return { set: { state: 'asked', deadline_at: deadline }, park: deadline, outcome: 'asked' };
      });
    }
    case 'http':
      return outbound(c, step, async () => {
        const r = await httpStep(c.s, c.agent, step, renderCtx(c), c.row.hop + 1);
        const variables = step.save ? { ...c.row.variables, [step.save]: r.result } : c.row.variables;
        if (r.ok) return { set: moveTo(next), variables, outcome: 'ok', detail: { status: r.result.status } };
        const detail = { reason: r.reason, status: r.result.status };
        if (step.onError) return { set: moveTo(step.onError), variables, outcome: 'error', detail };
        return { fail: r.error, detail, variables };
      });
    case 'condition': {
      // A regex saved before RE2 that it cannot compile (a lookahead…) is false, said in the log.
      const { yes, problem } = conditionOutcome(step.if, renderCtx(c));
      const to = yes ? (step.then ?? next) : (step.else ?? next);
      const detail = problem ? { reason: problem === 'unsupported' ? 'regex_unsupported' : 'regex_invalid' } : null;
      await write(c, { set: moveTo(to), log: { step, outcome: yes ? 'then' : 'else', detail }, count: true });
      return 'go';
    }
    case 'set_attribute': {
      const value = renderText(step.value, renderCtx(c));
      try {
        await write(c, {
          before: async (trx) => {
            c.contact = await setContactAttribute(trx, c.account.id, c.contact.id, step.attribute, value, now);
          },
          set: moveTo(next),
          log: { step, outcome: 'ok' },
          count: true,
        });
      } catch (err) {
        const reason = refusalText(err);
        if (reason === null) throw err;
        return end(c, { status: 'failed', error: reason, log: { step, outcome: 'failed' } });
      }
      return 'go';
    }
    case 'wait': {
      const deadline = new Date(c.s.clock.ms() + step.minutes * 60_000);
      await write(c, {
        set: { state: 'waiting', deadline_at: deadline },
        log: { step, outcome: 'waiting', open: true },
        count: true,
        park: deadline,
      });
      return 'rest';
    }
    case 'stage': {
      let outcome = 'ok';
      try {
        await write(c, {
          lock: (trx) => lockOpenCase(trx, c.row.conversation_id),
          after: async (trx, open) => {
            if (!open) outcome = 'no_case';
            else await moveToStage(trx, c.account.id, open, { stageId: step.stageId }, now);
          },
          set: moveTo(next),
          log: { step, outcome: () => outcome },
          count: true,
        });
      } catch (err) {
        const reason = refusalText(err);
        if (reason === null) throw err;
        return end(c, { status: 'failed', error: reason, log: { step, outcome: 'failed' } });
      }
      return 'go';
    }
    case 'handoff':
      return end(c, { status: 'handed_off', log: { step, outcome: 'ok' }, note: step.note ? renderText(step.note, renderCtx(c)) : null });
    case 'end':
      return end(c, { status: 'completed', log: { step, outcome: 'ok' } });
    case 'agent':
      return handToAgent(c, step);
  }
}

/**
 * An `agent` step: the execution completes and the agent's stretch starts in the same transaction
 * (docs/agents.md "Stretches"); a deleted or paused agent fails the execution.
 */
async function handToAgent(c: Ctx, step: StepOf<'agent'>): Promise<'rest'> {
  const agent = await c.s.db
    .selectFrom('agents')
    .select(['id', 'name', 'version', 'status', 'deleted_at'])
    .where('id', '=', step.agentId)
    .where('account_id', '=', c.account.id)
    .executeTakeFirst();
  if (!agent || agent.deleted_at) return end(c, { status: 'failed', error: executionErrors.agentGone, log: { step, outcome: 'failed' } });
  if (agent.status !== 'active') return end(c, { status: 'failed', error: executionErrors.agentPaused, log: { step, outcome: 'failed' } });
  // The stretch's messages start with the one that started the execution (inserted just before
  // it), or with the execution itself when it was started otherwise (the API, a webhook).
  const trigger = c.row.trigger === 'keyword' || c.row.trigger === 'first_message';
  const first = trigger
    ? await c.s.db
        .selectFrom('messages')
        .select('id')
        .where('conversation_id', '=', c.row.conversation_id)
        .where('direction', '=', 'inbound')
        .where('id', '<', c.row.id)
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst()
    : undefined;
  let outcome = 'ok';
  await end(c, {
    status: 'completed',
    log: { step, outcome: () => outcome },
    agent: { ...agent, sinceId: first?.id ?? c.row.id },
    agentBusy: () => (outcome = 'agent_busy'),
  });
  c.s.agents.wake();
  return 'rest';
}
