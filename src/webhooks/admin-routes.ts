// Operator API: webhook subscriptions, deliveries, test event (operator-api.md, "Webhooks").
import type { RoutesFn } from '../http/schemas.js';

export const webhookAdminRoutes: RoutesFn = (_app, _s) => {};
