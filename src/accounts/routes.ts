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
    // The hot path of the bench's first figure: an account read of this process answers
    // without a promise, as ready JSON bytes (the same JSON.stringify gives).
    (req, reply) => {
      const json = s.accountViews.json(req.auth.account);
      // Ready JSON text rather than the typed object the schema describes.
      const raw = reply as unknown as FastifyReply;
      raw.type(JSON_TYPE);
      if (Buffer.isBuffer(json)) {
        raw.send(json);
        return;
      }
      return json.then((text) => {
        raw.send(text);
      });
    },
  );
};
