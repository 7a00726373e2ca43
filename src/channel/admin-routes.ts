// Operator API: channel numbers (operator-api.md).
import type { RoutesFn } from '../http/schemas.js';

export const phoneNumberAdminRoutes: RoutesFn = (_app, _s) => {};
