// GET /me (api.md §4; decisions.md "GET /me").
import type { RoutesFn } from '../http/schemas.js';
import { errors } from '../http/schemas.js';
import { AccountView } from './schemas.js';

export const accountRoutes: RoutesFn = (app, s) => {
  app.get(
    '/me',
    {
      schema: {
        summary: 'The account of the key: plan, limits, usage of the quota month and channel numbers',
        tags: ['Account'],
        response: { 200: AccountView, ...errors(401, 402, 429) },
      },
    },
    (req) => s.accountViews.view(req.auth.account),
  );
};
