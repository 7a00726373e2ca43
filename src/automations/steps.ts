// Running one claimed execution (docs/automations.md "Steps", "Durability"). Every change of an
// execution is one transaction that checks the claim (`WHERE id AND claim AND status='running'`):
// a runner whose execution was cancelled, or whose claim lapsed and was taken, writes nothing.
//
// Steps without an outbound effect (condition, set_attribute, wait, stage, handoff, end) are one
// transaction each: the step's own rows, the execution's new position, the step log and the
// month's step count commit together. A `send`, `ask` or `http` step is recorded as started
// (`effect_step`, counted) before the message or request goes out — a message's start commits in
// the send's own transaction, with the message — and its end is written with the execution's next
// transaction (finishLater). A claim that finds `effect_step` set (a crash in between) fails the
// execution "interrumpida" instead of repeating the effect.
//
// Row locks, in the order of docs/architecture.md: the step's contact / conversation / case, then
// the execution row, then the month's automation counter, then events.
import { sql, type Updateable } from 'kysely';
import type { Agent } from 'undici';
import { startStretch } from '../agents/stretches.js';
import { lockOpenCase, openCaseOf } from '../cases/open.js';
import { moveToStage } from '../cases/service.js';
import { setContactAttribute } from '../contacts/service.js';
import { addNote, clearHandling, lockConversationBusy, setHandling } from '../conversations/service.js';
import type { Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { AccountRow, AgentRow, AutomationExecutionsTable, AutomationRow, ContactRow, ExecutionRow } from '../db/types.js';
import { ApiError, ValidationError } from '../http/errors.js';
import { executionErrors } from '../http/messages.es-AR.js';
import { type Death, describeFailure, LAPSED, logDeath, maxTries, recordDeath, retryAt } from '../jobs/dead-letters.js';
import { newId } from '../lib/ids.js';
import { quotaPeriod } from '../limits/period.js';
import { effectiveLimits } from '../limits/plans.js';
import { type AutomationResource, addAutomationUsage } from '../limits/usage.js';
import { sendInConversation } from '../messages/send.js';
import type { Services } from '../services.js';
import { emitEvent } from '../webhooks/outbox.js';
import { nextOf, type Step, type StepOf } from './flow.js';
import { httpStep } from './http-step.js';
import { conditionOutcome, normalizeText, type TextContext as RenderContext, renderText } from './text.js';

/** How long a claim holds an execution: longer than any one step (an http step is ≤ 15 s). */
export const LEASE_MS = 120_000;
/** Re-asks of an `ask` with options before the execution fails (automations.md: at most twice). */
const MAX_REASKS = 2;

/** The claim was lost (cancelled, or lapsed and taken): stop without writing. */
class Lost extends Error {}
/** The month's quota is used up: the step did not run. */
class QuotaExceeded extends Error {
  constructor(
    readonly resource: AutomationResource,
    readonly limit: number,
  ) {
    super(resource);
  }
}

/** A claimed execution with what its run reads first (one statement: runner.ts `claim`). */
export interface Claimed {
  row: ExecutionRow;
  automation: AutomationRow;
  contact: ContactRow;
  account: AccountRow;
}

/** What a run needs besides the execution row, loaded once per claim. */
interface Ctx {
  s: Services;
  agent: Agent;
  account: AccountRow;
  automation: AutomationRow;
  steps: Step[];
  contact: ContactRow;
  /** The execution as this runner last wrote it. */
  row: ExecutionRow;
  /** Usage of accounts without a quota, counted once the current transaction commits. */
  later: AutomationResource[];
  /** A finished send or request whose end the next transaction records (finishLater). */
  finish?: { log: { id: string; outcome: string; detail: Record<string, unknown> | null }; set: ExecUpdate } | undefined;
}

type ExecUpdate = Updateable<AutomationExecutionsTable>;

const renderCtx = (c: Ctx): RenderContext => ({
  variables: c.row.variables,
  attributes: c.contact.attributes,
  contact: { name: c.contact.name, phone: c.contact.phone },
});

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

/** The Spanish text of a refusal (a send, an attribute, a stage): what the execution fails with. */
function refusalText(err: unknown): string | null {
  if (err instanceof ApiError) return err.message;
  if (err instanceof ValidationError) return err.problems.map((p) => p.message).join(' ');
  return null;
}

type SendResult =
  | { ok: true; messageId: string }
  | { ok: false; error: string; detail: Record<string, unknown> /** the message (and the step's start) was stored */; stored: boolean };

/**
 * Sends as POST /messages would (window, template, opt-out), from the execution's number;
 * `start` runs inside the transaction that stores the message.
 */
async function sendFor(
  c: Ctx,
  what: { text: string } | { template: { id: string; variables?: Record<string, string> | undefined } },
  start: (trx: Trx) => Promise<void>,
): Promise<SendResult> {
  const ctx = renderCtx(c);
  try {
    // On the conversation's own channel: WhatsApp from its number, or Instagram (messages/send.ts).
    const commentId = c.row.reply_comment_id;
    const m = await sendInConversation(c.s, c.account, {
      conversationId: c.row.conversation_id,
      known: { phoneNumberId: c.row.phone_number_id, phone: c.contact.phone },
      commentId,
      ...('text' in what
        ? { text: renderText(what.text, ctx) }
        : {
            template: {
              id: what.template.id,
              variables: Object.fromEntries(Object.entries(what.template.variables ?? {}).map(([k, v]) => [k, renderText(v, ctx)])),
            },
          }),
      origin: { source: 'automation', by: { id: c.automation.id, name: c.automation.name }, inTransaction: start },
    });
    if (commentId) c.row = { ...c.row, reply_comment_id: null };
    return { ok: true, messageId: m.id };
  } catch (err) {
    const reason = refusalText(err);
    if (reason === null) throw err;
    // A refusal after the message was stored (the provider's) names the message.
    const messageId = err instanceof ApiError ? err.extra.messageId : undefined;
    return { ok: false, error: reason, detail: messageId ? { messageId } : {}, stored: messageId !== undefined };
  }
}

/**
 * A `send` or `ask` step. Its start (the step log row, `effect_step`, the month's count) commits
 * in the transaction that stores the message, before the provider call; its end is written with
 * the execution's next transaction (or now, when the step parks: an ask waits for its answer).
 * A refusal before the message is stored fails the execution without a start; one after (the
 * provider's) finishes the started step as failed.
 */
async function sendStep(
  c: Ctx,
  step: StepOf<'send'> | StepOf<'ask'>,
  what: { text: string } | { template: { id: string; variables?: Record<string, string> | undefined } },
  then: () => { set: ExecUpdate; park?: Date; outcome: string },
): Promise<'go' | 'rest'> {
  const logId = newId();
  const started = c.s.clock.now();
  let counted: AutomationResource[] = [];
  const r = await sendFor(c, what, async (trx) => {
    c.later = [];
    await updateExecution(trx, c, {
      effect_step: logId,
      run_at: lease(c),
      ...(step.type === 'ask' ? { inputs_pending: 0 } : {}),
      // A comment automation's first send is the comment's one private reply.
      ...(c.row.reply_comment_id ? { reply_comment_id: null } : {}),
    });
    // After the execution row is locked: an answer committed meanwhile is either dropped here or
    // counted in inputs_pending after this write, never left unread with inputs_pending at 0.
    if (step.type === 'ask') await dropInput(trx, c.row.id);
    await insertLog(trx, c, { step, outcome: null, id: logId, open: true, at: started });
    await count(trx, c, false);
    counted = c.later;
  });
  // The start committed with the message: its counts without a quota are recorded now.
  if (r.ok || r.stored) {
    for (const resource of counted) c.s.usage.countLater(c.account.id, resource);
    // A pending finish of the step before went with the message's transaction.
    c.finish = undefined;
  }
  c.later = [];
  if (!r.ok) {
    const detail = { ...r.detail, error: r.error };
    if (r.stored) return end(c, { status: 'failed', error: r.error, finishLog: { id: logId, outcome: 'failed', detail } });
    return end(c, { status: 'failed', error: r.error, log: { step, outcome: 'failed', detail } });
  }
  c.row.effect_step = logId;
  const t = then();
  const detail = { messageId: r.messageId };
  if (t.park) {
    await write(c, {
      set: { ...t.set, effect_step: null },
      finishLog: { id: logId, outcome: t.outcome, detail },
      park: t.park,
      parkIfInput: true,
    });
    return 'rest';
  }
  finishLater(c, { id: logId, outcome: t.outcome, detail }, t.set);
  return 'go';
}

type EffectResult =
  | { set: ExecUpdate; outcome: string; detail?: Record<string, unknown>; variables?: Record<string, unknown> }
  | { fail: string; detail?: Record<string, unknown>; variables?: Record<string, unknown> };

/**
 * An `http` step: recorded as started (and counted) in one transaction, then the request, then
 * its end written with the execution's next transaction.
 */
async function outbound(c: Ctx, step: StepOf<'http'>, effect: () => Promise<EffectResult>): Promise<'go' | 'rest'> {
  const logId = newId();
  await write(c, {
    set: { effect_step: logId },
    log: { step, outcome: null, id: logId, open: true },
    count: true,
    countHttp: true,
  });
  c.row.effect_step = logId;
  const r = await effect();
  if ('fail' in r) {
    if (r.variables) c.row.variables = r.variables;
    return end(c, { status: 'failed', error: r.fail, finishLog: { id: logId, outcome: 'failed', detail: { ...r.detail, error: r.fail } } });
  }
  finishLater(c, { id: logId, outcome: r.outcome, detail: r.detail ?? null }, r.set, r.variables);
  return 'go';
}

/**
 * The effect is done: the execution moves on in memory, and its next transaction (the next
 * step's, a park or the end) records the step's end and the new position together — one commit
 * less per send or request. A crash before that commit leaves the step started, so the execution
 * fails "interrumpida" rather than repeat it.
 */
function finishLater(
  c: Ctx,
  log: { id: string; outcome: string; detail: Record<string, unknown> | null },
  set: ExecUpdate,
  variables?: Record<string, unknown>,
): void {
  const next = { ...set, ...(variables ? { variables: JSON.stringify(variables) } : {}), effect_step: null };
  c.finish = { log, set: c.finish ? { ...c.finish.set, ...next } : next };
  c.row = { ...c.row, ...(set as Partial<ExecutionRow>), effect_step: null, ...(variables ? { variables } : {}) };
}

/** Input that arrived before an ask's question is not its answer. */
async function dropInput(trx: Trx, executionId: string): Promise<void> {
  await trx.deleteFrom('automation_inputs').where('execution_id', '=', executionId).execute();
}

/** The execution waits for an answer: read the oldest unread input, or time out, or keep waiting. */
async function answer(c: Ctx, step: StepOf<'ask'>, now: Date): Promise<'go' | 'rest'> {
  const outcome = await commit(c, async (trx) => {
    const row = await updateExecution(trx, c, { run_at: lease(c) });
    const input = await trx
      .deleteFrom('automation_inputs')
      .where('seq', '=', (eb) =>
        eb.selectFrom('automation_inputs').select('seq').where('execution_id', '=', c.row.id).orderBy('seq').limit(1),
      )
      .returning(['text', 'message_id'])
      .executeTakeFirst();
    if (!input) {
      if (c.row.deadline_at && now < c.row.deadline_at) {
        // Nothing to read yet: wait for the answer or the deadline (an answer that raced in is due now).
        c.row = await updateExecution(trx, c, {
          claim: null,
          run_at: row.inputs_pending > 0 ? now : c.row.deadline_at,
        });
        return 'rest' as const;
      }
      await insertLog(trx, c, { step, outcome: 'timeout', at: now });
      if (step.timeoutNext) {
        c.row = await updateExecution(trx, c, { ...moveTo(step.timeoutNext), run_at: lease(c) });
        return 'go' as const;
      }
      return 'fail-timeout' as const;
    }
    const text = input.text ?? '';
    const pending = Math.max(0, row.inputs_pending - 1);
    const chosen = step.options?.length ? matchOption(step.options, text) : text;
    if (chosen === null) {
      const attempts = row.attempts + 1;
      await insertLog(trx, c, {
        step,
        outcome: attempts > MAX_REASKS ? 'no_option' : 'retry',
        at: now,
        detail: { messageId: input.message_id },
      });
      if (attempts > MAX_REASKS) return 'fail-options' as const;
      c.row = await updateExecution(trx, c, { state: 'ready', deadline_at: null, attempts, inputs_pending: pending, run_at: lease(c) });
      return 'go' as const;
    }
    const variables = { ...c.row.variables, [step.save]: chosen, respuesta: chosen };
    await insertLog(trx, c, { step, outcome: 'answered', at: now, detail: { messageId: input.message_id } });
    c.row = await updateExecution(trx, c, {
      ...moveTo(nextOf(step, c.steps)),
      variables: JSON.stringify(variables),
      attempts: 0,
      inputs_pending: pending,
      run_at: lease(c),
    });
    return 'go' as const;
  });
  if (outcome === 'fail-timeout') return end(c, { status: 'failed', error: executionErrors.noAnswer });
  if (outcome === 'fail-options') return end(c, { status: 'failed', error: executionErrors.noOption });
  return outcome;
}

/** The option an answer names: its text (normalised) or its number in the list; null when none. */
function matchOption(options: string[], text: string): string | null {
  const t = normalizeText(text);
  const byText = options.find((o) => normalizeText(o) === t);
  if (byText !== undefined) return byText;
  const n = /^\d{1,2}$/.test(t) ? Number(t) : 0;
  return n >= 1 && n <= options.length ? (options[n - 1] as string) : null;
}

const moveTo = (stepId: string | null): ExecUpdate => ({ current_step_id: stepId, state: 'ready', deadline_at: null, attempts: 0 });
const lease = (c: Ctx): Date => new Date(c.s.clock.ms() + LEASE_MS);

/** Writes the execution's new fields if this runner still holds it; else Lost. */
async function updateExecution(trx: Trx, c: Ctx, set: ExecUpdate): Promise<ExecutionRow> {
  const f = c.finish;
  if (f) {
    const detail = f.log.detail ? JSON.stringify(f.log.detail) : null;
    await trx
      .updateTable('automation_steps')
      .set({ ended_at: c.s.clock.now(), outcome: f.log.outcome, detail })
      .where('id', '=', f.log.id)
      .execute();
  }
  // Every write of the claim is progress: the tries of our own failures count afresh.
  const row = await trx
    .updateTable('automation_executions')
    .set({ ...f?.set, tries: 0, failed_at: null, last_error: null, ...set, updated_at: c.s.clock.now() })
    .where('id', '=', c.row.id)
    .where('claim', '=', c.row.claim)
    .where('status', '=', 'running')
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new Lost();
  return row;
}

interface LogEntry {
  step: Step;
  outcome: string | null | (() => string);
  id?: string;
  /** Not finished yet (an effect in progress, a wait). */
  open?: boolean;
  at?: Date;
  detail?: Record<string, unknown> | null;
}

async function insertLog(trx: Trx, c: Ctx, e: LogEntry): Promise<void> {
  const at = e.at ?? c.s.clock.now();
  await trx
    .insertInto('automation_steps')
    .values({
      id: e.id ?? newId(),
      execution_id: c.row.id,
      step_id: e.step.id,
      type: e.step.type,
      started_at: at,
      ended_at: e.open ? null : at,
      outcome: typeof e.outcome === 'function' ? e.outcome() : e.outcome,
      detail: e.detail ? JSON.stringify(e.detail) : null,
    })
    .execute();
}

/**
 * Counts one step (and one HTTP request) of the month unless it is a test; QuotaExceeded past the
 * plan's quota. With a quota the count is exact: the account's counter row is incremented in the
 * step's transaction and stays locked until commit, so two executions cannot both take the last
 * step. Without one (enterprise, or an override to null) nothing needs deciding: the count is
 * kept in memory and written in batches like API calls, after the step commits (`c.later`), and
 * the account's executions do not queue on one row.
 */
async function count(trx: Trx, c: Ctx, http: boolean): Promise<void> {
  if (c.row.test) return;
  const limits = effectiveLimits(c.account.plan, c.account.limits);
  const period = quotaPeriod(c.s.clock.now());
  const take = async (resource: AutomationResource, limit: number | null) => {
    if (limit === null) {
      c.later.push(resource);
      return;
    }
    const used = await addAutomationUsage(trx, c.account.id, period, resource);
    if (used > limit) throw new QuotaExceeded(resource, limit);
  };
  await take('automationSteps', limits.automationStepsPerMonth);
  if (http) await take('automationHttpRequests', limits.automationHttpRequestsPerMonth);
}

/** Runs a transaction of the execution; counts kept for after its commit are recorded then. */
async function commit<T>(c: Ctx, fn: (trx: Trx) => Promise<T>): Promise<T> {
  const result = await transaction(c.s.db, (trx) => {
    // A retried transaction starts over: what an earlier attempt counted did not happen.
    c.later = [];
    return fn(trx);
  });
  for (const resource of c.later) c.s.usage.countLater(c.account.id, resource);
  c.later = [];
  // The pending finish (finishLater) went with it.
  c.finish = undefined;
  return result;
}

interface Write<L> {
  /** Rows the step locks before the execution (a contact, a conversation). */
  before?: ((trx: Trx) => Promise<void>) | undefined;
  /** Or: lock something first and act on it after the execution row (a case: its events come last). */
  lock?: (trx: Trx) => Promise<L>;
  after?: (trx: Trx, locked: L) => Promise<void>;
  set: ExecUpdate;
  log?: LogEntry;
  finishLog?: { id: string; outcome: string; detail: Record<string, unknown> | null };
  closeOpenLog?: { stepId: string; outcome: string };
  count?: boolean;
  countHttp?: boolean;
  /** Releases the claim: due again at this time. */
  park?: Date | undefined;
  /** An ask that parks is due at once when an answer came in meanwhile. */
  parkIfInput?: boolean;
  at?: Date;
}

/** One transaction of a running execution (the order of locks in the file header). */
async function write<L>(c: Ctx, w: Write<L>): Promise<void> {
  const now = w.at ?? c.s.clock.now();
  c.row = await commit(c, async (trx) => {
    if (w.before) await w.before(trx);
    const locked = w.lock ? await w.lock(trx) : (undefined as L);
    const parked = w.park ? { claim: null, run_at: w.parkIfInput ? sqlDueIfInput(w.park, now) : w.park } : { run_at: lease(c) };
    const row = await updateExecution(trx, c, { ...w.set, ...parked });
    if (w.finishLog) {
      await trx
        .updateTable('automation_steps')
        .set({ ended_at: now, outcome: w.finishLog.outcome, detail: w.finishLog.detail ? JSON.stringify(w.finishLog.detail) : null })
        .where('id', '=', w.finishLog.id)
        .execute();
    }
    if (w.closeOpenLog) {
      await trx
        .updateTable('automation_steps')
        .set({ ended_at: now, outcome: w.closeOpenLog.outcome })
        .where('execution_id', '=', c.row.id)
        .where('step_id', '=', w.closeOpenLog.stepId)
        .where('ended_at', 'is', null)
        .execute();
    }
    // The month's counter row is shared by every execution of the account and stays locked until
    // commit: take it last, so only the step's events (and a stage's log) wait behind it.
    if (w.log && !w.after) await insertLog(trx, c, w.log);
    if (w.count) await count(trx, c, w.countHttp ?? false);
    if (w.after) await w.after(trx, locked);
    // A stage step's outcome is decided in `after`.
    if (w.log && w.after) await insertLog(trx, c, w.log);
    return row;
  });
  c.s.dispatcher.wake();
}

/** Due now when an answer came in while the question was going out, else at the deadline. */
const sqlDueIfInput = (deadline: Date, now: Date): Date =>
  sql<Date>`CASE WHEN inputs_pending > 0 THEN ${now}::timestamptz ELSE ${deadline}::timestamptz END` as unknown as Date;

/** Releases the claim: due again at `at` (a deadline not reached yet). */
async function parkUntil(c: Ctx, at: Date): Promise<'rest'> {
  await commit(c, (trx) => updateExecution(trx, c, { claim: null, run_at: at }));
  return 'rest';
}

/** The process stops: give the execution back, due now (another process or the restart takes it). */
async function park(c: Ctx, now: Date): Promise<void> {
  await commit(c, (trx) => updateExecution(trx, c, { claim: null, run_at: now })).catch((err) => {
    if (!(err instanceof Lost)) throw err;
  });
}

/** A send or http step was started by a claim that never finished it: fail rather than repeat. */
async function interrupted(c: Ctx): Promise<void> {
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
async function end(c: Ctx, e: Ending): Promise<'rest'> {
  const now = c.s.clock.now();
  c.row = await commit(c, async (trx) => {
    const conversationId = c.row.conversation_id;
    if (e.status === 'handed_off') {
      // The conversation's lock comes before any case lock; the open case is only read here.
      const open = await openCaseOf(trx, conversationId);
      const by = { type: 'automation' as const, id: c.automation.id, name: c.automation.name };
      await setHandling(trx, conversationId, { type: 'team', id: null, name: null, caseId: open?.id ?? null });
      if (e.note) await addNote(trx, { accountId: c.account.id, conversationId, caseId: open?.id ?? null, text: e.note, by }, now);
    } else {
      await clearHandling(trx, conversationId, 'automation');
      if (e.agent) {
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
    }
    const row = await updateExecution(trx, c, {
      status: e.status,
      error: e.error ?? null,
      ended_at: now,
      run_at: null,
      claim: null,
      effect_step: null,
      variables: JSON.stringify(c.row.variables),
    });
    if (e.deadLetter) await recordDeath(trx, e.deadLetter, now);
    if (e.finishLog) {
      const detail = e.finishLog.detail ? JSON.stringify(e.finishLog.detail) : null;
      await trx
        .updateTable('automation_steps')
        .set({ ended_at: now, outcome: e.finishLog.outcome, detail })
        .where('id', '=', e.finishLog.id)
        .execute();
    }
    if (e.log) {
      await insertLog(trx, c, e.log);
      // The shared counter row last, before the event (see write()).
      if (e.status !== 'failed') await count(trx, c, false);
    }
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
  c.s.dispatcher.wake();
  return 'rest';
}
