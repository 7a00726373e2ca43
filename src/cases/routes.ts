// GET /pipelines, GET /pipelines/{id}/cases, GET /cases/{id}, POST /cases/{id}/outcome and
// POST /cases/{id}/stage (api.md §4, decisions.md "Endpoints").
import { z } from 'zod';
import { textFor } from '../http/messages.es-AR.js';
import { CursorQuery, errors, IdParams, type RoutesFn, Uuid } from '../http/schemas.js';
import { getPipeline, listPipelines, PipelineView } from './pipelines.js';
import { changeStage, getCaseView, listPipelineCases, setOutcome } from './service.js';
import { CaseView } from './view.js';

export const OutcomeBody = z.strictObject({
  result: z.enum(['won', 'lost']).describe('Sale (`won`) or loss (`lost`)'),
  amount: z.number().min(0).max(99_999_999_999_999).optional().describe('Amount of the sale'),
  currency: z
    .string()
    .regex(/^[A-Za-z]{3}$/, textFor('currency_invalid'))
    .transform((c) => c.toUpperCase())
    .optional()
    .describe('ISO 4217 code, e.g. ARS'),
  note: z.string().max(2000).optional(),
  externalId: z.string().min(1).max(255).optional().describe('Your own reference, e.g. an order number'),
});

const CaseListQuery = z.object({
  stage: Uuid.optional().describe('Only cases in this stage (a stage id)'),
  status: z.enum(['open', 'closed', 'all']).default('all').describe('open, closed or all (default)'),
  limit: z.coerce.number().int().min(1).max(200).default(50).describe('Page size, 1 to 200 (default 50)'),
  offset: z.coerce.number().int().min(0).default(0).describe('Cases to skip (default 0)'),
});

export const caseRoutes: RoutesFn = (app, s) => {
  app.get(
    '/pipelines',
    {
      schema: {
        summary: 'The account’s pipelines with their stages (cursor pages: limit, after)',
        tags: ['Cases'],
        querystring: CursorQuery,
        response: {
          200: z.object({ data: z.array(PipelineView), hasMore: z.boolean(), nextCursor: Uuid.nullable() }),
          ...errors(400, 401, 402, 429),
        },
      },
    },
    async (req) => listPipelines(s.db, req.auth.account.id, req.query),
  );

  app.get(
    '/pipelines/:id/cases',
    {
      schema: {
        summary: 'The pipeline’s cases, newest first (filters stage and status; offset pages)',
        description: '`nextOffset` = offset + the number of cases returned. Unknown pipeline → 404.',
        tags: ['Cases'],
        params: IdParams,
        querystring: CaseListQuery,
        response: {
          200: z.object({ data: z.array(CaseView), hasMore: z.boolean(), nextOffset: z.number().int() }),
          ...errors(400, 401, 402, 404, 429),
        },
      },
    },
    async (req) => {
      const p = await getPipeline(s.db, req.auth.account.id, req.params.id);
      return listPipelineCases(s.db, p.id, req.query);
    },
  );

  app.get(
    '/cases/:id',
    {
      schema: {
        summary: 'One case',
        tags: ['Cases'],
        params: IdParams,
        response: { 200: CaseView, ...errors(400, 401, 402, 404, 429) },
      },
    },
    async (req) => getCaseView(s.db, req.auth.account.id, req.params.id),
  );

  app.post(
    '/cases/:id/outcome',
    {
      schema: {
        summary: 'Mark a sale or a loss (outcomeSource `api`; emits case.outcome)',
        description: 'Also allowed on closed cases; a later call replaces the outcome. The case status does not change.',
        tags: ['Cases'],
        params: IdParams,
        body: OutcomeBody,
        response: { 200: CaseView, ...errors(400, 401, 402, 404, 429) },
      },
    },
    async (req) => setOutcome(s, req.auth.account.id, req.params.id, req.body, 'api'),
  );

  app.post(
    '/cases/:id/stage',
    {
      schema: {
        summary: 'Move an open case to a stage (emits case.stage_changed; won/lost also closes it)',
        description:
          'The stage must belong to the case’s pipeline (any pipeline of the account when the case is in none). Closed case → 409.',
        tags: ['Cases'],
        params: IdParams,
        body: z.strictObject({
          stageId: Uuid.describe('A stage of the case’s pipeline'),
          amount: z.number().min(0).max(99_999_999_999_999).optional().describe('Amount of the sale (won stages)'),
        }),
        response: { 200: CaseView, ...errors(400, 401, 402, 404, 409, 429) },
      },
    },
    async (req) => changeStage(s, req.auth.account.id, req.params.id, req.body),
  );
};
