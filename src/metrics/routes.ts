// GET /metrics and the one hook that counts every answered request (docs/operating.md "Metrics").
// Only installed when METRICS is on: off, there is no hook and /metrics is an unknown route.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../http/errors.js';
import { bearer } from '../keys/token-cache.js';
import type { Services } from '../services.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** The label of a request's route: its pattern (`/api/v1/messages/:id`), never the raw URL. */
const routeLabel = (req: FastifyRequest): string => (req.is404 ? 'unmatched' : (req.routeOptions.url ?? 'unmatched'));

export function installMetrics(app: FastifyInstance, services: Services): void {
  const metrics = services.metrics;
  // One hook for every request: the start time is the one Fastify keeps (reply.elapsedTime).
  app.addHook('onResponse', (req, reply, done) => {
    metrics.httpRequest(req.method, routeLabel(req), reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  const tokens = [services.adminToken, services.config.METRICS_TOKEN].filter((t): t is string => Boolean(t)).map(digest);
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    const token = bearer(req.headers.authorization);
    const given = token ? digest(token) : null;
    if (!given || !tokens.some((t) => timingSafeEqual(t, given))) throw new ApiError('metrics_unauthorized');
    return reply.header('content-type', metrics.contentType).send(await metrics.scrape());
  });
}

/** What the router refuses before any hook (frameworkErrors): counted as `unmatched`. */
export function countRefusal(services: Services, req: FastifyRequest, reply: FastifyReply): void {
  services.metrics.httpRequest(req.method, 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
}
