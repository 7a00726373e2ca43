// The authorization server's HTTP side (docs/mcp.md "Connecting with OAuth"): oidc-provider's
// endpoints under /oauth (authorize, token, registration, revocation, JWKS), its RFC 8414 and
// OpenID metadata at the root well-known paths (the issuer is PUBLIC_URL), and the consent the
// console's page (/console/conectar/<uid>) reads and answers with the member's session.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import { ApiError } from '../http/errors.js';
import { clientIp } from '../http/guards.js';
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

/** Open registration, per IP: REGISTRATIONS_PER_HOUR in a fixed hour, shared across processes. */
const REGISTRATIONS_PER_HOUR = 30;
const HOUR_MS = 3_600_000;

async function throttleRegistration(s: Services, req: FastifyRequest): Promise<void> {
  const [n = 0] = await s.limiter.windowCounts([`oauth-reg:${clientIp(req.raw, s.config.trustProxy)}`], HOUR_MS, 1);
  if (n <= REGISTRATIONS_PER_HOUR) return;
  const seconds = Math.ceil((HOUR_MS - (s.clock.ms() % HOUR_MS)) / 1000);
  s.metrics.limitRefusal('oauth_registrations');
  throw new ApiError('oauth_registration_throttled', {
    params: { minutes: Math.ceil(seconds / 60) },
    headers: { 'Retry-After': String(seconds) },
  });
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
const REGISTRATION_MAX_BYTES = 56 * 1024;

/**
 * A registration's redirect URIs (mcp.md "Clients"): https, loopback http on any port, or a
 * private-use scheme such as cursor:// — a client with one of those is a native app when it did
 * not say (oidc-provider accepts private-use schemes only from native apps, and plain http from
 * anyone). The body is read here and handed on parsed. Returns the Spanish refusal, or null.
 */
async function prepareRegistration(req: FastifyRequest): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req.raw) {
    size += (chunk as Buffer).length;
    if (size > REGISTRATION_MAX_BYTES) return 'El registro de la app es demasiado grande.';
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  const raw = req.raw as typeof req.raw & { body?: unknown };
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    raw.body = text;
    return null;
  }
  const uris = Array.isArray(body.redirect_uris) ? body.redirect_uris : [];
  let privateScheme = false;
  for (const uri of uris) {
    const u = typeof uri === 'string' ? URL.parse(uri) : null;
    if (!u) continue; // the provider names a malformed one
    if (u.protocol === 'http:' && !LOOPBACK.has(u.hostname))
      return `La dirección de retorno ${uri} tiene que ser https (o http solo en esta misma máquina: localhost o 127.0.0.1).`;
    if (!['http:', 'https:', 'javascript:', 'data:', 'file:'].includes(u.protocol)) privateScheme = true;
  }
  if (privateScheme && body.application_type === undefined) body.application_type = 'native';
  raw.body = body;
  return null;
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
    scope.all(`${OAUTH_PREFIX}/*`, { schema: { hide: true } }, async (req, reply) => {
      const inner = req.raw.url!.slice(OAUTH_PREFIX.length) || '/';
      if (req.method === 'POST' && inner.split('?')[0] === '/reg') {
        await throttleRegistration(s, req);
        const refusal = await prepareRegistration(req);
        if (refusal) return reply.code(400).send({ error: 'invalid_redirect_uri', error_description: refusal });
      }
      return handOver((await ready()).callback, req, reply, inner);
    });
    // RFC 8414 and OpenID discovery at the root (the issuer has no path).
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      scope.get(path, { schema: { hide: true } }, async (req, reply) =>
        handOver((await ready()).callback, req, reply, '/.well-known/openid-configuration'),
      );
    }
  });
  await app.register(async (c) => consentRoutes(c as unknown as ZodApp, s, async () => (await ready()).provider));
}
