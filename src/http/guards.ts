// The guard pipeline of every /api/v1 request, in the order of decisions.md ("Errors"):
// IP block (429) → key (401) → plan (402) → minute caps (429) → monthly quota (429).
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type AuthContext, bearer } from '../keys/service.js';
import { planHasApi } from '../limits/plans.js';
import type { CapOutcome } from '../limits/types.js';
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

/**
 * A request the memory lane (memory-lane.ts) identified and admitted before handing it to
 * Fastify (its admission was not settled synchronously, or refused it): the guards take it over
 * rather than admitting the request a second time.
 */
export interface Admission {
  auth: AuthContext;
  ip: string;
  outcome: CapOutcome | Promise<CapOutcome>;
}
export const kAdmission = Symbol('chasqui.admission');
declare module 'node:http' {
  interface IncomingMessage {
    [kAdmission]?: Admission;
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

/** An API call of the quota month: every request with a valid key, successful or not (api.md §8). */
function countCall(req: FastifyRequest, services: Services): void {
  req.countsAsCall = true;
  services.usage.countApiCall(req.auth.account.id);
}

/** The caller's cached key, when the checks before the caps can be made without reading. */
export function cachedAuth(req: IncomingMessage, services: Services, ip: string): AuthContext | undefined {
  if (services.limiter.ipBlocked(ip)) return undefined;
  const auth = services.auth.cachedOn(req.socket, req.headers.authorization);
  return auth && planHasApi(auth.account.plan) ? auth : undefined;
}

/**
 * The checks of one request. Returns undefined when they are done (the hot path: a cached key
 * and counters known to this process, no promise at all), or a promise when something must be
 * read; throws the ApiError that answers the request.
 */
function guard(req: FastifyRequest, reply: FastifyReply, services: Services): Promise<void> | undefined {
  const admitted = req.raw[kAdmission];
  if (admitted) {
    req.auth = admitted.auth;
    return settleOutcome(req, reply, services, admitted.outcome);
  }
  const ip = clientIp(req.raw, services.config.trustProxy);
  if (services.limiter.ipBlocked(ip)) throw new ApiError('ip_blocked');
  const auth = services.auth.cachedOn(req.raw.socket, req.headers.authorization);
  if (auth) return admit(req, reply, services, auth, ip);
  return services.auth.authenticate(bearer(req.headers.authorization)).then(async (found) => {
    if (!found) {
      // Any 401 counts for the caller's IP; the 21st within a minute blocks it (decisions.md).
      if (await services.limiter.invalidKey(ip)) throw new ApiError('ip_blocked');
      throw new ApiError('unauthorized');
    }
    return admit(req, reply, services, found, ip);
  });
}

function admit(req: FastifyRequest, reply: FastifyReply, services: Services, auth: AuthContext, ip: string): Promise<void> | undefined {
  req.auth = auth;
  const { account } = auth;
  if (!planHasApi(account.plan)) {
    countCall(req, services);
    throw new ApiError('plan_without_api', {
      params: { plan: account.plan },
      cause: { type: 'upgrade', reason: 'plan', resource: 'api', plan: account.plan, limit: null, used: null, suggested: 'escala' },
    });
  }
  const message = req.method === 'POST' && req.routeOptions.url === '/api/v1/messages';
  return settleOutcome(req, reply, services, services.limiter.admit(auth.caps, { ip, message }));
}

function settleOutcome(
  req: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  outcome: CapOutcome | Promise<CapOutcome>,
): Promise<void> | undefined {
  if (outcome instanceof Promise) return outcome.then((o) => settle(req, reply, services, o));
  settle(req, reply, services, outcome);
  return undefined;
}

function settle(req: FastifyRequest, reply: FastifyReply, services: Services, outcome: CapOutcome): void {
  for (const k in outcome.headers) reply.header(k, outcome.headers[k]);
  // A request rejected by a cap or by the quota did nothing and is not counted (api.md §7–8).
  if (outcome.error) throw outcome.error;
  // Counted now, not when the response ends: it counts whatever the handler answers, and a
  // GET /me right after sees it.
  countCall(req, services);
}

export function installPublicGuards(app: FastifyInstance, services: Services): void {
  app.decorateRequest('auth', null as unknown as AuthContext);
  app.decorateRequest('countsAsCall', false);

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

  // Read your writes: after a write of the account through this process (its transaction has
  // committed before the answer is sent), its next GET /me reads anew.
  app.addHook('onSend', (req, _reply, payload, done) => {
    if (req.auth && req.method !== 'GET' && req.method !== 'HEAD') services.accountViews.changed(req.auth.account.id);
    done(null, payload);
  });

  // Unknown /api/v1 routes go through the same guards: "all routes" count (api.md §8).
  app.setNotFoundHandler(async () => {
    throw new ApiError('route_not_found');
  });
}
