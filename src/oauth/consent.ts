// The consent behind the console's page /console/conectar/<uid> (docs/mcp.md "Connecting with
// OAuth"): with the member's console session, `GET …/datos` says who asks (the client's name), for
// which account, what it may do and whether this member may allow it (owners and admins; not at
// the plan's maximum of connected apps unless this client is already connected); `POST
// …/decision {allow}` (X-Chasqui-CSRF) finishes the authorization: `Permitir` connects the app
// (or reuses this client's) and grants `mcp` on {PUBLIC_URL}/mcp; `Cancelar` answers the client
// `access_denied`. Both answer where the browser goes next. The paths sit under the interaction's
// own, so oidc-provider's interaction cookie (scoped to that path) comes with them.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import { z } from 'zod';
import { getAccount } from '../accounts/service.js';
import { whoOf } from '../audit/trail.js';
import { COOKIE, csrfMatches, sessionOf } from '../console/sessions.js';
import { ApiError } from '../http/errors.js';
import type { ZodApp } from '../http/schemas.js';
import { effectiveLimits } from '../limits/plans.js';
import { connectOauthApp, oauthAppOf } from '../mcp/apps.js';
import type { Services } from '../services.js';
import { MCP_SCOPE, mcpResource } from './provider.js';

const Params = z.strictObject({ uid: z.string().min(1).max(100) });
const tags = ['Console'];

export function consentRoutes(app: ZodApp, s: Services, providerOf: () => Promise<Provider>): void {
  /** The member's session and the interaction this browser holds (its cookie), or the Spanish refusal. */
  async function load(req: FastifyRequest, uid: string, reply: FastifyReply) {
    const provider = await providerOf();
    const session = await sessionOf(s, req.cookies[COOKIE]);
    if (!session) throw new ApiError('session_required');
    const details = await provider.interactionDetails(req.raw, reply.raw).catch(() => null);
    if (!details || details.uid !== uid) throw new ApiError('oauth_interaction_not_found');
    const client = await provider.Client.find(String(details.params.client_id));
    if (!client) throw new ApiError('oauth_interaction_not_found');
    const account = await getAccount(s.db, session.member.account_id);
    const clientName = client.clientName ?? client.clientId;
    const existing = await oauthAppOf(s.db, account.id, client.clientId);
    const { aiApps } = effectiveLimits(account.plan, account.limits);
    const connected = await countConnected(s, account.id);
    const atLimit = !existing && aiApps !== null && connected >= aiApps;
    return { provider, session, details, client, clientName, account, atLimit, limit: aiApps };
  }

  app.get(
    '/console/conectar/:uid/datos',
    { schema: { hide: true, summary: 'What an AI app asks to connect (the consent page)', tags, params: Params } },
    async (req, reply) => {
      const c = await load(req, req.params.uid, reply);
      const role = c.session.member.role;
      return {
        client: { id: c.client.clientId, name: c.clientName, uri: c.client.clientUri ?? null },
        account: { id: c.account.id, name: c.account.name },
        member: { name: c.session.member.name, role },
        allowed: role === 'owner' || role === 'admin',
        atLimit: c.atLimit,
        limit: c.limit,
        csrf: c.session.csrf,
      };
    },
  );

  app.post(
    '/console/conectar/:uid/decision',
    {
      schema: {
        hide: true,
        summary: 'Allow or cancel an AI app’s connection',
        tags,
        params: Params,
        body: z.strictObject({ allow: z.boolean() }),
      },
    },
    async (req, reply) => {
      const c = await load(req, req.params.uid, reply);
      if (!csrfMatches(c.session, req.headers['x-chasqui-csrf'])) throw new ApiError('csrf_failed');
      let result: Parameters<Provider['interactionResult']>[2];
      if (!req.body.allow) {
        result = { error: 'access_denied', error_description: 'La persona canceló la conexión.' };
      } else {
        const role = c.session.member.role;
        if (role !== 'owner' && role !== 'admin') throw new ApiError('oauth_role_refused');
        const { member } = c.session;
        const who = whoOf(req, { type: 'member', id: member.id, name: member.name });
        await connectOauthApp(s, c.account, c.client.clientId, c.clientName, who);
        const grant = c.details.grantId
          ? ((await c.provider.Grant.find(c.details.grantId)) ??
            new c.provider.Grant({ accountId: c.account.id, clientId: c.client.clientId }))
          : new c.provider.Grant({ accountId: c.account.id, clientId: c.client.clientId });
        grant.addResourceScope(mcpResource(s), MCP_SCOPE);
        // The prompt may still be `login` (no session of the provider yet): grant what was asked of
        // what exists (openid, mcp) rather than only what this prompt says is missing.
        const asked = String(c.details.params.scope ?? '').split(' ');
        const oidcScopes = asked.filter((x) => x === 'openid' || x === MCP_SCOPE);
        if (oidcScopes.length > 0) grant.addOIDCScope(oidcScopes.join(' '));
        const grantId = await grant.save();
        result = { login: { accountId: c.account.id }, consent: { grantId } };
      }
      const redirectTo = await c.provider.interactionResult(req.raw, reply.raw, result, { mergeWithLastSubmission: false });
      return { redirectTo };
    },
  );
}

async function countConnected(s: Services, accountId: string): Promise<number> {
  const r = await s.db
    .selectFrom('ai_apps')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
