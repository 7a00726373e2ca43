// Operator API: POST /admin/v1/jobs/{name}/run (operator-api.md).
import type { RoutesFn } from '../http/schemas.js';

export const jobAdminRoutes: RoutesFn = (_app, _s) => {};
