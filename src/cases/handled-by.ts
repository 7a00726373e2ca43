// Who answered a case (api.md §2 "Case" handledBy): moved when an outbound message of an
// automation, an AI agent or the team is stored while the case is open.
import type { Executor } from '../db/index.js';
import type { CaseRow } from '../db/types.js';

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

/**
 * Records that `who` answered in the open case (locked by the caller: lockOpenCase). An AI agent's
 * answer also names it on the case (agentId, agentName: agents.md "while an agent works the
 * case"). No event: a handledBy change is not one of api.md §6's case events.
 */
export async function recordAnswer(
  trx: Executor,
  open: CaseRow,
  who: Answerer,
  now: Date,
  agent?: { id: string; name: string },
): Promise<void> {
  const next = nextHandledBy(open.handled_by as HandledBy, who);
  const names = who === 'ai' && agent && (open.agent_id !== agent.id || open.agent_name !== agent.name);
  if (next === open.handled_by && !names) return;
  await trx
    .updateTable('cases')
    .set({ handled_by: next, ...(names ? { agent_id: agent.id, agent_name: agent.name } : {}), updated_at: now })
    .where('id', '=', open.id)
    .execute();
}
