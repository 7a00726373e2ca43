// Operator API: pipelines, case close and reason (operator-api.md).
import type { RoutesFn } from '../http/schemas.js';

export const caseAdminRoutes: RoutesFn = (_app, _s) => {};
