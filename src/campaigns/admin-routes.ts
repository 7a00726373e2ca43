// Operator API: campaigns (operator.md, "Pipelines, cases and campaigns").
import { z } from 'zod';
import { IdParams, NoBody, type RoutesFn, Uuid } from '../http/schemas.js';
import { CampaignInput } from './schemas.js';
import { campaignView, cancelCampaign, createCampaign, getCampaign, listCampaigns } from './service.js';

const CampaignParams = z.object({ id: Uuid, campaignId: Uuid });

export const campaignAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/campaigns',
    {
      schema: {
        summary: 'Create a campaign (sending starts at scheduledAt, or at once)',
        tags: ['Operator'],
        params: IdParams,
        body: CampaignInput,
      },
    },
    async (req, reply) => {
      const { account } = req;
      return reply.code(201).send(await createCampaign(s, account, req.body));
    },
  );

  app.get(
    '/accounts/:id/campaigns',
    { schema: { summary: "The account's campaigns", tags: ['Operator'], params: IdParams } },
    async (req) => {
      return { data: await listCampaigns(s.db, req.params.id) };
    },
  );

  app.get(
    '/accounts/:id/campaigns/:campaignId',
    { schema: { summary: 'One campaign', tags: ['Operator'], params: CampaignParams } },
    async (req) => {
      return campaignView(await getCampaign(s.db, req.params.id, req.params.campaignId));
    },
  );

  app.post(
    '/accounts/:id/campaigns/:campaignId/cancel',
    { schema: { summary: 'Cancel a campaign', tags: ['Operator'], params: CampaignParams, body: NoBody } },
    async (req) => {
      return cancelCampaign(s, req.params.id, req.params.campaignId);
    },
  );
};
