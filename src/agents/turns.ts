// Running a claimed stretch (docs/agents.md "Stretches", "Durability"): one model turn per burst
// of inbound messages, one turn at a time per conversation (the claim), each part a stored step.
//
//   begin   — reads the stretch's latest messages; none unanswered: idle check or rest. A
//             handoff phrase or maxTurns ends the stretch without asking the model. Else a turn
//             row `calling` is stored.
//   call    — the model is asked (outside any transaction); its answer is stored (`decided`)
//             before anything goes out. A crash before that store asks again: nothing left yet.
//   act     — each reply is sent through the one send path; its message and the turn's
//             `replies_started` commit together before the provider call, so a crash never sends
//             a reply twice (a reply in doubt stays as its stored message). Then the goal or the
//             handoff ends the stretch, or the turn is done and the claim released.
//
// Every write checks the claim (`WHERE id AND claim AND status = 'running'`): a runner whose
// stretch ended meanwhile (the team wrote) or whose lease lapsed writes nothing. The writes that
// touch the turn too are one statement each (WITH st AS (UPDATE the stretch …) UPDATE the turn).
import { sql, type Updateable } from 'kysely';
import type { Executor } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { AccountRow, AgentRow, AgentStretchesTable, ContactRow, StretchRow, TurnDecision, TurnRow } from '../db/types.js';
import { ApiError, ValidationError } from '../http/errors.js';
import { agentTexts } from '../http/messages.es-AR.js';
import { describeFailure, LAPSED, logDeath, maxTries, recordDeath, retryAt } from '../jobs/dead-letters.js';
import { newId } from '../lib/ids.js';
import { type ChatMessage, ModelError } from '../llm/types.js';
import { MessageCapFull } from '../messages/outbound-guard.js';
import { sendInConversation } from '../messages/send.js';
import { boundReplies, TEXT_BOUNDS } from '../messages/text-limits.js';
import type { Services } from '../services.js';
import { agentTools, interpretToolCalls, matchesHandoffPhrase, systemPrompt } from './prompt.js';
import { wakeReviews } from './reviews.js';
import { type StretchMessage, stretchMessages } from './stretch-messages.js';
import { type Ending, endStretch, IDLE_MS } from './stretches.js';

/** A claimed stretch with what a turn reads first (one statement: runner.ts `claim`). */
export interface ClaimedStretch {
  row: StretchRow;
  agent: AgentRow;
  contact: ContactRow;
  account: AccountRow;
  /** Its turn not done yet (a crash left it, or its claim lapsed), if any. */
  turn: TurnRow | null;
}

/** How long a claim holds a stretch: longer than a turn's model call with its retries. */
export const leaseMs = (s: Services): number => s.config.LLM_TIMEOUT_MS * 3 + 65_000;
/** The stretch's latest messages the model sees. */
const HISTORY = 60;

/** The claim was lost (the stretch ended, or the lease lapsed and was taken): stop without writing. */
class Lost extends Error {}

interface Ctx {
  s: Services;
  c: ClaimedStretch;
}

/**
 * Runs one claim of a stretch: the turn a crash left, or a new one for the messages no turn
 * answered (or the idle check). Every path ends by releasing the claim or ending the stretch.
 * Returns the steps taken (1, or 0 when the process is stopping).
 */
export async function runStretch(s: Services, claimed: ClaimedStretch, stopping: () => boolean): Promise<number> {
  const x: Ctx = { s, c: claimed };
  try {
    // Claimed more often than QUEUE_RETRY_SCHEDULE allows without a step done: its process died
    // (or hung) each time. It hands off, as a dead letter, instead of a try more.
    if (claimed.row.tries > maxTries(s)) {
      await die(x, claimed.row.last_error ?? LAPSED, claimed.row.tries - 1);
      return 1;
    }
    if (stopping()) {
      await release(x, s.clock.now());
      return 0;
    }
    const turn = claimed.turn;
    if (!turn) await begin(x);
    else if (turn.status === 'calling')
      await call(x, turn, asChat(await stretchMessages(s.db, claimed.row, { upTo: turn.inbound_until, limit: HISTORY })), null);
    else await act(x, turn);
    return 1;
  } catch (err) {
    if (err instanceof Lost) return 1;
    s.log.warn({ err: { message: (err as Error).message }, stretchId: claimed.row.id }, 'agent turn failed unexpectedly');
    const error = describeFailure(err);
    const at = retryAt(s, x.c.row.tries);
    // After its last try the stretch hands off, as a dead letter; a failure to record that leaves
    // the claim to lapse, and the next claim finds it past its tries.
    if (!at)
      return await die(x, error).then(
        () => 1,
        () => 1,
      );
    const now = s.clock.now();
    // Due at the back-off, not at once: the message the failed turn was for is still unanswered.
    await update(s.db, x, {
      claim: null,
      run_at: at,
      tries: x.c.row.tries,
      failed_at: x.c.row.failed_at ?? now,
      last_error: error,
    }).catch(() => {});
    return 1;
  }
}

