// GET /templates and GET /templates/{id} (api.md §4; decisions.md "Resources", "Endpoints").
import { errors, IdParams, type RoutesFn } from '../http/schemas.js';
import { TemplateList, TemplateQuery, TemplateView } from './schemas.js';
import { getTemplate, listTemplates, templateView } from './service.js';

export const templateRoutes: RoutesFn = (app, s) => {
  app.get(
    '/templates',
    {
      schema: {
        summary: 'Every template of the account (deleted ones excluded), optionally by status and category',
        description: 'Only `APPROVED` templates can be sent. Utility templates are cheaper and approved faster than marketing ones.',
        tags: ['Templates'],
        querystring: TemplateQuery,
        response: { 200: TemplateList, ...errors(400, 401, 402, 429) },
      },
    },
    async (req) => ({ data: await listTemplates(s.db, req.auth.account.id, req.query) }),
  );

  app.get(
    '/templates/:id',
    {
      schema: {
        summary: 'One template with its body and variables',
        tags: ['Templates'],
        params: IdParams,
        response: { 200: TemplateView, ...errors(400, 401, 402, 404, 429) },
      },
    },
    async (req) => templateView(await getTemplate(s.db, req.auth.account.id, req.params.id)),
  );
};
