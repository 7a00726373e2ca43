// GET /me (api.md §4; decisions.md "GET /me").
import type { FastifyReply } from 'fastify';
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
    (req, reply) => {
      // The kept view is already the JSON text the schema describes: sent as it is.
      const json = s.accountViews.json(req.auth.account);
      const raw = (reply as unknown as FastifyReply).type('application/json; charset=utf-8');
      if (typeof json === 'string') {
        raw.send(json);
        return;
      }
      return json.then((text) => {
        raw.send(text);
      });
    },
  );
};
