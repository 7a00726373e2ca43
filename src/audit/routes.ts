// Operator API: the audit trail of an account, and the installation's own (operator.md "Audit
// trail"; docs/privacy.md).
// Owners read it in the console (Configuración → Actividad; console/roles.ts).
import { z } from 'zod';
import { CursorQuery, errors, IdParams, type RoutesFn, Timestamp, Uuid } from '../http/schemas.js';
import { listAuditLines } from './log.js';
import { AUDIT_ACTIONS } from './trail.js';

const AuditLine = z.object({
  id: Uuid,
  at: Timestamp.describe('When the action happened'),
  actor: z
    .object({
      type: z.enum(['operator', 'member', 'api_key', 'ai_app', 'system']).describe('Who acted: the operator token, a console member, …'),
      id: z.string().nullable().describe('The member, key or app; null for the operator and the system'),
      name: z.string().nullable().describe('Their name when the line was written').meta({ example: 'Ana Dueña' }),
    })
    .describe('Who acted'),
  action: z.enum(AUDIT_ACTIONS).describe('What was done').meta({ example: 'webhook.created' }),
  target: z
    .object({ type: z.string().meta({ example: 'webhook' }), id: z.string() })
    .nullable()
    .describe('What it was done to (a key, a webhook, a member…)'),
  requestId: z.string().nullable().describe('The X-Request-Id of the request that did it; null outside a request'),
  ip: z.string().nullable().describe('The client address of that request'),
  changes: z
    .record(z.string(), z.unknown())
    .describe('What changed: names and {from, to} of non-secret fields; never a secret, a token or message text')
    .meta({ example: { role: { from: 'agent', to: 'admin' } } }),
});

const AuditPage = z.object({
  data: z.array(AuditLine),
  hasMore: z.boolean(),
  nextCursor: Uuid.nullable().describe('The `after` of the next page; null on the last one'),
});

const AuditQuery = CursorQuery.extend({
  action: z.enum(AUDIT_ACTIONS).optional().describe('Only lines of this action'),
});

export const auditAdminRoutes: RoutesFn = (app, s) => {
  app.get(
    '/accounts/:id/audit',
    {
      schema: {
        summary: "The account's audit trail, newest first (cursor pages, filter by action)",
        description: `Kept AUDIT_RETENTION_DAYS (400 by default). Actions: ${AUDIT_ACTIONS.join(', ')}.`,
        tags: ['Operator'],
        params: IdParams,
        querystring: AuditQuery,
        response: {
          200: AuditPage,
          ...errors(400, 404),
        },
      },
    },
    async (req) => listAuditLines(s.db, req.account.id, req.query),
  );
  // What is done to the whole installation rather than to one account (a key rotation): the
  // operator's only (a console session reaches account routes alone).
  app.get(
    '/audit',
    {
      schema: {
        summary: "The installation's own audit trail (secrets.rotated), newest first",
        description: "The lines of actions on no account. Same cursor pages and filter as an account's.",
        tags: ['Operator'],
        querystring: AuditQuery,
        response: { 200: AuditPage, ...errors(400) },
      },
    },
    async (req) => listAuditLines(s.db, null, req.query),
  );
};
