// Stretches of AI agents (docs/agents.md "Stretches"): the span of one agent's work in one
// conversation. Started by a number's agent on an inbound message or by an automation's `agent`
// step; ended by `goal`, `handoff` (the model, a phrase, maxTurns, a model failure, the team) or
// `idle`. Turns are run by the agent runner (runner.ts, turns.ts); this module owns the rows'
// beginning and end and their effects on the conversation, the case and the events.
//
// Locks, in the order of docs/architecture.md: the conversation, then its open case, then the
// stretch row, then events.
import { sql } from 'kysely';
import { lockOpenCase, openCaseOf } from '../cases/open.js';
import { markAgentGoal, markHandedOff } from '../cases/service.js';
import { addNote, clearHandling, lockConversationBusy, setHandling } from '../conversations/service.js';
import type { Trx } from '../db/index.js';
import type { AgentRow, StretchRow } from '../db/types.js';
import { agentTexts } from '../http/messages.es-AR.js';
import { newId } from '../lib/ids.js';
import { emitEvent } from '../webhooks/outbox.js';
import { queueReview } from './reviews.js';

/** "one hour without messages in the conversation" (agents.md). */
export const IDLE_MS = 60 * 60 * 1000;

export interface NewStretch {
  accountId: string;
  agent: Pick<AgentRow, 'id' | 'name' | 'version'>;
  conversationId: string;
  contactId: string;
  phoneNumberId: string | null;
  assignedBy: 'number' | 'automation';
  executionId?: string | null;
  test?: boolean;
  /** The conversation's messages from this id on are the stretch's. */
  sinceId: string;
}

/**
 * Starts a stretch, due at once, and makes the agent the conversation's handling; the caller holds
 * the conversation's lock. Returns its id, or null when a stretch already runs there.
 */
export async function startStretch(trx: Trx, n: NewStretch, now: Date): Promise<string | null> {
  const row = await trx
    .insertInto('agent_stretches')
    .values({
      id: newId(),
      account_id: n.accountId,
      agent_id: n.agent.id,
      agent_version: n.agent.version,
      conversation_id: n.conversationId,
      contact_id: n.contactId,
      phone_number_id: n.phoneNumberId,
      assigned_by: n.assignedBy,
      execution_id: n.executionId ?? null,
      test: n.test ?? false,
      since_id: n.sinceId,
      last_activity_at: now,
      run_at: now,
      created_at: now,
      updated_at: now,
    })
    // The index's predicate as a literal: with a parameter, a generic plan could not match it.
    .onConflict((oc) => oc.column('conversation_id').where('status', '=', sql.lit('running')).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!row) return null;
  await setHandling(trx, n.conversationId, { type: 'agent', id: n.agent.id, name: n.agent.name, caseId: null });
  return row.id;
}

/**
 * The inbound statement's step for the running stretches of the conversations in CTE `from`
 * (column `cid`; automations/triggers.ts composes it as a WITH clause): each learns a message came
 * in (`pending`, `last_activity_at`) and is due at once when no runner holds it — unless CTE
 * `running` has a row of its conversation (`conversation_id`: a running execution takes the message
 * instead). Returns each stretch's id, claim and conversation.
 */
export const stretchMessagesSql = (from: string, running: string, now: Date) => sql`
      UPDATE agent_stretches st
      SET pending = true, last_activity_at = ${now},
          run_at = CASE WHEN st.claim IS NULL THEN ${now}::timestamptz ELSE st.run_at END,
          updated_at = ${now}
      FROM ${sql.table(from)} f
      WHERE st.conversation_id = f.cid AND st.status = 'running'
        AND NOT EXISTS (SELECT 1 FROM ${sql.table(running)} r WHERE r.conversation_id = f.cid)
      RETURNING st.id, st.claim, st.conversation_id`;

/**
 * How a stretch ends. `data`: the goal's fields obtained (all the required ones on a goal; on a
 * handoff what was gathered so far). `event: false`: the team stepped in (no agent.handed_off,
 * no handedOffAt).
 */
export type Ending =
  | { by: 'goal'; data: Record<string, string>; summary: string }
  | { by: 'handoff'; reason: string; summary: string; event: boolean; data?: Record<string, string> }
  | { by: 'idle' };

/** The handoff's summary in agent.handed_off and the team's note: the reason, then the model's summary. */
export function handoffSummary(reason: string, summary: string): string {
  const r = reason.trim();
  const s = summary.trim();
  if (!r) return s;
  if (!s) return r;
  return `${r}${/[.!?…]$/.test(r) ? '' : '.'} ${s}`;
}

/**
 * Ends a running stretch inside `trx`: the conversation's handling (the team after a handoff, nobody
 * after a goal or idle), the open case (goalAt and the close `agent_goal`, or handedOffAt), the
 * team's note, the row, and the events (none for test stretches). `claim`: the runner's claim that
 * must still hold the row (null: whoever holds it, as the team's reply does). Returns the ended
 * row, or null when it was not running (or not under that claim): nothing was written then.
 */
