// The guard pipeline of every authenticated door, in the order of decisions.md ("Errors"):
// IP block (429) → credential (401, 404) → plan (402) → minute caps (429) → monthly quota (429).
// A door names its credential kind and how it is looked up and refused; the IP block and its
// counter of failed credentials are one for every door. /api/v1 (an API key) is the hot path:
// a cached key and counters known to this process finish the hook without a promise.
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AccountRow } from '../db/types.js';
import type { AuthContext } from '../keys/service.js';
import { bearer } from '../keys/token-cache.js';
import { planHasApi } from '../limits/plans.js';
import type { AccountLimitsCtx, CapOutcome } from '../limits/types.js';
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

/** The credential a door takes: an API key (/api/v1), an AI app's token (/mcp), an automation's hook token. */
export type CredentialKind = 'api_key' | 'app_token' | 'hook_token';

/**
 * An authenticated door: its credential (looked up, and refused when unknown) and what admits a
 * principal once known (plan and caps). Every failed credential counts toward the IP block.
 */
export interface Door<P> {
  readonly credential: CredentialKind;
  /** The principal of a cached credential (the hot path: no promise), else undefined. */
  cached(req: FastifyRequest): P | undefined;
  /** Looks the credential up: its principal, or null (missing, unknown, revoked). */
  lookup(req: FastifyRequest): Promise<P | null>;
  /** The answer to a credential that names nobody (it has counted toward the IP block). */
  unknown(req: FastifyRequest): Error;
  /** The answer to a blocked IP, in this door's shape. */
  blocked(): Error;
  /** Plan and caps of the principal (undefined when decided without a promise); throws the refusal. */
  admit(req: FastifyRequest, reply: FastifyReply, principal: P, ip: string): Promise<void> | undefined;
  /** Caps that need the body (run as a preHandler, once it is parsed); throws the refusal. */
  admitBody?(req: FastifyRequest): Promise<void>;
}

function blocked<P>(services: Services, door: Door<P>): Error {
  services.metrics.limitRefusal('ip_block');
  return door.blocked();
}

/**
 * The checks of one request. Returns undefined when they are done (the hot path: a cached
 * credential and counters known to this process, no promise at all), or a promise when something
 * must be read; throws the error that answers the request.
 */
function guard<P>(req: FastifyRequest, reply: FastifyReply, services: Services, door: Door<P>): Promise<void> | undefined {
  const ip = clientIp(req.raw, services.config.trustProxy);
  if (services.limiter.ipBlocked(ip)) throw blocked(services, door);
  const principal = door.cached(req);
  if (principal !== undefined) return door.admit(req, reply, principal, ip);
  return door.lookup(req).then(async (found) => {
    if (!found) {
      // Any failed credential counts for the caller's IP, whatever the door; the 21st within a
      // minute blocks it (decisions.md).
      if (await services.limiter.invalidKey(ip)) throw blocked(services, door);
      throw door.unknown(req);
    }
    return door.admit(req, reply, found, ip);
  });
}

/**
 * Plan (402) → minute caps (429) → monthly quota (429) of an API call of `account` (a request to
 * /api/v1, or an automation's incoming webhook): undefined when decided without a promise.
 */
export function admitApiCall(
  reply: FastifyReply,
  services: Services,
  account: AccountRow,
  caps: AccountLimitsCtx,
  ip: string,
  message: boolean,
): Promise<void> | undefined {
  if (!planHasApi(account.plan)) {
    // An API call of the quota month: every request with a valid key, successful or not (api.md §8).
    services.usage.countApiCall(account.id);
    throw new ApiError('plan_without_api', {
      params: { plan: account.plan },
      cause: { type: 'upgrade', reason: 'plan', resource: 'api', plan: account.plan, limit: null, used: null, suggested: 'escala' },
    });
  }
  const outcome = services.limiter.admit(caps, { ip, message });
  if (outcome instanceof Promise) return outcome.then((o) => settle(reply, services, account.id, o));
  settle(reply, services, account.id, outcome);
  return undefined;
}

function settle(reply: FastifyReply, services: Services, accountId: string, outcome: CapOutcome): void {
  for (const k in outcome.headers) reply.header(k, outcome.headers[k]);
  // A request rejected by a cap or by the quota did nothing and is not counted (api.md §7–8).
  if (outcome.error) throw refused(services, outcome.error);
  // Counted now, not when the response ends: it counts whatever the handler answers, and the
  // GET /me it admits shows it.
  services.usage.countApiCall(accountId);
}

/** Installs a door's guard pipeline on every route of `app` (an encapsulated Fastify scope). */
export function installGuards<P>(app: FastifyInstance, services: Services, door: Door<P>): void {
  // Callback style: on the hot path the hook finishes without allocating a promise.
  app.addHook('onRequest', (req, reply, done) => {
    let pending: Promise<void> | undefined;
    try {
      pending = guard(req, reply, services, door);
    } catch (err) {
      done(err as Error);
      return;
    }
    if (pending) pending.then(() => done(), done);
    else done();
  });
  const { admitBody } = door;
  if (admitBody) app.addHook('preHandler', (req) => admitBody.call(door, req));
}

/** /api/v1: an API key `etk_live_…` (keys/service.ts), a plan with the API, both caps and the quota. */
const apiDoor = (services: Services): Door<AuthContext> => ({
  credential: 'api_key',
  cached: (req) => services.auth.cached(req.headers.authorization),
  lookup: (req) => services.auth.authenticate(bearer(req.headers.authorization)),
  // An AI app's token where a key belongs: say which credential this API takes.
  unknown: (req) => new ApiError(bearer(req.headers.authorization)?.startsWith('etk_app_') ? 'unauthorized_app_token' : 'unauthorized'),
  blocked: () => new ApiError('ip_blocked'),
  admit(req, reply, auth, ip) {
    req.auth = auth;
    const message = req.method === 'POST' && req.routeOptions.url === '/api/v1/messages';
    return admitApiCall(reply, services, auth.account, auth.caps, ip, message);
  },
});

export function installPublicGuards(app: FastifyInstance, services: Services): void {
  app.decorateRequest('auth', null as unknown as AuthContext);
  installGuards(app, services, apiDoor(services));

  // Unknown /api/v1 routes go through the same guards: "all routes" count (api.md §8).
  app.setNotFoundHandler(async () => {
    throw new ApiError('route_not_found');
  });
}
