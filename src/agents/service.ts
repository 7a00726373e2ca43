// AI agents (docs/agents.md "Agent"): the operator's CRUD and the public list. The conversation
// engine that makes an agent answer (stretches, turns, tools) is not here. `version` counts the
// changes of what the agent does (instructions, goal, handoff, review, model, maxTurns); a change
// of name or status alone keeps it. An agent becomes `active` only with a language model
// configured (`s.llm`); deleting one clears the numbers and social accounts it answered.

import type { Updateable } from 'kysely';
import { unassignAgentFromNumbers } from '../channel/phone-numbers.js';
import { unassignAgentFromSocialAccounts } from '../channel/social-accounts.js';
import type { Executor } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { AgentRow, AgentsTable } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { isUuid, newId } from '../lib/ids.js';
import type { Services } from '../services.js';
import { type AgentCreate, type AgentPatch, type AgentStatus, type AgentView, DEFAULT_HANDOFF_PHRASES } from './schemas.js';
import { agentView } from './view.js';

type Handoff = { rules: string[]; phrases: string[] };
type Goal = NonNullable<AgentRow['goal']>;
type Review = NonNullable<AgentRow['review']>;

/** The stored handoff: `phrases` absent → the default phrases. */
const handoffOf = (h: { rules?: string[] | undefined; phrases?: string[] | undefined } | undefined): Handoff => ({
  rules: h?.rules ?? [],
  phrases: h?.phrases ?? [...DEFAULT_HANDOFF_PHRASES],
});

/** 409 when an agent would become active with no language model to answer for it. */
function assertCanActivate(s: Services, status: AgentStatus | undefined): void {
  if (status === 'active' && s.llm === null) throw new ApiError('agent_model_missing');
}

/** JSON text with object keys sorted (jsonb reorders keys), to tell whether a value changed. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));

/** POST /admin/v1/accounts/{id}/agents: version 1, paused unless asked (active needs a model). */
export async function createAgent(s: Services, accountId: string, input: AgentCreate): Promise<AgentView> {
  assertCanActivate(s, input.status);
  const now = s.clock.now();
  const row = await s.db
    .insertInto('agents')
    .values({
      id: newId(),
      account_id: accountId,
      name: input.name,
      status: input.status ?? 'paused',
      version: 1,
      instructions: input.instructions ?? '',
      goal: json(input.goal),
      handoff: JSON.stringify(handoffOf(input.handoff)),
      review: json(input.review),
      model: input.model ?? null,
      max_turns: input.maxTurns ?? 30,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return agentView(row);
}

/** The account's agent (not deleted), or 404. */
export async function getAgentRow(db: Executor, accountId: string, id: string): Promise<AgentRow> {
  const a = isUuid(id)
    ? await db
        .selectFrom('agents')
        .selectAll()
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .where('deleted_at', 'is', null)
        .executeTakeFirst()
    : undefined;
  if (!a) throw new ApiError('agent_not_found');
  return a;
}

export const getAgent = async (s: Services, accountId: string, id: string): Promise<AgentView> =>
  agentView(await getAgentRow(s.db, accountId, id));

/** The account's agents (deleted ones excluded), newest first. */
export const listAgentRows = (db: Executor, accountId: string): Promise<AgentRow[]> =>
  db
    .selectFrom('agents')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();

export const listAgents = async (s: Services, accountId: string): Promise<AgentView[]> =>
  (await listAgentRows(s.db, accountId)).map(agentView);

/**
 * PATCH: changes what the body names. `version` goes up by one when instructions, goal, handoff,
 * review, model or maxTurns end up different from before (one PATCH, one step, however many of
 * them change); a PATCH of name or status alone, or one that repeats the current values, keeps it.
 * The row is locked, so two concurrent PATCHes each count.
 */
export async function updateAgent(s: Services, accountId: string, id: string, patch: AgentPatch): Promise<AgentView> {
  assertCanActivate(s, patch.status);
  const now = s.clock.now();
  const row = await transaction(s.db, async (trx) => {
    const cur = isUuid(id)
      ? await trx
          .selectFrom('agents')
          .selectAll()
          .where('account_id', '=', accountId)
          .where('id', '=', id)
          .where('deleted_at', 'is', null)
          .forUpdate()
          .executeTakeFirst()
      : undefined;
    if (!cur) throw new ApiError('agent_not_found');

    const next: {
      instructions: string;
      goal: Goal | null;
      handoff: Handoff;
      review: Review | null;
      model: string | null;
      maxTurns: number;
    } = {
      instructions: patch.instructions ?? cur.instructions,
      goal: patch.goal !== undefined ? patch.goal : cur.goal,
      handoff: patch.handoff !== undefined ? handoffOf(patch.handoff) : cur.handoff,
      review: patch.review !== undefined ? patch.review : cur.review,
      model: patch.model !== undefined ? patch.model : cur.model,
      maxTurns: patch.maxTurns ?? cur.max_turns,
    };
    const before = {
      instructions: cur.instructions,
      goal: cur.goal,
      handoff: cur.handoff,
      review: cur.review,
      model: cur.model,
      maxTurns: cur.max_turns,
    };
    const changesBehaviour = canonical(next) !== canonical(before);

    const set: Updateable<AgentsTable> = { updated_at: now };
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.status !== undefined) set.status = patch.status;
    if (changesBehaviour) {
      Object.assign(set, {
        instructions: next.instructions,
        goal: json(next.goal),
        handoff: JSON.stringify(next.handoff),
        review: json(next.review),
        model: next.model,
        max_turns: next.maxTurns,
      });
    }
    return trx
      .updateTable('agents')
      .set((eb) => ({ ...set, ...(changesBehaviour ? { version: eb('version', '+', 1) } : {}) }))
      .where('id', '=', cur.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  return agentView(row);
}

/** DELETE: hidden from every list and lookup; the numbers it answered no longer name it. */
export async function deleteAgent(s: Services, accountId: string, id: string): Promise<void> {
  const now = s.clock.now();
  await transaction(s.db, async (trx) => {
    const row = await trx
      .updateTable('agents')
      .set({ deleted_at: now, status: 'paused', updated_at: now })
      .where('account_id', '=', accountId)
      .where('id', '=', isUuid(id) ? id : '00000000-0000-0000-0000-000000000000')
      .where('deleted_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    if (!row) throw new ApiError('agent_not_found');
    await unassignAgentFromNumbers(trx, accountId, row.id);
    await unassignAgentFromSocialAccounts(trx, accountId, row.id);
  });
}
