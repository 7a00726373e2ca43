// Operator API: reviews of advanced agents (docs/operator.md "Agent reviews").
import { z } from 'zod';
import { CursorQuery, errors, NoBody, type RoutesFn, Timestamp, Uuid } from '../http/schemas.js';
import { listReviews, rerunReview } from './reviews.js';

const AgentParams = z.object({ id: Uuid, agentId: Uuid });
const ReviewParams = z.object({ id: Uuid, agentId: Uuid, reviewId: Uuid });

const ReviewView = z
  .object({
    id: Uuid,
    agentId: Uuid,
    agentVersion: z.string().describe('The agent version that worked the stretch'),
    stretchId: Uuid,
    conversationId: Uuid,
    contactId: Uuid,
    endedBy: z.enum(['goal', 'handoff', 'idle']).describe('Why the stretch ended (idle: one hour without messages)'),
    status: z.enum(['pending', 'done', 'failed']).describe('pending until its run; done or failed after each run'),
    summary: z.string().nullable().describe('One or two sentences, or null'),
    criteria: z
      .array(
        z.object({
          name: z.string(),
          result: z.enum(['success', 'failure', 'unknown']).nullable().describe('pass_fail criteria; null for score ones'),
          score: z.number().int().nullable().describe('1 to 5 for score criteria; null for pass_fail ones'),
        }),
      )
      .nullable()
      .describe('One per criterion of the agent, in its order; null unless done'),
    extracted: z
      .record(z.string(), z.string().nullable())
      .nullable()
      .describe('Every extract name of the agent, null when not found; null unless done'),
    error: z.string().nullable().describe('Why the last run failed (Spanish), or null'),
    runs: z.number().int().describe('Runs that reached an outcome (done or failed)'),
    createdAt: Timestamp.describe('When the stretch ended and the review was queued'),
    reviewedAt: Timestamp.nullable().describe('When the last successful run finished; null unless done'),
  })
  .describe('AgentReview');

export const reviewAdminRoutes: RoutesFn = (app, s) => {
  app.get(
    '/accounts/:id/agents/:agentId/reviews',
    {
      schema: {
        summary: "The reviews of an advanced agent's stretches, newest first",
        tags: ['Operator'],
        params: AgentParams,
        querystring: CursorQuery,
        response: {
          200: z.object({
            data: z.array(ReviewView),
            hasMore: z.boolean(),
            nextCursor: Uuid.nullable().describe('Pass it as `after` for the next page; null on the last one'),
          }),
          ...errors(404),
        },
      },
    },
    async (req) => {
      return listReviews(s, req.params.id, req.params.agentId, req.query);
    },
  );

  app.post(
    '/accounts/:id/agents/:agentId/reviews/:reviewId/rerun',
    {
      schema: {
        summary: 'Run a review again now (one model call inside the request); emits agent.conversation_reviewed again',
        description:
          'Answers the review as the run left it. No language model configured: 409 (nothing changes). The model fails after its three tries: 502, and the review is stored as failed (no event).',
        tags: ['Operator'],
        params: ReviewParams,
        body: NoBody,
        response: { 200: ReviewView, ...errors(404, 409, 502) },
      },
    },
    async (req) => {
      return rerunReview(s, req.params.id, req.params.agentId, req.params.reviewId);
    },
  );
};
