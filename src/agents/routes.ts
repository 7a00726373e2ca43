// GET /agents (docs/api.md "Agents"): counted as an API call like every /api/v1 route.
import { z } from 'zod';
import { errors, type RoutesFn } from '../http/schemas.js';
import { PublicAgentView } from './schemas.js';
import { listAgentRows } from './service.js';
import { publicAgentView } from './view.js';

export const agentRoutes: RoutesFn = (app, s) => {
  app.get(
    '/agents',
    {
      schema: {
        summary: "The account's AI agents, newest first: id, name, status and version",
        tags: ['Agents'],
        response: { 200: z.object({ data: z.array(PublicAgentView) }), ...errors(401, 402, 429) },
      },
    },
    async (req) => ({ data: (await listAgentRows(s.db, req.auth.account.id)).map(publicAgentView) }),
  );
};
