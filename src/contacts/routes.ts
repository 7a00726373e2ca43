// POST /contacts, GET /contacts, GET /contacts/{id} (api.md §4).
import type { RoutesFn } from '../http/schemas.js';

export const contactRoutes: RoutesFn = (_app, _s) => {};
