// The authorization server for AI apps (docs/mcp.md "Connecting with OAuth"; MCP's authorization
// spec): oidc-provider, issuer = PUBLIC_URL, mounted under /oauth, its state in our database
// (adapter.ts) and its keys too (keys.ts). Our choices on top of its defaults:
// - PKCE (S256) for every client; the RFC 8707 `resource` is required and must be exactly
//   {PUBLIC_URL}/mcp, whose only scope is `mcp`; access tokens are opaque, 1 h, bound to it;
// - open dynamic registration (redirect URIs checked and native apps recognised in routes.ts), and
//   Client ID Metadata Documents (an https client_id whose JSON names the client), fetched
//   through the webhooks' SSRF guard and cached;
// - refresh tokens for every client without asking `offline_access`, rotated at every use (a
//   reused one revokes the family);
// - the person logs in with the console's session and consents on the console's page
//   (/console/conectar/<uid>, consent.ts).
import Provider, { type Configuration, errors, type KoaContextWithOIDC } from 'oidc-provider';
import { fetch as undiciFetch } from 'undici';
import { oauthPageFallback, oauthPageTexts } from '../http/messages.es-AR.js';
import { forgetCredentials } from '../keys/service.js';
import type { Services } from '../services.js';
import { createAgent } from '../webhooks/send.js';
import { assertPublicUrl } from '../webhooks/ssrf.js';
import { adapterClass } from './adapter.js';
import { oauthKeys } from './keys.js';

export const OAUTH_PREFIX = '/oauth';
export const MCP_SCOPE = 'mcp';
const ACCESS_TOKEN_TTL_S = 3600;

/** The one resource this server issues tokens for: the MCP endpoint, exactly as clients call it. */
export const mcpResource = (s: Pick<Services, 'publicUrl'>): string => `${s.publicUrl}/mcp`;

export async function createOauthProvider(s: Services): Promise<Provider> {
  const keys = await oauthKeys(s.db, s.secrets);
  const resource = mcpResource(s);
  const secure = s.publicUrl.startsWith('https:');
  // Client ID Metadata Documents are fetched like webhooks are sent: private and loopback
  // addresses refused (unless ALLOW_PRIVATE_WEBHOOKS, never in production), bounded time.
  const cimdAgent = createAgent({ allowPrivate: s.config.allowPrivateWebhooks, connectionsPerOrigin: 2, timeoutMs: 2_500 });
  const configuration: Configuration = {
    adapter: adapterClass(s.db, s.secrets),
    clients: [],
    jwks: keys.jwks as Configuration['jwks'],
    cookies: {
      keys: keys.cookieKeys,
      long: { signed: true, secure, sameSite: 'lax' },
      short: { signed: true, secure, sameSite: 'lax' },
    },
    fetch: ((url: string | URL, options: Record<string, unknown>) =>
      undiciFetch(url, { ...options, dispatcher: cimdAgent })) as unknown as Configuration['fetch'],
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    scopes: [MCP_SCOPE],
    claims: { openid: ['sub'] },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: false },
      revocation: { enabled: true },
      clientIdMetadataDocument: {
        enabled: true,
        ack: 'draft-02',
        async allowFetch(_ctx, clientId) {
          if (s.config.allowPrivateWebhooks) return true;
          try {
            await assertPublicUrl(new URL(clientId));
            return true;
          } catch {
            return false;
          }
        },
      },
      resourceIndicators: {
        enabled: true,
        // The resource is required on the authorization request (RFC 8707; mcp.md).
        async defaultResource(_ctx, _client, oneOf) {
          if (oneOf) return oneOf;
          throw new errors.InvalidTarget(`resource is required: ${resource}`);
        },
        async getResourceServerInfo(_ctx, indicator) {
          if (indicator !== resource) throw new errors.InvalidTarget(`the only resource is ${resource}`);
          return { scope: MCP_SCOPE, audience: resource, accessTokenTTL: ACCESS_TOKEN_TTL_S, accessTokenFormat: 'opaque' };
        },
        useGrantedResource: async () => true,
      },
    },
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'ES256',
    },
    responseTypes: ['code'],
    pkce: { required: () => true },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL_S,
      AuthorizationCode: 60,
      RefreshToken: 30 * 24 * 3600,
      Grant: 365 * 24 * 3600,
      Interaction: 3600,
      Session: 14 * 24 * 3600,
      IdToken: 3600,
    },
    interactions: { url: async (_ctx: KoaContextWithOIDC, interaction) => `/console/conectar/${interaction.uid}` },
    async renderError(ctx, out) {
      ctx.type = 'html';
      const text = (v: unknown) => String(v ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
      const said = oauthPageTexts[String(out.error)] ?? oauthPageFallback;
      const detail = [out.error, out.error_description].filter(Boolean).join(': ');
      ctx.body = `<!doctype html><html lang="es"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>No se pudo conectar</title><style>body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:2rem 1rem;color:#1f2328}main{max-width:36rem;margin:0 auto}small{color:#59636e;overflow-wrap:anywhere}</style></head><body><main><h1>No se pudo conectar la app</h1><p>${text(said)}</p><p><small>Detalle técnico: ${text(detail)}</small></p></main></body></html>`;
    },
  };
  const provider = new Provider(s.publicUrl, configuration);
  provider.proxy = s.config.trustProxy;
  // /mcp caches a token's app for 2 s (mcp/apps.ts): a token revoked here (revocation endpoint, a
  // reused refresh token revoking its family) is forgotten at once, in every process.
  provider.on('access_token.destroyed', (token: { accountId?: string }) => {
    if (token.accountId) forgetCredentials(s, token.accountId);
  });
  provider.on('grant.revoked', (ctx: KoaContextWithOIDC) => {
    const accountId = ctx.oidc?.entities?.RefreshToken?.accountId ?? ctx.oidc?.entities?.Grant?.accountId;
    if (accountId) forgetCredentials(s, accountId);
  });
  return provider;
}
