// The Agent resource (docs/agents.md "Agent"), as the operator and public APIs show it.
import type { AgentRow } from '../db/types.js';
import type { AgentView, PublicAgentView } from './schemas.js';

export const agentView = (a: AgentRow): AgentView => ({
  id: a.id,
  name: a.name,
  status: a.status,
  version: String(a.version),
  instructions: a.instructions,
  goal: a.goal,
  handoff: a.handoff,
  review: a.review,
  model: a.model,
  maxTurns: a.max_turns,
  createdAt: a.created_at.toISOString(),
  updatedAt: a.updated_at.toISOString(),
});

export const publicAgentView = (a: AgentRow): PublicAgentView => ({
  id: a.id,
  name: a.name,
  status: a.status,
  version: String(a.version),
});
