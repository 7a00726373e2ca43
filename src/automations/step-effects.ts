// The steps with an outside effect (docs/automations.md "Durability"): `send` and `ask` (a message
// through the one send path) and `http` (a request). Each is recorded as started (`effect_step`,
// counted) before the message or request goes out — a message's start commits in the send's own
// transaction, with the message — and its end is written with the execution's next transaction
// (finishLater). A claim that finds `effect_step` set (a crash in between) fails the execution
// "interrumpida" instead of repeating the effect (step-end.ts).
import type { RawBuilder } from 'kysely';
import type { Trx } from '../db/index.js';
import type { ExecutionRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { newId } from '../lib/ids.js';
import type { AutomationResource } from '../limits/usage.js';
import { MessageCapFull } from '../messages/outbound-guard.js';
import { sendInConversation } from '../messages/send.js';
import type { SendOrigin } from '../messages/send-store.js';
import type { StepOf } from './flow.js';
import { end } from './step-end.js';
import {
  type Ctx,
  count,
  countsLater,
  type ExecUpdate,
  executionWriteCtes,
  Lost,
  lease,
  parkUntil,
  refusalText,
  renderCtx,
  updateExecution,
  write,
} from './step-writes.js';
import { renderText } from './text.js';

type SendResult =
  | { ok: true; messageId: string }
  /** The account's message minute cap is full: nothing was stored; the step runs again at `wait`. */
  | { wait: Date }
  | { ok: false; error: string; detail: Record<string, unknown> /** the message (and the step's start) was stored */; stored: boolean };

/**
 * Sends as POST /messages would (window, template, opt-out), from the execution's number;
 * `start` runs inside the transaction that stores the message, or `composed` in its one statement.
 */
async function sendFor(
  c: Ctx,
  what: { text: string } | { template: { id: string; variables?: Record<string, string> | undefined } },
  start: (trx: Trx) => Promise<void>,
  composed: SendOrigin['composed'],
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
      origin: { source: 'automation', by: { id: c.automation.id, name: c.automation.name }, inTransaction: start, composed },
    });
    if (commentId) c.row = { ...c.row, reply_comment_id: null };
    return { ok: true, messageId: m.id };
  } catch (err) {
    if (err instanceof MessageCapFull) return { wait: err.until };
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
export async function sendStep(
  c: Ctx,
  step: StepOf<'send'> | StepOf<'ask'>,
  what: { text: string } | { template: { id: string; variables?: Record<string, string> | undefined } },
  then: () => { set: ExecUpdate; park?: Date; outcome: string },
): Promise<'go' | 'rest'> {
  const logId = newId();
  const started = c.s.clock.now();
  let counted: AutomationResource[] = [];
  const startSet: ExecUpdate = {
    effect_step: logId,
    run_at: lease(c),
    ...(step.type === 'ask' ? { inputs_pending: 0 } : {}),
    // A comment automation's first send is the comment's one private reply.
    ...(c.row.reply_comment_id ? { reply_comment_id: null } : {}),
  };
  const startLog = { log: { step, outcome: null, id: logId, open: true, at: started } };
  // A send without a quota to take writes its start in the message's own statement: one round
  // trip. An ask drops earlier input after the execution's lock, which needs a statement of its
  // own (it must see an answer committed meanwhile): it takes the transaction.
  const later = step.type === 'send' ? countsLater(c, false) : null;
  const composed = later
    ? (gate: RawBuilder<unknown>) => {
        counted = later;
        return { ctes: executionWriteCtes(c, startSet, startLog, gate), rows: 'x', lost: () => new Lost() };
      }
    : undefined;
  const r = await sendFor(
    c,
    what,
    async (trx) => {
      c.later = [];
      await updateExecution(trx, c, startSet, startLog);
      // After the execution row is locked: an answer committed meanwhile is either dropped here or
      // counted in inputs_pending after this write, never left unread with inputs_pending at 0.
      if (step.type === 'ask') await dropInput(trx, c.row.id);
      await count(trx, c, false);
      counted = c.later;
    },
    composed,
  );
  // Past the account's messages per minute the step waits for the next minute, not lost: the claim
  // is given back (with the end of the step before), due again then.
  if ('wait' in r) return parkUntil(c, r.wait);
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
export async function outbound(c: Ctx, step: StepOf<'http'>, effect: () => Promise<EffectResult>): Promise<'go' | 'rest'> {
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
