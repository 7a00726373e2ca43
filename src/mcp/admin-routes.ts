// Operator routes of connected AI apps (docs/operator.md "AI apps"): connect (the token is shown
// only here), list, disconnect.
import { z } from 'zod';
import { whoOf } from '../audit/trail.js';
import { IdParams, type RoutesFn, Timestamp, Uuid } from '../http/schemas.js';
import { connectApp, disconnectApp, listApps } from './apps.js';

const tags = ['Operator'];

const AppView = z.object({
  id: Uuid,
  name: z.string(),
  prefix: z
    .string()
    .nullable()
    .describe('The token’s first characters (etk_app_ + 4), to tell tokens apart; null for an app connected with OAuth'),
  oauthClientId: z.string().nullable().describe('The OAuth client that connected it (its consent), or null: an etk_app_ token'),
  createdAt: Timestamp,
  lastUsedAt: Timestamp.nullable().describe('When it last called /mcp (to the minute); null: never'),
});

export const aiAppAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/ai-apps',
    {
      schema: {
        summary: 'Connect an AI app (its MCP token is returned only here)',
        description:
          "Only a hash of the token is stored: keep it now. The plan's maximum of connected AI apps applies (402, resource aiApps).",
        tags,
        params: IdParams,
        body: z.strictObject({ name: z.string().trim().min(1).max(120).describe('What the app is, e.g. "Claude de Ana"') }),
        response: { 201: AppView.extend({ token: z.string().describe('etk_app_…: the Bearer token of /mcp, shown once') }) },
      },
    },
    async (req, reply) => {
      const { account } = req;
      const created = await connectApp(s, account, req.body.name, whoOf(req));
      req.log.info({ accountId: account.id, aiAppId: created.id }, 'AI app connected');
      return reply.code(201).send(created);
    },
  );

  app.get(
    '/accounts/:id/ai-apps',
    {
      schema: {
        summary: 'The connected AI apps (no tokens), with when each last called /mcp',
        tags,
        params: IdParams,
        response: { 200: z.object({ data: z.array(AppView) }) },
      },
    },
    async (req) => {
      return { data: await listApps(s.db, req.params.id) };
    },
  );

  app.delete(
    '/accounts/:id/ai-apps/:appId',
    { schema: { summary: 'Disconnect an AI app (its token answers 401 at once)', tags, params: z.object({ id: Uuid, appId: Uuid }) } },
    async (req, reply) => {
      await disconnectApp(s, req.params.id, req.params.appId, whoOf(req));
      req.log.info({ accountId: req.params.id, aiAppId: req.params.appId }, 'AI app disconnected');
      return reply.code(204).send();
    },
  );
};
