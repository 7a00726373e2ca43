// GET /campaigns and /campaigns/{id} (api.md §4).
import type { RoutesFn } from '../http/schemas.js';

export const campaignRoutes: RoutesFn = (_app, _s) => {};
