// Operator API: the sandbox channel (operator-api.md, "Sandbox channel").
import type { RoutesFn } from '../../http/schemas.js';

export const sandboxAdminRoutes: RoutesFn = (_app, _s) => {};
