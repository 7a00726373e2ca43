// Operator API: templates (operator-api.md).
import type { RoutesFn } from '../http/schemas.js';

export const templateAdminRoutes: RoutesFn = (_app, _s) => {};
