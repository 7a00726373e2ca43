// Operator API: campaigns (operator-api.md).
import type { RoutesFn } from '../http/schemas.js';

export const campaignAdminRoutes: RoutesFn = (_app, _s) => {};
