// GET /templates and /templates/{id} (api.md §4).
import type { RoutesFn } from '../http/schemas.js';

export const templateRoutes: RoutesFn = (_app, _s) => {};
