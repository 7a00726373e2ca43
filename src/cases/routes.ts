// GET /pipelines, GET /pipelines/{id}/cases, GET /cases/{id} (api.md §4).
import type { RoutesFn } from '../http/schemas.js';

export const caseRoutes: RoutesFn = (_app, _s) => {};
