// GET /campaigns and /campaigns/{id} (api.md §4, decisions.md "Endpoints").
import { z } from 'zod';
import { errors, IdParams, type RoutesFn } from '../http/schemas.js';
import { CampaignView } from './schemas.js';
import { campaignView, getCampaign, listCampaigns } from './service.js';

export const campaignRoutes: RoutesFn = (app, s) => {
  app.get(
    '/campaigns',
    {
      schema: {
        summary: 'The latest 100 campaigns, newest first, with their send counters',
        tags: ['Campaigns'],
        response: { 200: z.object({ data: z.array(CampaignView) }), ...errors(401, 402, 429) },
      },
    },
    async (req) => ({ data: await listCampaigns(s.db, req.auth.account.id) }),
  );

  app.get(
    '/campaigns/:id',
    {
      schema: {
        summary: 'One campaign with its send counters',
        tags: ['Campaigns'],
        params: IdParams,
        response: { 200: CampaignView, ...errors(400, 401, 402, 404, 429) },
      },
    },
    async (req) => campaignView(await getCampaign(s.db, req.auth.account.id, req.params.id)),
  );
};
