// The console's own API (docs/console.md "Sessions"): login, logout, who am I, and the invite
// page's password. Everything else the console does goes through the operator account routes
// with the session cookie (admin/auth.ts).
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { getAccount } from '../accounts/service.js';
import { type AuditAction, audit, whoOf } from '../audit/trail.js';
import type { Executor } from '../db/index.js';
import type { MemberRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { clientIp } from '../http/guards.js';
import { NoBody, type RoutesFn } from '../http/schemas.js';
import { Password } from '../members/admin-routes.js';
import { verifyPassword } from '../members/password.js';
import { acceptInvite } from '../members/service.js';
import { ABSOLUTE_MS, COOKIE, csrfMatches, endSession, sessionOf, startSession } from './sessions.js';
import { streamRoutes } from './stream.js';

const tags = ['Console'];
/** Login throttling: failures per email and per IP in fixed 15-minute windows, shared through the limiter. */
const WINDOW_MS = 15 * 60_000;
const MAX_PER_EMAIL = 10;
const MAX_PER_IP = 100;

export const consoleRoutes: RoutesFn = (app, s) => {
  /** A login's audit line: under the member's account, the member as actor and target (privacy.md "Audit trail"). */
  const loginLine = (db: Executor, req: FastifyRequest, m: MemberRow, action: AuditAction, changes?: Record<string, unknown>) =>
    audit(db, s.clock.now(), whoOf(req, { type: 'member', id: m.id, name: m.name }), {
      accountId: m.account_id,
      action,
      target: { type: 'member', id: m.id },
      ...(changes ? { changes } : {}),
    });

  streamRoutes(app, s);
  const secure = s.publicUrl.startsWith('https:');

  app.post(
    '/console/api/login',
    {
      schema: {
        hide: true,
        summary: 'Log a member in (sets the chasqui_session cookie)',
        tags,
        body: z.strictObject({ email: z.string().trim().min(1).max(320), password: z.string().min(1).max(256) }),
      },
    },
    async (req, reply) => {
      const email = req.body.email.toLowerCase();
      const scopes = [`email:${email}`, `ip:${clientIp(req.raw, s.config.trustProxy)}`];
      const [byEmail, byIp] = await s.limiter.windowCounts(scopes, WINDOW_MS, 0);
      if (byEmail >= MAX_PER_EMAIL || byIp >= MAX_PER_IP) {
        const seconds = Math.ceil((WINDOW_MS - (s.clock.ms() % WINDOW_MS)) / 1000);
        throw new ApiError('login_throttled', {
          params: { minutes: Math.ceil(seconds / 60) },
          headers: { 'Retry-After': String(seconds) },
        });
      }
      const member = await s.db.selectFrom('members').selectAll().where('email', '=', email).executeTakeFirst();
      // The scrypt work is done whether the email exists or not: the answer's time tells nothing.
      const ok = await verifyPassword(req.body.password, member?.password_hash ?? null);
      if (!member || !ok || member.status !== 'active') {
        await s.limiter.windowCounts(scopes, WINDOW_MS, 1);
        // An unknown email has no account to file a line under: only the throttle counts it.
        if (member) await loginLine(s.db, req, member, 'login.failed', { reason: ok ? `member_${member.status}` : 'wrong_password' });
        throw new ApiError('login_failed');
      }
      const { token } = await s.db.transaction().execute(async (trx) => {
        await loginLine(trx, req, member, 'login.succeeded');
        return startSession(s, member.id, trx);
      });
      req.log.info({ memberId: member.id, accountId: member.account_id }, 'member login');
      return reply
        .setCookie(COOKIE, token, { httpOnly: true, sameSite: 'lax', path: '/', secure, maxAge: ABSOLUTE_MS / 1000 })
        .code(204)
        .send();
    },
  );

  app.post(
    '/console/api/logout',
    { schema: { hide: true, summary: 'End the session (X-Chasqui-CSRF required)', tags, body: NoBody } },
    async (req, reply) => {
      const token = req.cookies[COOKIE];
      const session = await sessionOf(s, token);
      if (session && token) {
        if (!csrfMatches(session, req.headers['x-chasqui-csrf'])) throw new ApiError('csrf_failed');
        await endSession(s, token);
      }
      return reply.clearCookie(COOKIE, { path: '/' }).code(204).send();
    },
  );

  app.get('/console/api/me', { schema: { hide: true, summary: 'The member of the session and their account', tags } }, async (req) => {
    const session = await sessionOf(s, req.cookies[COOKIE]);
    if (!session) throw new ApiError('session_required');
    const { member, csrf } = session;
    const account = await getAccount(s.db, member.account_id);
    return {
      member: { id: member.id, email: member.email, name: member.name, role: member.role },
      account: { id: account.id, name: account.name, plan: account.plan },
      csrf,
    };
  });

  app.post(
    '/console/api/invites/:token',
    {
      schema: {
        hide: true,
        summary: 'Choose the password of an invited member (one use, 7 days)',
        tags,
        params: z.object({ token: z.string().min(1).max(200) }),
        body: z.strictObject({ password: Password }),
      },
    },
    async (req, reply) => {
      await acceptInvite(s, req.params.token, req.body.password, whoOf(req));
      return reply.code(204).send();
    },
  );
};
