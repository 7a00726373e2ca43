// Operator API: pipelines, case close, reason and outcome by a person (operator.md).
import { z } from 'zod';
import { memberBy } from '../admin/auth.js';
import { errors, IdParams, type RoutesFn, Timestamp, Uuid } from '../http/schemas.js';
import { addPipeline, getPipeline, listPipelines, PipelineInput } from './pipelines.js';
import { OutcomeBody } from './routes.js';
import { changeStage, closeManually, getCaseView, listBoardCases, setOutcome, setReasonByPerson } from './service.js';
import { CaseView } from './view.js';

const By = z.strictObject({ id: z.string().min(1).max(255), name: z.string().min(1).max(200) }).describe('The team member');
const CaseParams = z.object({ id: Uuid, caseId: Uuid });

const BoardQuery = z.object({
  stage: Uuid.optional().describe('Only cases in this stage (a stage id): the board loads each column on its own'),
  status: z.enum(['open', 'closed', 'all']).default('all').describe('open, closed or all (default)'),
  reason: z.string().trim().min(1).max(200).optional().describe('Only cases with this reason (its name, any case)'),
  score: z
    .enum(['hot', 'warm', 'cold', 'none'])
    .optional()
    .describe('Score bucket: hot (≥ 70), warm (40–69), cold (< 40), none (no score)'),
  handledBy: z.enum(['none', 'automation', 'ai', 'human', 'mixed']).optional().describe('Who answered the case (the Case field)'),
  limit: z.coerce.number().int().min(1).max(200).default(50).describe('Page size, 1 to 200 (default 50)'),
  after: Uuid.optional().describe('The last case id of the previous page (nextCursor)'),
});
const BoardCase = CaseView.extend({
  contact: z.object({ id: Uuid, name: z.string(), phone: z.string().nullable(), username: z.string().nullable() }),
  lastMessageAt: Timestamp.nullable().describe("The conversation's latest message (either direction), or null"),
}).describe('BoardCase');

export const caseAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/pipelines',
    { schema: { summary: 'Create a pipeline with its stages', tags: ['Operator'], params: IdParams, body: PipelineInput } },
    async (req, reply) => {
      const view = await addPipeline(s.db, req.params.id, req.body, s.clock.now());
      return reply.code(201).send(view);
    },
  );

  app.get(
    '/accounts/:id/pipelines',
    { schema: { summary: "The account's pipelines", tags: ['Operator'], params: IdParams } },
    async (req) => {
      return listPipelines(s.db, req.params.id, { limit: 200 });
    },
  );

  // The console's Casos board: one column per stage, each paged on its own (docs/operator.md).
  app.get(
    '/accounts/:id/pipelines/:pipelineId/cases',
    {
      schema: {
        summary: "A pipeline's cases for the board, newest first, with contact and last message time (cursor pages, filters)",
        tags: ['Operator'],
        params: z.object({ id: Uuid, pipelineId: Uuid }),
        querystring: BoardQuery,
        response: {
          200: z.object({ data: z.array(BoardCase), hasMore: z.boolean(), nextCursor: Uuid.nullable() }),
          ...errors(400, 401, 403, 404),
        },
      },
    },
    async (req) => {
      const p = await getPipeline(s.db, req.params.id, req.params.pipelineId);
      return listBoardCases(s.db, p.id, req.query);
    },
  );

  app.get('/accounts/:id/cases/:caseId', { schema: { summary: 'One case', tags: ['Operator'], params: CaseParams } }, async (req) => {
    return getCaseView(s.db, req.params.id, req.params.caseId);
  });

  app.post(
    '/accounts/:id/cases/:caseId/close',
    // {by?}: the whole body is optional (Fastify hands a missing body to validation as null).
    {
      schema: {
        summary: 'Close a case by hand (closeReason manual)',
        tags: ['Operator'],
        params: CaseParams,
        body: z.strictObject({ by: By.optional() }).nullish(),
      },
    },
    async (req) => {
      return closeManually(s, req.params.id, req.params.caseId, memberBy(req) ?? req.body?.by ?? null);
    },
  );

  app.post(
    '/accounts/:id/cases/:caseId/reason',
    {
      schema: {
        summary: 'Classify a case by hand (reasonSource person)',
        tags: ['Operator'],
        params: CaseParams,
        body: z.strictObject({
          reason: z.string().trim().min(1).max(200),
          subreason: z.string().trim().min(1).max(200).optional(),
          by: By.optional(),
        }),
      },
    },
    async (req) => {
      return setReasonByPerson(s, req.params.id, req.params.caseId, { ...req.body, by: memberBy(req) ?? req.body.by });
    },
  );

  // The console's case panel (select Etapa): the same move as POST /api/v1/cases/{id}/stage, by a person.
  app.post(
    '/accounts/:id/cases/:caseId/stage',
    {
      schema: {
        summary: 'Move an open case to a stage (as POST /api/v1/cases/{id}/stage), by a team member',
        tags: ['Operator'],
        params: CaseParams,
        body: z.strictObject({
          stageId: Uuid.describe('A stage of the case’s pipeline'),
          amount: z.number().min(0).max(99_999_999_999_999).optional().describe('Amount of the sale (won stages)'),
          by: By.optional(),
        }),
      },
    },
    async (req) => {
      const { by, ...input } = req.body;
      return changeStage(s, req.params.id, req.params.caseId, input, memberBy(req) ?? by ?? null);
    },
  );

  // A sale or loss marked in the chat by a team member (outcomeSource `person`).
  app.post(
    '/accounts/:id/cases/:caseId/outcome',
    {
      schema: {
        summary: 'A sale or loss marked by a person (outcomeSource person)',
        tags: ['Operator'],
        params: CaseParams,
        body: OutcomeBody.extend({ by: By.optional() }),
      },
    },
    async (req) => {
      const { by, ...outcome } = req.body;
      return setOutcome(s, req.params.id, req.params.caseId, outcome, 'person', memberBy(req) ?? by ?? null);
    },
  );
};