export async function endStretch(
  trx: Trx,
  stretch: StretchRow,
  agent: Pick<AgentRow, 'id' | 'name' | 'review'>,
  ending: Ending,
  claim: string | null,
  now: Date,
): Promise<StretchRow | null> {
  const conversationId = stretch.conversation_id;
  const real = !stretch.test;
  const summary = ending.by === 'goal' ? ending.summary : ending.by === 'handoff' ? handoffSummary(ending.reason, ending.summary) : null;
  const by = { id: agent.id, name: agent.name };

  // The conversation first (its handling), then the open case.
  if (ending.by === 'handoff' && ending.event) {
    const open = await openCaseOf(trx, conversationId);
    await setHandling(trx, conversationId, { type: 'team', id: null, name: null, caseId: open?.id ?? null });
  } else if (ending.by !== 'handoff') {
    await clearHandling(trx, conversationId, 'agent');
  }
  const touchesCase = real && (ending.by === 'goal' || (ending.by === 'handoff' && ending.event));
  const open = touchesCase ? await lockOpenCase(trx, conversationId) : undefined;

  const ended = await trx
    .updateTable('agent_stretches')
    .set({
      status: 'ended',
      ended_by: ending.by,
      summary,
      ...(ending.by !== 'idle' && ending.data ? { goal_data: JSON.stringify(ending.data) } : {}),
      // What the last turn was answering is answered (or handed to a person) now.
      answered_until: sql`COALESCE((SELECT t.inbound_until FROM agent_turns t WHERE t.stretch_id = ${stretch.id} ORDER BY t.n DESC LIMIT 1), answered_until)`,
      until_id: sql`(SELECT m.id FROM messages m WHERE m.conversation_id = ${conversationId} ORDER BY m.id DESC LIMIT 1)`,
      claim: null,
      run_at: null,
      ended_at: now,
      updated_at: now,
    })
    .where('id', '=', stretch.id)
    .where('status', '=', 'running')
    .$if(claim !== null, (q) => q.where('claim', '=', claim))
    .returningAll()
    .executeTakeFirst();
  if (!ended) return null;
  await trx
    .updateTable('agent_turns')
    .set({ status: 'done', ended_at: now })
    .where('stretch_id', '=', stretch.id)
    .where('status', '<>', 'done')
    .execute();
  // An advanced agent's stretch is reviewed (agents/reviews.ts; not for test stretches).
  await queueReview(trx, ended, agent, now);

  if (ending.by === 'handoff' && ending.event) {
    await addNote(
      trx,
      { accountId: stretch.account_id, conversationId, caseId: open?.id ?? null, text: summary ?? '', by: { type: 'agent', ...by } },
      now,
    );
    if (open) await markHandedOff(trx, open, by, now);
  }
  if (!real) return ended;
  const data = {
    agentId: agent.id,
    agentName: agent.name,
    conversationId,
    contactId: stretch.contact_id,
    summary: summary || null,
    goal: ending.by === 'idle' ? {} : (ending.data ?? stretch.goal_data ?? {}),
  };
  if (ending.by === 'goal') {
    await emitEvent(trx, { accountId: stretch.account_id, kind: 'agent.goal_reached', data }, now);
    // The case closes with agent_goal (case.closed) after the agent's event.
    if (open) await markAgentGoal(trx, open, by, now);
  } else if (ending.by === 'handoff' && ending.event) {
    await emitEvent(trx, { accountId: stretch.account_id, kind: 'agent.handed_off', data }, now);
  }
  return ended;
}

/** Ends the conversation's running stretch, if any, as `ending` says; the ended row, or null. */
export async function endRunningStretch(trx: Trx, conversationId: string, ending: Ending, now: Date): Promise<StretchRow | null> {
  const running = await trx
    .selectFrom('agent_stretches as st')
    .innerJoin('agents as a', 'a.id', 'st.agent_id')
    .selectAll('st')
    .select(['a.name as agent_name', 'a.review as agent_review'])
    .where('st.conversation_id', '=', conversationId)
    .where('st.status', '=', 'running')
    .executeTakeFirst();
  if (!running) return null;
  const { agent_name, agent_review, ...stretch } = running;
  return endStretch(trx, stretch, { id: stretch.agent_id, name: agent_name, review: agent_review }, ending, null, now);
}

/**
 * A team member wrote in the conversation (messages/send.ts, after the message and the team's
 * handling): the running stretch ends as a handoff "Intervino el equipo", without agent.handed_off.
 */
export const endStretchByTeam = (trx: Trx, conversationId: string, now: Date): Promise<StretchRow | null> =>
  endRunningStretch(trx, conversationId, { by: 'handoff', reason: agentTexts.teamStepped, summary: '', event: false }, now);

/**
 * Operator's retry of a stretch parked as a dead letter (admin/dead-letters.ts): running again and
 * due now, with its tries counted afresh, the conversation handled by its agent; its next turn
 * answers what the customer wrote since the last answer. False when another stretch or an
 * execution runs in the conversation, or it is not an ended one (the caller answers 409).
 */
export async function reviveStretch(trx: Trx, itemId: string, now: Date): Promise<boolean> {
  const dead = await trx
    .selectFrom('agent_stretches')
    .select(['conversation_id', 'agent_id'])
    .where('id', '=', itemId)
    .where('status', '=', 'ended')
    .executeTakeFirst();
  if (!dead || (await lockConversationBusy(trx, dead.conversation_id))) return false;
  await trx
    .updateTable('agent_stretches')
    .set({
      status: 'running',
      ended_by: null,
      ended_at: null,
      claim: null,
      run_at: now,
      pending: true,
      last_activity_at: now,
      tries: 0,
      failed_at: null,
      last_error: null,
      updated_at: now,
    })
    .where('id', '=', itemId)
    .execute();
  const agent = await trx.selectFrom('agents').select(['id', 'name']).where('id', '=', dead.agent_id).executeTakeFirstOrThrow();
  await setHandling(trx, dead.conversation_id, { type: 'agent', id: agent.id, name: agent.name, caseId: null });
  return true;
}
