// Operator API: template sync from the WhatsApp Business Account.
import { IdParams, NoBody, type RoutesFn } from '../../http/schemas.js';
import type { CloudProvider } from './provider.js';
import { syncTemplates } from './templates.js';

export const cloudAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/templates/sync',
    {
      schema: {
        summary: "Import the templates of the account's WhatsApp Business Accounts (Cloud API numbers), with status and category",
        tags: ['Operator'],
        params: IdParams,
        body: NoBody,
      },
    },
    async (req) => {
      // The runtime always registers the cloud provider: its Graph client (pool, timeouts) is shared.
      const provider = s.channels.unpaced('cloud') as CloudProvider;
      return syncTemplates(s, provider.graph, req.params.id);
    },
  );
};
