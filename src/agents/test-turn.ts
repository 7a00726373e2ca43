// The operator's test turn (docs/operator.md "POST /admin/v1/accounts/{id}/agents/{agentId}/test"):
// one model turn of an agent over a test conversation kept in agent_test_conversations (owned
// here). It sends nothing and emits nothing; a handoff phrase answers without asking the model.
import { sql } from 'kysely';
import type { AgentTestTurn } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { agentTexts } from '../http/messages.es-AR.js';
import { newId } from '../lib/ids.js';
import { type ChatMessage, ModelError } from '../llm/types.js';
import { boundReplies, TEXT_BOUNDS } from '../messages/text-limits.js';
import type { Services } from '../services.js';
import { agentTools, interpretToolCalls, matchesHandoffPhrase, systemPrompt } from './prompt.js';
import { getAgentRow } from './service.js';

export interface TestTurnAnswer {
  replies: string[];
  toolCalls: { name: string; arguments: Record<string, unknown> }[];
  testConversationId: string;
}

async function earlierTurns(s: Services, accountId: string, agentId: string, id: string): Promise<AgentTestTurn[]> {
  const row = await s.db
    .selectFrom('agent_test_conversations')
    .select('messages')
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('agent_id', '=', agentId)
    .executeTakeFirst();
  if (!row) throw new ApiError('agent_test_conversation_not_found');
  return row.messages;
}

/** Appends the turns to the conversation (a new one when `id` is undefined); returns its id. */
async function saveTurns(s: Services, accountId: string, agentId: string, id: string | undefined, turns: AgentTestTurn[]): Promise<string> {
  const now = s.clock.now();
  if (id === undefined) {
    const newOne = newId();
    await s.db
      .insertInto('agent_test_conversations')
      .values({ id: newOne, account_id: accountId, agent_id: agentId, messages: JSON.stringify(turns), created_at: now, updated_at: now })
      .execute();
    return newOne;
  }
  await s.db
    .updateTable('agent_test_conversations')
    .set({ messages: sql`messages || ${JSON.stringify(turns)}::jsonb`, updated_at: now })
    .where('id', '=', id)
    .execute();
  return id;
}

export async function runTestTurn(
  s: Services,
  accountId: string,
  agentId: string,
  input: { text: string; conversationId?: string | undefined },
): Promise<TestTurnAnswer> {
  const agent = await getAgentRow(s.db, accountId, agentId);
  const llm = s.llm;
  if (llm === null) throw new ApiError('agent_model_missing', { params: { test: 1 } });
  const earlier = input.conversationId === undefined ? [] : await earlierTurns(s, accountId, agent.id, input.conversationId);
  const user: AgentTestTurn = { role: 'user', content: input.text };

  if (matchesHandoffPhrase(agent, input.text)) {
    const id = await saveTurns(s, accountId, agent.id, input.conversationId, [user]);
    return {
      replies: [],
      toolCalls: [{ name: 'hand_off', arguments: { reason: agentTexts.phraseHandoff, summary: null } }],
      testConversationId: id,
    };
  }

  const messages: ChatMessage[] = [
    { role: 'system', content: systemPrompt(agent, { contactName: null, attributes: {}, gathered: {}, now: s.clock.now() }) },
    ...earlier.map((t) => ({ role: t.role, content: t.content })),
    { role: 'user', content: input.text },
  ];
  let result: Awaited<ReturnType<typeof llm.chat>>;
  try {
    result = await llm.chat({ model: agent.model, messages, tools: agentTools(agent) });
  } catch (err) {
    if (err instanceof ModelError) throw new ApiError('agent_model_failed');
    throw err;
  }
  const outcome = interpretToolCalls(agent, result.toolCalls);
  // What a real turn would send on WhatsApp: at most 3 messages within 4,096 (turns.ts).
  const replies = boundReplies(outcome.replies, TEXT_BOUNDS.whatsapp).messages;
  const turns: AgentTestTurn[] = [user];
  if (replies.length > 0) turns.push({ role: 'assistant', content: replies.join('\n\n') });
  const id = await saveTurns(s, accountId, agent.id, input.conversationId, turns);
  return {
    replies,
    toolCalls: result.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments })),
    testConversationId: id,
  };
}
