// Operator API: templates (operator.md, "Channel numbers"). The app creates
// them and moves their status (the channel's approval); DELETE is soft: sending it then → 404.
import type { CloudProvider } from '../channel/cloud/provider.js';
import { submitTemplate, syncedTemplateView } from '../channel/cloud/templates.js';
import { errors, IdParams, type RoutesFn } from '../http/schemas.js';
import { TemplateInput, TemplateList, TemplateParams, TemplatePatch, TemplateQuery } from './schemas.js';
import { createTemplate, deleteTemplate, listTemplates, setTemplateStatus, templateView } from './service.js';

export const templateAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/templates',
    {
      schema: {
        summary:
          'Create a template (status PENDING unless given); on an account with a Cloud API number it is submitted to Meta for review',
        tags: ['Operator'],
        params: IdParams,
        body: TemplateInput,
      },
    },
    async (req, reply) => {
      const { account } = req;
      const row = await createTemplate(s.db, account.id, req.body, s.clock.now());
      // The runtime always registers the cloud provider: its Graph client is shared.
      const submitted = await submitTemplate(s, (s.channels.unpaced('cloud') as CloudProvider).graph, row);
      return reply.code(201).send(submitted ? syncedTemplateView(submitted) : templateView(row));
    },
  );

  // The console's template picker (an inbox reply outside the 24-hour window) reads them here.
  app.get(
    '/accounts/:id/templates',
    {
      schema: {
        summary: 'The templates of the account (deleted ones excluded), optionally by status and category',
        tags: ['Operator'],
        params: IdParams,
        querystring: TemplateQuery,
        response: { 200: TemplateList, ...errors(400, 401, 404) },
      },
    },
    async (req) => ({ data: await listTemplates(s.db, req.account.id, req.query) }),
  );

  app.patch(
    '/accounts/:id/templates/:tid',
    { schema: { summary: "Move a template's status", tags: ['Operator'], params: TemplateParams, body: TemplatePatch } },
    async (req) => {
      const { account } = req;
      const row = await setTemplateStatus(s.db, account.id, req.params.tid, req.body.status, s.clock.now());
      // This process at once; the others when the statement's notification reaches them.
      s.hotReads.forget(account.id);
      return templateView(row);
    },
  );

  app.delete(
    '/accounts/:id/templates/:tid',
    { schema: { summary: 'Delete a template (sending it then answers 404)', tags: ['Operator'], params: TemplateParams } },
    async (req, reply) => {
      const { account } = req;
      await deleteTemplate(s.db, account.id, req.params.tid, s.clock.now());
      s.hotReads.forget(account.id);
      return reply.code(204).send();
    },
  );
};
