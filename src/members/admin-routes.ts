// Operator API: members of an account (operator.md "Members"; docs/console.md). Through a console
// session owners and admins reach these routes (console/roles.ts); the service refuses an admin
// who touches an owner or names one (403 owner_only).
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { whoOf } from '../audit/trail.js';
import { errors, IdParams, NoBody, type RoutesFn, Timestamp, Uuid } from '../http/schemas.js';
import { type Actor, addMember, getMember, listMembers, memberView, ROLES, removeMember, updateMember } from './service.js';

const tags = ['Operator: members'];
const MemberParams = z.object({ id: Uuid, memberId: Uuid });
const Role = z.enum(ROLES).describe('owner (everything) | admin (everything; members but not owners) | agent (the inbox)');
const Name = z.string().trim().min(1).max(200);
export const Password = z.string().min(12).max(256).describe('12 to 256 characters');

/** Who acts: the operator token (null) or the session's member's role. */
const actorOf = (req: FastifyRequest): Actor => req.session?.member.role ?? null;

const MemberView = z.object({
  id: Uuid,
  email: z.string(),
  name: z.string(),
  role: Role,
  status: z.enum(['active', 'invited', 'disabled']),
  createdAt: Timestamp,
  lastSeenAt: Timestamp.nullable(),
});

export const memberAdminRoutes: RoutesFn = (app, s) => {
  app.post(
    '/accounts/:id/members',
    {
      schema: {
        summary: 'Add a member (with a password: active; without: invited, with a one-use invite link)',
        tags,
        params: IdParams,
        body: z.strictObject({ email: z.email().max(320), name: Name.optional(), role: Role, password: Password.optional() }),
        response: {
          201: z.object({
            member: MemberView,
            inviteUrl: z.string().nullable().describe('{PUBLIC_URL}/console/invite/<token>: one use, 7 days; null with a password'),
          }),
          ...errors(400, 403, 404, 409),
        },
      },
    },
    async (req, reply) => reply.code(201).send(await addMember(s, req.account, req.body, actorOf(req), whoOf(req))),
  );

  app.get(
    '/accounts/:id/members',
    {
      schema: {
        summary: 'List the members of an account',
        tags,
        params: IdParams,
        response: { 200: z.object({ data: z.array(MemberView) }), ...errors(404) },
      },
    },
    async (req) => ({ data: (await listMembers(s.db, req.account.id)).map(memberView) }),
  );

  app.get(
    '/accounts/:id/members/:memberId',
    { schema: { summary: 'Get a member', tags, params: MemberParams, response: { 200: MemberView, ...errors(404) } } },
    async (req) => memberView(await getMember(s.db, req.account.id, req.params.memberId)),
  );

  app.patch(
    '/accounts/:id/members/:memberId',
    {
      schema: {
        summary: 'Change a member (disabling ends their sessions at once; the last active owner stays; an admin leaves owners alone)',
        tags,
        params: MemberParams,
        body: z.strictObject({ name: Name.optional(), role: Role.optional(), status: z.enum(['active', 'disabled']).optional() }),
        response: { 200: MemberView, ...errors(400, 403, 404, 409) },
      },
    },
    async (req) => updateMember(s, req.account.id, req.params.memberId, req.body, actorOf(req), whoOf(req)),
  );

  app.delete(
    '/accounts/:id/members/:memberId',
    {
      schema: {
        summary: 'Remove a member (the last active owner stays; an admin leaves owners alone)',
        tags,
        params: MemberParams,
        body: NoBody,
      },
    },
    async (req, reply) => {
      await removeMember(s, req.account.id, req.params.memberId, actorOf(req), whoOf(req));
      return reply.code(204).send();
    },
  );
};
