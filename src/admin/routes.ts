// The operator API (/admin/v1): thin routes over the feature services, one file per area.
import { accountAdminRoutes } from '../accounts/admin-routes.js';
import { agentAdminRoutes } from '../agents/admin-routes.js';
import { reviewAdminRoutes } from '../agents/review-routes.js';
import { auditAdminRoutes } from '../audit/routes.js';
import { automationAdminRoutes } from '../automations/admin-routes.js';
import { campaignAdminRoutes } from '../campaigns/admin-routes.js';
import { caseAdminRoutes } from '../cases/admin-routes.js';
import { phoneNumberAdminRoutes } from '../channel/admin-routes.js';
import { cloudAdminRoutes } from '../channel/cloud/admin-routes.js';
import { sandboxAdminRoutes } from '../channel/sandbox/routes.js';
import { socialAccountAdminRoutes } from '../channel/social-admin-routes.js';
import { reasonAdminRoutes } from '../classification/admin-routes.js';
import { contactAdminRoutes } from '../contacts/admin-routes.js';
import { conversationAdminRoutes } from '../conversations/admin-routes.js';
import { inboxAdminRoutes } from '../conversations/inbox.js';
import type { RoutesFn } from '../http/schemas.js';
import { aiAppAdminRoutes } from '../mcp/admin-routes.js';
import { memberAdminRoutes } from '../members/admin-routes.js';
import { secretAdminRoutes } from '../secrets/routes.js';
import { templateAdminRoutes } from '../templates/admin-routes.js';
import { webhookAdminRoutes } from '../webhooks/admin-routes.js';
import { deadLetterAdminRoutes } from './dead-letters.js';
import { jobAdminRoutes } from './jobs.js';

export const adminRoutes: RoutesFn = (app, s) => {
  for (const routes of [
    accountAdminRoutes,
    memberAdminRoutes,
    phoneNumberAdminRoutes,
    socialAccountAdminRoutes,
    templateAdminRoutes,
    webhookAdminRoutes,
    caseAdminRoutes,
    reasonAdminRoutes,
    conversationAdminRoutes,
    inboxAdminRoutes,
    contactAdminRoutes,
    campaignAdminRoutes,
    automationAdminRoutes,
    agentAdminRoutes,
    reviewAdminRoutes,
    aiAppAdminRoutes,
    jobAdminRoutes,
    deadLetterAdminRoutes,
    auditAdminRoutes,
    secretAdminRoutes,
    sandboxAdminRoutes,
    cloudAdminRoutes,
  ])
    routes(app, s);
};
