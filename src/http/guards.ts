// The guard pipeline of every /api/v1 request, in the order of decisions.md ("Errors"):
// IP block (429) → key (401) → plan (402) → minute caps (429) → monthly quota (429).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthContext } from '../keys/service.js';
import { planHasApi } from '../limits/plans.js';
import type { Services } from '../services.js';
import { ApiError } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the guards on every authenticated /api/v1 request. */
    auth: AuthContext;
    /** The request passed the caps and quota: it counts as an API call (api.md §8). */
    countsAsCall: boolean;
  }
}

export function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

/** The caller's IP: the socket's, or the first X-Forwarded-For hop when TRUST_PROXY is set. */
export function clientIp(req: FastifyRequest, trustProxy: boolean): string {
  if (trustProxy) {
    const xff = req.headers['x-forwarded-for'];
    const first = (Array.isArray(xff) ? xff[0] : xff)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return req.socket.remoteAddress ?? 'unknown';
}

/** An API call of the quota month: every request with a valid key, successful or not (api.md §8). */
function countCall(req: FastifyRequest, services: Services): void {
  req.countsAsCall = true;
  services.usage.countApiCall(req.auth.account.id);
}

export function installPublicGuards(app: FastifyInstance, services: Services): void {
  app.decorateRequest('auth', null as unknown as AuthContext);
  app.decorateRequest('countsAsCall', false);

  app.addHook('onRequest', async (req, reply) => {
    const ip = clientIp(req, services.config.trustProxy);
    if (await services.limiter.ipBlocked(ip)) throw new ApiError('ip_blocked');

    const auth = await services.auth.authenticate(bearer(req.headers.authorization));
    if (!auth) {
      // Any 401 counts for the caller's IP; the 21st within a minute blocks it (decisions.md).
      if (await services.limiter.invalidKey(ip)) throw new ApiError('ip_blocked');
      throw new ApiError('unauthorized');
    }
    req.auth = auth;
    const { account } = auth;
    if (!planHasApi(account.plan)) {
      countCall(req, services);
      throw new ApiError('plan_without_api', {
        params: { plan: account.plan },
        cause: { type: 'upgrade', reason: 'plan', resource: 'api', plan: account.plan, limit: null, used: null, suggested: 'escala' },
      });
    }

    const isSend = req.method === 'POST' && req.routeOptions.url === '/api/v1/messages';
    const outcome = await services.limiter.admit(
      { accountId: account.id, plan: account.plan, limits: auth.limits },
      { ip, message: isSend, recordedApiCalls: (period) => services.usage.recordedApiCalls(account.id, period) },
    );
    for (const [k, v] of Object.entries(outcome.headers)) reply.header(k, v);
    // A request rejected by a cap or by the quota did nothing and is not counted (api.md §7–8).
    if (outcome.error) throw outcome.error;
    // Counted now, not when the response ends: it counts whatever the handler answers, and a
    // GET /me right after sees it.
    countCall(req, services);
  });

  // Unknown /api/v1 routes go through the same guards: "all routes" count (api.md §8).
  app.setNotFoundHandler(async () => {
    throw new ApiError('route_not_found');
  });
}
