import type { FastifyReply } from 'fastify';
import type { RoutesFn } from '../http/schemas.js';
import { errors } from '../http/schemas.js';
import { AccountView } from './schemas.js';

const JSON_TYPE = 'application/json; charset=utf-8';

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
    // Most calls are answered by the memory lane (http/memory-lane.ts) before Fastify; this
    // answers the rest (the first call of a key or view, a trailing slash, a query string), with
    // the same JSON text.
    (req, reply) => {
      const json = s.accountViews.json(req.auth.account);
      // Ready JSON text rather than the typed object the schema describes.
      const raw = reply as unknown as FastifyReply;
      raw.type(JSON_TYPE);
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
