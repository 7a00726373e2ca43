// Who answered a case (api.md §2 "Case" handledBy): moved when an outbound message of an
// automation, an AI agent or the team is stored while the case is open.
import { type RawBuilder, sql } from 'kysely';
import type { Executor } from '../db/index.js';

export type HandledBy = 'none' | 'automation' | 'ai' | 'human' | 'mixed';
export type Answerer = 'automation' | 'ai' | 'human';

/**
 * The case's handledBy after `who` answers: none → who; the same → the same; a person or an AI
 * agent outranks an automation (automation + human → human, automation + ai → ai, and an
 * automation after them changes nothing); an AI agent and a person → mixed; mixed stays mixed.
 */
export function nextHandledBy(current: HandledBy, who: Answerer): HandledBy {
  if (current === 'none' || current === who) return who;
  if (current === 'mixed') return 'mixed';
  if (current === 'automation') return who;
  if (who === 'automation') return current;
  // ai + human or human + ai
  return 'mixed';
}

/** The answerer a message source stands for. */
export const answererOf = (source: 'automation' | 'agent' | 'team'): Answerer =>
  source === 'automation' ? 'automation' : source === 'agent' ? 'ai' : 'human';

const HANDLED_BY: readonly HandledBy[] = ['none', 'automation', 'ai', 'human', 'mixed'];

/**
 * recordAnswer's statement as CTEs, for a caller that composes it into its own (a send of an
 * automation, an agent or the team: send-store.ts). `conversationId` may be an expression (the
 * send's own conversation CTE). `open` names the CTE of the open case (locked): a later CTE that
 * reads it runs after the lock.
 */
export function recordAnswerCtes(
  conversationId: string | RawBuilder<string>,
  who: Answerer,
  now: Date,
  agent?: { id: string; name: string },
  /** A condition the case's update also needs (a composed write's rows: it runs after them). */
  gate?: RawBuilder<unknown>,
): { ctes: RawBuilder<unknown>; lock: RawBuilder<unknown>; update: RawBuilder<unknown>; open: string } {
  const next = sql`CASE o.handled_by ${sql.join(
    HANDLED_BY.map((h) => sql`WHEN ${h} THEN ${nextHandledBy(h, who)}`),
    sql` `,
  )} ELSE o.handled_by END`;
  const names =
    who === 'ai' && agent
      ? sql`(o.agent_id IS DISTINCT FROM ${agent.id}::uuid OR o.agent_name IS DISTINCT FROM ${agent.name}::text)`
      : sql`false`;
  const lock = sql`
    answered_case AS (
      SELECT id, handled_by, agent_id, agent_name FROM cases
      WHERE conversation_id = ${typeof conversationId === 'string' ? sql`${conversationId}::uuid` : conversationId} AND status = 'open'
      FOR UPDATE),
    answered_next AS (SELECT o.id, o.handled_by, ${next} AS next, ${names} AS names FROM answered_case o)`;
  const update = sql`
    answered_update AS (
      UPDATE cases c SET handled_by = n.next,
        agent_id = CASE WHEN n.names THEN ${agent?.id ?? null}::uuid ELSE c.agent_id END,
        agent_name = CASE WHEN n.names THEN ${agent?.name ?? null}::text ELSE c.agent_name END,
        updated_at = ${now}
      FROM answered_next n WHERE c.id = n.id AND (n.next <> n.handled_by OR n.names) ${gate ? sql`AND ${gate}` : sql``})`;
  return { ctes: sql`${lock}, ${update}`, lock, update, open: 'answered_case' };
}

/**
 * The conversation's open case, locked, records that `who` answered (nextHandledBy's rule, as a
 * CASE over every current value; the row is written only when it changes); an AI agent's answer
 * also names it on the case (agentId, agentName: agents.md "while an agent works the case"). One
 * statement. No event: a handledBy change is not one of api.md §6's case events. Returns the open
 * case's id, or null when none is open.
 */
export async function recordAnswer(
  trx: Executor,
  conversationId: string,
  who: Answerer,
  now: Date,
  agent?: { id: string; name: string },
): Promise<string | null> {
  const a = recordAnswerCtes(conversationId, who, now, agent);
  const { rows } = await sql<{ id: string }>`WITH ${a.ctes} SELECT id FROM ${sql.table(a.open)}`.execute(trx);
  return rows[0]?.id ?? null;
}
