// GET /conversations, GET /conversations/{id}, GET /conversations/{id}/messages
// (decisions.md "Conversations"). Reads only; they count as API calls like every /api/v1 route.
import { z } from 'zod';
import { CursorQuery, errors, IdParams, type RoutesFn, Uuid } from '../http/schemas.js';
import { getConversation, listConversationMessages, listConversations } from './service.js';
import { ConversationMessagePage, ConversationPage, ConversationView } from './view.js';

const ListQuery = CursorQuery.extend({
  contactId: Uuid.optional().describe("Only this contact's conversations"),
  channel: z.enum(['whatsapp', 'socialchat']).optional().describe('Only conversations on this channel'),
});

export const conversationRoutes: RoutesFn = (app, s) => {
  app.get(
    '/conversations',
    {
      schema: {
        summary: 'The conversations of the account, oldest first, by cursor',
        tags: ['Conversations'],
        querystring: ListQuery,
        response: { 200: ConversationPage, ...errors(400, 401, 402, 429) },
      },
    },
    async (req) => listConversations(s.db, req.auth.account.id, req.query),
  );

  app.get(
    '/conversations/:id',
    {
      schema: {
        summary: 'One conversation: its window, who handles it and its open case',
        tags: ['Conversations'],
        params: IdParams,
        response: { 200: ConversationView, ...errors(400, 401, 402, 404, 429) },
      },
    },
    async (req) => getConversation(s.db, req.auth.account.id, req.params.id),
  );

  app.get(
    '/conversations/:id/messages',
    {
      schema: {
        summary: "A conversation's messages, both directions, oldest first, by cursor",
        description: 'In this list `from` says who wrote it: `contact`, or the outbound source (api, campaign, automation, agent, team).',
        tags: ['Conversations'],
        params: IdParams,
        querystring: CursorQuery,
        response: { 200: ConversationMessagePage, ...errors(400, 401, 402, 404, 429) },
      },
    },
    async (req) => listConversationMessages(s.db, req.auth.account.id, req.params.id, req.query),
  );
};