/**
 * Our own failure on every try: the stretch hands the conversation to the team ("El agente no
 * pudo seguir…", agent.handed_off) and a dead letter records it in the same transaction.
 */
async function die(x: Ctx, error: string, tries = x.c.row.tries): Promise<void> {
  const { row } = x.c;
  const now = x.s.clock.now();
  const ended = await transaction(x.s.db, async (trx) => {
    const e = await endStretch(
      trx,
      row,
      x.c.agent,
      { by: 'handoff', reason: '', summary: agentTexts.ourFailure, event: true },
      row.claim,
      now,
    );
    if (e)
      await recordDeath(
        trx,
        {
          queue: 'agent_turns',
          itemId: row.id,
          accountId: row.account_id,
          firstFailedAt: row.failed_at ?? now,
          attempts: tries,
          lastError: error,
        },
        now,
      );
    return e;
  });
  if (!ended) return;
  logDeath(x.s, { queue: 'agent_turns', itemId: row.id, attempts: tries, lastError: error });
  x.s.dispatcher.wake();
  wakeReviews(x.s);
}

/** The UPDATE of the stretch while this runner holds it, for a statement that composes it (WITH st AS …). */
function holdSql(x: Ctx, set: Updateable<AgentStretchesTable>) {
  // Every write of the claim is progress: the tries of our own failures count afresh (unless set).
  return x.s.db
    .updateTable('agent_stretches')
    .set({ tries: 0, failed_at: null, last_error: null, ...set, updated_at: x.s.clock.now() })
    .where('id', '=', x.c.row.id)
    .where('claim', '=', x.c.row.claim)
    .where('status', '=', 'running')
    .returningAll();
}

/** Writes the stretch's fields if this runner still holds it; else Lost. */
async function update(trx: Executor, x: Ctx, set: Updateable<AgentStretchesTable>): Promise<StretchRow> {
  const row = await trx.executeQuery(holdSql(x, set).compile());
  const first = row.rows[0];
  if (!first) throw new Lost();
  x.c.row = first;
  return first;
}

const lease = (x: Ctx): Date => new Date(x.s.clock.ms() + leaseMs(x.s));

/**
 * When the stretch is due again as its claim is released: at once when a customer's message is
 * unanswered — one after `answered` already committed, or one whose inbound transaction set
 * `pending` while the claim was held (the claim clears it; a message that commits after this
 * statement finds the claim released and makes the stretch due itself) — else at the idle
 * deadline. A column update computed in SQL (typed as the column's value, as steps.ts does).
 */
const dueAgainSql = (x: Ctx, now: Date, answered: string | null, atLatest?: Date): Date => {
  const unanswered = sql`EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = ${x.c.row.conversation_id}
    AND m.direction = 'inbound' AND m.type <> 'reaction' AND m.id >= ${x.c.row.since_id}
    AND (${answered}::uuid IS NULL OR m.id > ${answered}::uuid))`;
  const due = sql`CASE WHEN pending OR ${unanswered} THEN ${now}::timestamptz ELSE last_activity_at + ${`${IDLE_MS} milliseconds`}::interval END`;
  return (atLatest ? sql`LEAST(${due}, ${atLatest}::timestamptz)` : due) as unknown as Date;
};

/** Gives the stretch back: due at `at`, or at once when a message came in meanwhile. */
async function release(x: Ctx, at: Date): Promise<void> {
  const answered = x.c.turn?.inbound_until ?? x.c.row.answered_until;
  await update(x.s.db, x, { claim: null, run_at: dueAgainSql(x, x.s.clock.now(), answered, at) });
}

/** The messages as the model reads them: the customer's as `user`, the business's as `assistant`. */
const asChat = (rows: StretchMessage[]): ChatMessage[] =>
  rows.map((m) =>
    m.direction === 'inbound'
      ? { role: 'user' as const, content: m.text ?? `[${m.type}]` }
      : { role: 'assistant' as const, content: m.text ?? (m.template_name ? `[plantilla ${m.template_name}]` : `[${m.type}]`) },
  );

/**
 * A claim with no turn in progress. The claim cleared `pending` before these reads (runner.ts), so
 * a message committed after them is found by the release (dueAgainSql). No transaction: each
 * write is one statement that checks the claim.
 */
