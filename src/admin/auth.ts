// Operator API auth (operator.md): `Authorization: Bearer <ADMIN_TOKEN>`, or a console member's
// session cookie (docs/console.md "Sessions"). With a session: only the member's own account's
// routes (another account → 404 account_not_found; routes that name no account → 404
// route_not_found), the X-Chasqui-CSRF header (and a matching Origin) on state changes, and the
// role table (console/roles.ts) → 403 otherwise. What a member changes is logged as `member action`.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { leastRole, roleAllows } from '../console/roles.js';
import { COOKIE, csrfMatches, type Session, sessionOf } from '../console/sessions.js';
import { ApiError } from '../http/errors.js';
import { bearer } from '../keys/token-cache.js';
import type { Services } from '../services.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The console session of the request, when it came with one instead of the operator token. */
    session: Session | null;
  }
}

const digest = (s: string) => createHash('sha256').update(s).digest();
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);
const ACCOUNT_ROUTE = /^\/admin\/v1\/accounts\/:id(\/.*)?$/;

/** The Origin header, when sent, is this server's: PUBLIC_URL's origin or the Host the request named. */
function originAllowed(req: FastifyRequest, publicUrl: string): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  const own = [new URL(publicUrl).origin, `${req.protocol}://${req.host}`];
  return own.includes(origin);
}

/** Who acts, when a member does through a session (docs/console.md: "attributed to them"); null for the operator. */
export const memberBy = (req: FastifyRequest): { type: 'member'; id: string; name: string } | null =>
  req.session ? { type: 'member', id: req.session.member.id, name: req.session.member.name } : null;

export function adminAuth(app: FastifyInstance, services: Services): void {
  const expected = digest(services.adminToken);
  app.decorateRequest('session', null);
  app.addHook('onRequest', async (req) => {
    const token = bearer(req.headers.authorization);
    if (token || req.cookies?.[COOKIE] === undefined) {
      if (!token || !timingSafeEqual(digest(token), expected)) throw new ApiError('admin_unauthorized');
      return;
    }
    const session = await sessionOf(services, req.cookies[COOKIE]);
    if (!session) throw new ApiError('session_required');
    req.session = session;
    const route = ACCOUNT_ROUTE.exec(req.routeOptions.url ?? '');
    if (!route) throw new ApiError('route_not_found');
    if ((req.params as { id?: string }).id !== session.member.account_id) throw new ApiError('account_not_found');
    if (!SAFE.has(req.method) && (!csrfMatches(session, req.headers['x-chasqui-csrf']) || !originAllowed(req, services.publicUrl)))
      throw new ApiError('csrf_failed');
    if (!roleAllows(session.member.role, leastRole(req.method, route[1] ?? ''))) throw new ApiError('role_forbidden');
  });
  app.addHook('onResponse', async (req, reply) => {
    if (!req.session || SAFE.has(req.method)) return;
    req.log.info(
      {
        memberId: req.session.member.id,
        accountId: req.session.member.account_id,
        method: req.method,
        route: req.routeOptions.url,
        status: reply.statusCode,
      },
      'member action',
    );
  });
}
