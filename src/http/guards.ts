// The guard pipeline of every /api/v1 request, in the order of decisions.md ("Errors"):
// IP block (429) → key (401) → plan (402) → minute caps (429) → monthly quota (429).
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthContext } from '../keys/service.js';
import { bearer } from '../keys/token-cache.js';
import { planHasApi } from '../limits/plans.js';
import type { CapOutcome } from '../limits/types.js';
import type { LimitName } from '../metrics/metrics.js';
import type { Services } from '../services.js';
import { ApiError } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the guards on every authenticated /api/v1 request. */
    auth: AuthContext;
  }
}

/** The caller's IP: the socket's, or the first X-Forwarded-For hop when TRUST_PROXY is set. */
export function clientIp(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const xff = req.headers['x-forwarded-for'];
    const first = (Array.isArray(xff) ? xff[0] : xff)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return req.socket.remoteAddress ?? 'unknown';
}

/** The limits whose refusals are counted (chasqui_limit_refusals_total), by their error's code. */
const LIMIT_OF: Partial<Record<ApiError['code'], LimitName>> = {
  rate_limited_requests: 'requests_per_minute',
  rate_limited_messages: 'messages_per_minute',
  quota_api_calls: 'quota',
  ip_blocked: 'ip_block',
};

/** Counts a limit's refusal and returns it to throw. */
function refused(services: Services, err: ApiError): ApiError {
  const limit = LIMIT_OF[err.code];
  if (limit) services.metrics.limitRefusal(limit);
  return err;
}

/**
 * The checks of one request. Returns undefined when they are done (the hot path: a cached key
 * and counters known to this process, no promise at all), or a promise when something must be
 * read; throws the ApiError that answers the request.
 */
function guard(req: FastifyRequest, reply: FastifyReply, services: Services): Promise<void> | undefined {
  const ip = clientIp(req.raw, services.config.trustProxy);
  if (services.limiter.ipBlocked(ip)) throw refused(services, new ApiError('ip_blocked'));
  const auth = services.auth.cached(req.headers.authorization);
  if (auth) return admit(req, reply, services, auth, ip);
  return services.auth.authenticate(bearer(req.headers.authorization)).then(async (found) => {
    if (!found) {
      // Any 401 counts for the caller's IP; the 21st within a minute blocks it (decisions.md).
      if (await services.limiter.invalidKey(ip)) throw refused(services, new ApiError('ip_blocked'));
      // An AI app's token where a key belongs: say which credential this API takes.
      throw new ApiError(bearer(req.headers.authorization)?.startsWith('etk_app_') ? 'unauthorized_app_token' : 'unauthorized');
    }
    return admit(req, reply, services, found, ip);
  });
}

function admit(req: FastifyRequest, reply: FastifyReply, services: Services, auth: AuthContext, ip: string): Promise<void> | undefined {
  req.auth = auth;
  const { account } = auth;
  if (!planHasApi(account.plan)) {
    // An API call of the quota month: every request with a valid key, successful or not (api.md §8).
    services.usage.countApiCall(account.id);
    throw new ApiError('plan_without_api', {
      params: { plan: account.plan },
      cause: { type: 'upgrade', reason: 'plan', resource: 'api', plan: account.plan, limit: null, used: null, suggested: 'escala' },
    });
  }
  const message = req.method === 'POST' && req.routeOptions.url === '/api/v1/messages';
  const outcome = services.limiter.admit(auth.caps, { ip, message });
  if (outcome instanceof Promise) return outcome.then((o) => settle(req, reply, services, o));
  settle(req, reply, services, outcome);
  return undefined;
}

function settle(req: FastifyRequest, reply: FastifyReply, services: Services, outcome: CapOutcome): void {
  for (const k in outcome.headers) reply.header(k, outcome.headers[k]);
  // A request rejected by a cap or by the quota did nothing and is not counted (api.md §7–8).
  if (outcome.error) throw refused(services, outcome.error);
  // Counted now, not when the response ends: it counts whatever the handler answers, and the
  // GET /me it admits shows it.
  services.usage.countApiCall(req.auth.account.id);
}

export function installPublicGuards(app: FastifyInstance, services: Services): void {
  app.decorateRequest('auth', null as unknown as AuthContext);

  // Callback style: on the hot path the hook finishes without allocating a promise.
  app.addHook('onRequest', (req, reply, done) => {
    let pending: Promise<void> | undefined;
    try {
      pending = guard(req, reply, services);
    } catch (err) {
      done(err as Error);
      return;
    }
    if (pending) pending.then(() => done(), done);
    else done();
  });

  // Unknown /api/v1 routes go through the same guards: "all routes" count (api.md §8).
  app.setNotFoundHandler(async () => {
    throw new ApiError('route_not_found');
  });
}