async function begin(x: Ctx): Promise<void> {
  const now = x.s.clock.now();
  const { agent, row } = x.c;
  const recent = await stretchMessages(x.s.db, row, { limit: HISTORY });
  // The customer's messages no turn answered yet (a turn answers all of them, however many).
  const unanswered = recent.filter((m) => m.direction === 'inbound' && (row.answered_until === null || m.id > row.answered_until));
  const newest = unanswered.at(-1);
  if (!newest) {
    if (now.getTime() - row.last_activity_at.getTime() >= IDLE_MS) return end(x, { by: 'idle' });
    await update(x.s.db, x, { claim: null, run_at: dueAgainSql(x, now, row.answered_until) });
    return;
  }
  if (agent.deleted_at !== null || agent.status !== 'active') {
    return end(x, { by: 'handoff', reason: agentTexts.agentOff, summary: '', event: true });
  }
  if (unanswered.some((m) => m.text !== null && matchesHandoffPhrase(agent, m.text))) {
    return end(x, { by: 'handoff', reason: agentTexts.phraseHandoff, summary: '', event: true });
  }
  if (row.turns >= agent.max_turns) {
    return end(x, { by: 'handoff', reason: agentTexts.maxTurns(agent.max_turns), summary: '', event: true });
  }
  // The turn's row and the stretch's count, in one statement (the stretch first, as everywhere).
  const r = await sql<TurnRow>`
    WITH st AS (${holdSql(x, { turns: row.turns + 1, run_at: lease(x) })})
    INSERT INTO agent_turns (id, stretch_id, n, inbound_until, started_at)
    SELECT ${newId()}::uuid, st.id, ${row.turns + 1}, ${newest.id}::uuid, ${now}::timestamptz FROM st
    RETURNING *`.execute(x.s.db);
  const turn = r.rows[0];
  if (!turn) throw new Lost();
  x.c.turn = turn;
  return call(x, turn, asChat(recent), (unanswered[0] as StretchMessage).created_at);
}

/** What a turn leaves of the model's budget for the service's own work after the call (the send or the handoff's commit). */
const AFTER_CALL_MS = 100;

/**
 * "every customer gets a hand-off within LLM_TIMEOUT_MS × 3 + 5 s": the model call gets that
 * budget less what the customer has waited already (the inbound, the runner's claim) and a little
 * for what follows the call — at least one whole try. `since`: the oldest message this turn
 * answers (null: a turn resumed after a crash, which gets the whole budget).
 */
function budgetOf(x: Ctx, since: Date | null, whole: number): number {
  const waited = since === null ? 0 : Math.max(0, x.s.clock.ms() - since.getTime());
  return Math.max(x.s.config.LLM_TIMEOUT_MS, whole - waited - AFTER_CALL_MS);
}

async function call(x: Ctx, turn: TurnRow, history: ChatMessage[], since: Date | null): Promise<void> {
  const { agent, contact, row } = x.c;
  const llm = x.s.llm;
  let decision: TurnDecision;
  let toolCalls: { name: string; arguments: Record<string, unknown> }[];
  try {
    if (llm === null) throw new ModelError('no language model is configured');
    const system = systemPrompt(agent, {
      contactName: contact.name,
      attributes: contact.attributes,
      gathered: row.goal_data ?? {},
      now: x.s.clock.now(),
    });
    const result = await llm.chat({
      model: agent.model,
      messages: [{ role: 'system', content: system }, ...history],
      tools: agentTools(agent),
      budgetMs: budgetOf(x, since, llm.budgetMs),
    });
    const outcome = interpretToolCalls(agent, result.toolCalls);
    // At most MAX_REPLIES_PER_TURN messages, each within the channel's limit (a WhatsApp
    // conversation has its number; Instagram's has none): what was dropped or cut is recorded.
    const bounded = boundReplies(outcome.replies, TEXT_BOUNDS[row.phone_number_id ? 'whatsapp' : 'instagram']);
    decision = { replies: bounded.messages, goal: outcome.goal, handoff: outcome.handoff, dropped: bounded.dropped, cut: bounded.cut };
    toolCalls = result.toolCalls.map((t) => ({ name: t.name, arguments: t.arguments }));
  } catch (err) {
    if (!(err instanceof ModelError)) throw err;
    // "a customer is never left without an answer or a person" (the turn ends with the stretch)
    x.s.log.info({ stretchId: row.id, reason: err.message }, 'agent hands off: the model did not answer');
    return end(x, { by: 'handoff', reason: '', summary: agentTexts.modelFailed, event: true });
  }
  // The answer is stored before anything goes out, with the lease renewed: one statement.
  const r = await sql<TurnRow>`
    WITH st AS (${holdSql(x, { run_at: lease(x) })})
    UPDATE agent_turns t SET status = 'decided', tool_calls = ${JSON.stringify(toolCalls)}::jsonb, outcome = ${JSON.stringify(decision)}::jsonb
    FROM st WHERE t.id = ${turn.id}
    RETURNING t.*`.execute(x.s.db);
  const decided = r.rows[0];
  if (!decided) throw new Lost();
  x.c.turn = decided;
  return act(x, decided);
}

