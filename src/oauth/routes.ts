// The authorization server's HTTP side (docs/mcp.md "Connecting with OAuth"): oidc-provider's
// endpoints under /oauth (authorize, token, registration, revocation, JWKS), its RFC 8414 and
// OpenID metadata at the root well-known paths (the issuer is PUBLIC_URL), and the consent the
// console's page (/console/conectar/<uid>) reads and answers with the member's session.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import type { ZodApp } from '../http/schemas.js';
import type { Services } from '../services.js';
import { consentRoutes } from './consent.js';
import { createOauthProvider, OAUTH_PREFIX } from './provider.js';

type Callback = ReturnType<Provider['callback']>;

/** Hands a request to oidc-provider as if it were mounted at /oauth (its mount path comes from originalUrl). */
async function handOver(callback: Callback, req: FastifyRequest, reply: FastifyReply, inner: string): Promise<void> {
  const raw = req.raw as typeof req.raw & { originalUrl?: string };
  raw.originalUrl = `${OAUTH_PREFIX}${inner}`;
  raw.url = inner;
  reply.hijack();
  await callback(raw, reply.raw);
}

export async function oauthRoutes(app: FastifyInstance, s: Services): Promise<void> {
  // Made at the first request: PUBLIC_URL (the issuer) may only be known once the server listens.
  let made: Promise<{ provider: Provider; callback: Callback }> | null = null;
  const ready = () => {
    made ??= createOauthProvider(s).then((provider) => ({ provider, callback: provider.callback() }));
    made.catch(() => {
      made = null;
    });
    return made;
  };
  await app.register(async (scope) => {
    // oidc-provider reads its own bodies (forms and JSON): the stream is left to it.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));
    scope.all(`${OAUTH_PREFIX}/*`, { schema: { hide: true } }, async (req, reply) =>
      handOver((await ready()).callback, req, reply, req.raw.url!.slice(OAUTH_PREFIX.length) || '/'),
    );
    // RFC 8414 and OpenID discovery at the root (the issuer has no path).
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      scope.get(path, { schema: { hide: true } }, async (req, reply) =>
        handOver((await ready()).callback, req, reply, '/.well-known/openid-configuration'),
      );
    }
  });
  await app.register(async (c) => consentRoutes(c as unknown as ZodApp, s, async () => (await ready()).provider));
}
