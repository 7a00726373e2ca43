// Builds the Fastify instance: error shape, request ids, validation, OpenAPI, and the surfaces
// (public /api/v1 behind the guards, operator /admin/v1, channel receivers, /mcp for AI apps).
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import fastifyCookie from '@fastify/cookie';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import { jsonSchemaTransform, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { ZodType, z } from 'zod';
import { accountRoutes } from './accounts/routes.js';
import { loadAccountOfAdminRoutes } from './admin/account.js';
import { adminAuth } from './admin/auth.js';
import { adminRoutes } from './admin/routes.js';
import { agentRoutes } from './agents/routes.js';
import { automationHookRoutes } from './automations/hooks-routes.js';
import { automationRoutes } from './automations/routes.js';
import { campaignRoutes } from './campaigns/routes.js';
import { caseRoutes } from './cases/routes.js';
import { cloudReceiverRoutes } from './channel/cloud/routes.js';
import { instagramReceiverRoutes } from './channel/instagram/routes.js';
import { consoleRoutes } from './console/routes.js';
import { consoleApp } from './console/static.js';
import { contactRoutes } from './contacts/routes.js';
import { conversationRoutes } from './conversations/routes.js';
import { errorHandler } from './http/error-handler.js';
import { ApiError, ValidationError, type ValidationProblem } from './http/errors.js';
import { installPublicGuards } from './http/guards.js';
import { healthRoutes } from './http/health.js';
import { installIdempotency } from './http/idempotency.js';
import { textFor } from './http/messages.es-AR.js';
import { operatorDocument, publicDocument } from './http/openapi.js';
import { requestLogger } from './http/request-logger.js';
import type { ZodApp } from './http/schemas.js';
import { checkingIntervalFor, clientErrorHandler, watchBody } from './http/slow-clients.js';
import { findUnstorable, jsonTextSuspect } from './http/storable.js';
import { installSpanishZodMessages } from './http/zod-es.js';
import { mcpMetadataRoutes } from './mcp/metadata-routes.js';
import { mcpRoutes } from './mcp/server.js';
import { messageRoutes } from './messages/routes.js';
import { countRefusal, installMetrics } from './metrics/routes.js';
import { oauthRoutes } from './oauth/routes.js';
import type { Services } from './services.js';
import { templateRoutes } from './templates/routes.js';

export const BODY_LIMIT = 1024 * 1024; // 1 MiB (decisions.md: larger → 413)
const MAX_PARAM_LENGTH = 500;

/** The package's version: the API documents' `info.version`. src/ and dist/ both sit beside package.json. */
const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

installSpanishZodMessages();

/** One problem per zod issue; an unknown key is a problem of its own, at its path (Stripe's "unknown parameter"). */
function problemsOf(i: z.core.$ZodIssue): ValidationProblem[] {
  const path = i.path.map((p) => (typeof p === 'number' ? p : String(p)));
  if (i.code === 'unrecognized_keys') return i.keys.map((k) => ({ path: [...path, k], message: textFor('unknown_field') }));
  return [{ path, message: i.message }];
}

export async function buildApp(services: Services): Promise<FastifyInstance> {
  const requestLogging = ['debug', 'trace'].includes(services.config.LOG_LEVEL);
  const app = Fastify({
    loggerInstance: services.log,
    childLoggerFactory: requestLogger,
    bodyLimit: BODY_LIMIT,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    // One line per request only at debug: at info, logs carry events, not traffic.
    logController: new LogController({ disableRequestLogging: !requestLogging }),
    trustProxy: services.config.trustProxy,
    // Slow clients (decisions.md): node:http times the headers and answers through
    // clientErrorHandler, which also answers headers over 16 KiB and malformed HTTP in the one shape.
    http: {
      headersTimeout: services.config.HEADERS_TIMEOUT_MS,
      connectionsCheckingInterval: checkingIntervalFor(services.config.HEADERS_TIMEOUT_MS),
      // The body has its own timer from the end of the headers (slow-clients.ts); node:http's
      // whole-request timer, on by default, would refuse a header timeout above it.
      requestTimeout: 0,
    },
    clientErrorHandler: clientErrorHandler(services.log),
    // Path parameters up to this length reach validation (an id that is not a UUID → 404); a
    // longer one is answered by frameworkErrors below.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // What the router itself refuses still answers in the one body shape, with X-Request-Id: a
    // URL it cannot decode names nothing here (404, as an unknown route), an overlong path part 414.
    frameworkErrors: (err, req, reply) => {
      const e = new ApiError(err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'uri_too_long' : 'route_not_found');
      // No hook runs on this path: its body, if one trickles in, is timed here.
      watchBody(req, reply as FastifyReply, services.config.BODY_TIMEOUT_MS);
      (reply as FastifyReply).header('X-Request-Id', req.id).code(e.statusCode).send(e.body());
      countRefusal(services, req, reply as FastifyReply);
    },
  }).withTypeProvider<ZodTypeProvider>();

  // Validation keeps zod's issue paths as arrays (api.md §7: `path` is which field).
  // A path id that is not a UUID names nothing in the account: 404, as an unknown id does
  // (api.md §7 "Resource not in the account"), not a 400 the caller cannot act on differently.
  // Query strings and path params are checked for unstorable text first (bodies were, when parsed).
  app.setValidatorCompiler<ZodType>(({ schema, httpPart }) => (data) => {
    if (httpPart === 'querystring' || httpPart === 'params') {
      const bad = findUnstorable(data);
      if (bad) return { error: new ValidationError([bad]) };
    }
    const r = schema.safeParse(data);
    if (r.success) return { value: r.data };
    if (httpPart === 'params') return { error: new ApiError('not_found') };
    return { error: new ValidationError(r.error.issues.flatMap(problemsOf)) };
  });
  // Responses are built by our own view functions: plain JSON.stringify, no second validation.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  // One root hook for what every request needs before anything else (each hook costs every request).
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('X-Request-Id', req.id);
    // The body is timed from the end of the headers, before the key is checked (decisions.md "Slow clients").
    watchBody(req, reply as FastifyReply, services.config.BODY_TIMEOUT_MS);
    // `Content-Type: application/json` with an empty body (many clients send it on body-less
    // POSTs, and curl on a DELETE without -d, with no Content-Length at all: HTTP's "no body") is
    // no body: routes with an optional body act, routes that need one answer the usual
    // validation 400 naming the missing fields.
    const h = req.raw.headers;
    const cl = h['content-length'];
    if ((cl === '0' || cl === undefined) && h['transfer-encoding'] === undefined) delete h['content-type'];
    done();
  });
  // The one metrics hook (onResponse), when METRICS is on, and GET /metrics.
  if (services.metrics.enabled) installMetrics(app, services);
  // JSON is the only body type (decisions.md: wrong Content-Type → 415); its text must be storable.
  app.removeContentTypeParser('text/plain');
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, text, done) =>
    parseJson(req, text as string, (err, body) => {
      if (err) return done(err);
      const bad = jsonTextSuspect(text as string) ? findUnstorable(body) : null;
      return bad ? done(new ValidationError([bad])) : done(null, body);
    }),
  );
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(async () => {
    throw new ApiError('route_not_found');
  });

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Chasqui — Messaging, Contacts and Cases API',
        version,
        description:
          'Send template and free-text WhatsApp messages, keep contacts, read templates, campaigns and pipeline cases. Errors are in Argentine Spanish.',
      },
      servers: [{ url: '/' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key etk_live_…' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });
  // /docs and /api/v1/openapi.json show the customer API; the operator API has its own document
  // behind the operator token (src/http/openapi.ts explains the split).
  await app.register(fastifySwaggerUi, {
    routePrefix: '/docs',
    // The page loads, and its top bar shows, the document customers download themselves.
    uiConfig: { urls: [{ url: '/api/v1/openapi.json', name: '/api/v1/openapi.json' }] },
    transformSpecification: (spec) => publicDocument(spec as Record<string, unknown>),
  });

  // Console session cookies (docs/console.md): parsed for the operator scope and /console/api.
  await app.register(fastifyCookie);
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => publicDocument(structuredClone(app.swagger())));
  healthRoutes(app, services);

  await app.register(
    async (api) => {
      installPublicGuards(api, services);
      installIdempotency(api, services);
      const z = api as unknown as ZodApp;
      for (const routes of [
        accountRoutes,
        templateRoutes,
        contactRoutes,
        conversationRoutes,
        messageRoutes,
        campaignRoutes,
        caseRoutes,
        automationRoutes,
        agentRoutes,
      ])
        routes(z, services);
    },
    { prefix: '/api/v1' },
  );

  await app.register(
    async (admin) => {
      adminAuth(admin, services);
      loadAccountOfAdminRoutes(admin, services);
      adminRoutes(admin as unknown as ZodApp, services);
      admin.get('/openapi.json', { schema: { hide: true } }, async () => operatorDocument(structuredClone(app.swagger())));
    },
    { prefix: '/admin/v1' },
  );

  await app.register(async (c) => consoleRoutes(c as unknown as ZodApp, services));
  await app.register(async (ch) => cloudReceiverRoutes(ch as unknown as ZodApp, services));
  await app.register(async (ig) => instagramReceiverRoutes(ig as unknown as ZodApp, services));
  await app.register(async (hooks) => automationHookRoutes(hooks as unknown as ZodApp, services));
  await app.register(async (wk) => mcpMetadataRoutes(wk as unknown as ZodApp, services));
  // MCP for connected AI apps (mcp.md): the guard pipeline with an app token as the credential (mcp/door.ts).
  await app.register(async (mcp) => mcpRoutes(mcp, services));
  await app.register(async (oauth) => oauthRoutes(oauth, services));
  await consoleApp(app); // the console's built app at /console (console/static.ts)

  return app;
}