async function act(x: Ctx, turn: TurnRow): Promise<void> {
  const d = turn.outcome ?? { replies: [], goal: null, handoff: null };
  for (let i = turn.replies_started; i < d.replies.length; i++) {
    const sent = await reply(x, turn, i, d.replies[i] as string);
    // Past the account's messages per minute: the turn waits (still `decided`, its replies sent so
    // far counted in replies_started) and the claim is given back, due at the next minute.
    if (sent instanceof MessageCapFull) {
      await update(x.s.db, x, { claim: null, run_at: sent.until });
      return;
    }
    if (!sent) return end(x, { by: 'handoff', reason: '', summary: agentTexts.modelFailed, event: true });
  }
  // What the goal's fields hold so far: earlier turns' data, then this one's.
  const gathered = { ...(x.c.row.goal_data ?? {}), ...(d.goal?.data ?? {}) };
  if (d.goal && missingRequired(x.c.agent, gathered).length === 0) return end(x, { by: 'goal', data: gathered, summary: d.goal.summary });
  if (d.handoff) return end(x, { by: 'handoff', reason: d.handoff.reason, summary: d.handoff.summary, event: true, data: gathered });
  // A goal_reached without every required field is not the goal: what it brought is kept as
  // gathered (the next turn's prompt shows it, and what is missing) and the stretch goes on.
  // The turn is done and the claim released, in one statement.
  const now = x.s.clock.now();
  const keep = d.goal ? { goal_data: JSON.stringify(gathered) } : {};
  const r = await sql`
    WITH st AS (${holdSql(x, { ...keep, answered_until: turn.inbound_until, claim: null, run_at: dueAgainSql(x, now, turn.inbound_until) })})
    UPDATE agent_turns t SET status = 'done', ended_at = ${now}::timestamptz FROM st WHERE t.id = ${turn.id}
    RETURNING t.id`.execute(x.s.db);
  if (r.rows.length === 0) throw new Lost();
}

/**
 * Sends reply `i` of the turn in the stretch's conversation. Its start (the turn's `replies_started`)
 * commits with the message, before the provider call. Returns false when it could not be sent
 * (refused, or the provider failed): the stretch hands off; MessageCapFull when the account's
 * message minute cap is full (nothing was stored): the turn waits.
 */
async function reply(x: Ctx, turn: TurnRow, i: number, text: string): Promise<boolean | MessageCapFull> {
  const { agent, account, row } = x.c;
  try {
    // On the conversation's own channel: WhatsApp from its number, or Instagram (messages/send.ts).
    await sendInConversation(x.s, account, {
      conversationId: row.conversation_id,
      known: { phoneNumberId: row.phone_number_id, phone: x.c.contact.phone },
      text,
      origin: {
        source: 'agent',
        by: { id: agent.id, name: agent.name },
        // The stretch still ours and the turn's count moved, in the message's transaction.
        inTransaction: async (trx, messageId) => {
          const r = await sql`
            WITH st AS (${holdSql(x, { last_activity_at: x.s.clock.now(), run_at: lease(x) })})
            UPDATE agent_turns t SET replies_started = ${i + 1}, message_ids = t.message_ids || ${JSON.stringify([messageId])}::jsonb
            FROM st WHERE t.id = ${turn.id} AND t.replies_started = ${i}
            RETURNING t.id`.execute(trx);
          if (r.rows.length === 0) throw new Lost();
        },
      },
    });
    return true;
  } catch (err) {
    if (err instanceof MessageCapFull) return err;
    if (err instanceof ApiError || err instanceof ValidationError) {
      x.s.log.info({ stretchId: row.id, code: err instanceof ApiError ? err.code : 'invalid' }, 'agent reply refused');
      return false;
    }
    throw err;
  }
}

/** The goal's required fields without a value in `data`. */
const missingRequired = (agent: AgentRow, data: Record<string, string>): string[] =>
  (agent.goal?.fields ?? []).filter((f) => f.required && !data[f.name]).map((f) => f.name);

/** Ends the stretch under this claim (stretches.ts endStretch); Lost when it is no longer ours. */
async function end(x: Ctx, ending: Ending): Promise<void> {
  const ended = await transaction(x.s.db, (trx) => endStretch(trx, x.c.row, x.c.agent, ending, x.c.row.claim, x.s.clock.now()));
  if (!ended) throw new Lost();
  x.s.dispatcher.wake();
  wakeReviews(x.s);
}
