// Operator API: AI agents (docs/operator.md "AI agents").
import { z } from 'zod';
import { IdParams, type RoutesFn, Uuid } from '../http/schemas.js';
import { AgentCreate, AgentPatch, AgentView } from './schemas.js';
import { createAgent, deleteAgent, getAgent, listAgents, updateAgent } from './service.js';
import { runTestTurn } from './test-turn.js';

const AgentParams = z.object({ id: Uuid, agentId: Uuid });

const TestTurnBody = z.strictObject({
  text: z.string().min(1).max(4096).describe("The customer's message (1–4,096 characters)"),
  conversationId: Uuid.optional().describe('A test conversation to continue (its testConversationId); absent: a new one'),
});
const TestTurnAnswer = z
  .object({
    replies: z.array(z.string()).describe('What the agent would send, in order'),
    toolCalls: z
      .array(z.object({ name: z.string(), arguments: z.record(z.string(), z.unknown()) }))
      .describe('The tool calls of the turn, as the model made them'),
    testConversationId: Uuid.describe('Send it as conversationId to continue this test conversation'),
  })
  .describe('AgentTestTurn');

export const agentAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/agents',
    {
      schema: {
        summary: 'Create an AI agent (version "1", paused unless asked; active needs a language model, else 409)',
        tags: ['Operator'],
        params: IdParams,
        body: AgentCreate,
        response: { 201: AgentView },
      },
    },
    async (req, reply) => {
      return reply.code(201).send(await createAgent(s, req.params.id, req.body));
    },
  );

  app.get(
    '/accounts/:id/agents',
    {
      schema: {
        summary: "The account's AI agents, newest first",
        tags: ['Operator'],
        params: IdParams,
        response: { 200: z.object({ data: z.array(AgentView) }) },
      },
    },
    async (req) => {
      return { data: await listAgents(s, req.params.id) };
    },
  );

  app.get(
    '/accounts/:id/agents/:agentId',
    { schema: { summary: 'One AI agent', tags: ['Operator'], params: AgentParams, response: { 200: AgentView } } },
    async (req) => getAgent(s, req.params.id, req.params.agentId),
  );

  app.patch(
    '/accounts/:id/agents/:agentId',
    {
      schema: {
        summary: 'Change an AI agent (version +1 when what it does changes; not for name or status alone)',
        tags: ['Operator'],
        params: AgentParams,
        body: AgentPatch,
        response: { 200: AgentView },
      },
    },
    async (req) => updateAgent(s, req.params.id, req.params.agentId, req.body),
  );

  app.delete(
    '/accounts/:id/agents/:agentId',
    { schema: { summary: 'Delete an AI agent (the numbers it answered no longer name it)', tags: ['Operator'], params: AgentParams } },
    async (req, reply) => {
      await deleteAgent(s, req.params.id, req.params.agentId);
      return reply.code(204).send();
    },
  );

  app.post(
    '/accounts/:id/agents/:agentId/test',
    {
      schema: {
        summary: 'A test turn of an AI agent: runs the model, sends nothing, emits nothing',
        tags: ['Operator'],
        params: AgentParams,
        body: TestTurnBody,
        response: { 200: TestTurnAnswer },
      },
    },
    async (req) => {
      return runTestTurn(s, req.params.id, req.params.agentId, req.body);
    },
  );
};
