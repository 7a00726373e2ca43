// POST /mcp: the MCP server for connected AI apps (mcp.md), over Streamable HTTP, stateless: each
// request gets its own McpServer bound to the app that calls, and its own transport.
// Outside the /api/v1 guards (tool calls are not API calls, api.md §8). Order of checks:
// Host and Origin (403, DNS rebinding) → app token (401 with the RFC 9728 challenge) → per-app
// minute cap for tools/call (429, a JSON-RPC error) → the SDK answers.
import { createRequire } from 'node:module';
import {
  McpServer,
  validateHostHeader,
  validateOriginHeader,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import type { Services } from '../services.js';
import { appForToken, mcpChallenge } from './apps.js';
import { registerTools, type ToolCaller } from './kit.js';
import { readTools } from './tools-read.js';
import { writeTools } from './tools-write.js';

const TOOLS = [...readTools, ...writeTools];
/** The package's version (src/ and dist/ both sit beside package.json), as the server's own. */
const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
const SERVER_INFO = { name: 'chasqui', version };
const LOOPBACK = ['localhost', '127.0.0.1', '[::1]'];

/** A new MCP server with every tool, bound to one caller (one per request: the server is stateless). */
export function buildMcpServer(caller: ToolCaller): McpServer {
  const server = new McpServer(SERVER_INFO, {
    instructions:
      'Herramientas de Chasqui para una cuenta de WhatsApp Business: contactos, plantillas, mensajes, conversaciones, campañas, casos y automatizaciones. Los resultados traen el mismo JSON que la API REST.',
  });
  registerTools(server, caller, TOOLS);
  return server;
}

/** Host names this server answers to: the public URL's and loopback (mcp.md; DNS rebinding). */
function allowedHostnames(s: Services): string[] {
  return [new URL(s.publicUrl).hostname, ...LOOPBACK];
}

/** The JSON-RPC `tools/call` requests of a body (one message, or a batch). */
function toolCalls(body: unknown): { id: unknown }[] {
  const messages = Array.isArray(body) ? body : [body];
  return messages.filter((m): m is { id: unknown } => !!m && typeof m === 'object' && (m as { method?: unknown }).method === 'tools/call');
}

/** 429 of the per-app minute cap (api.md §8): a JSON-RPC error with the request's id. */
function overCap(reply: FastifyReply, id: unknown, limit: number | null): FastifyReply {
  return reply
    .code(429)
    .header('Retry-After', '60')
    .type('application/json; charset=utf-8')
    .send({ jsonrpc: '2.0', id: id ?? null, error: { code: -32000, message: textFor('mcp_rate_limited', { limit: limit ?? '' }) } });
}

async function handle(s: Services, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
  const hostnames = allowedHostnames(s);
  if (!validateHostHeader(req.headers.host, hostnames).ok) throw new ApiError('mcp_host_refused');
  if (!validateOriginHeader(req.headers.origin, hostnames).ok) throw new ApiError('mcp_origin_refused');

  const principal = await appForToken(s, req.headers.authorization);
  if (!principal) {
    // An API key where an app token belongs: say which credential /mcp takes.
    const key = req.headers.authorization?.includes('etk_live_') ?? false;
    throw new ApiError(key ? 'mcp_api_key' : 'mcp_unauthorized', { headers: { 'WWW-Authenticate': mcpChallenge(s) } });
  }
  const { app, account, caps } = principal;
  // The transport's own 406 speaks English: the same rule, answered in Spanish first.
  const accept = req.headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    return reply
      .code(406)
      .type('application/json; charset=utf-8')
      .send({ jsonrpc: '2.0', id: null, error: { code: -32000, message: textFor('mcp_not_acceptable') } });
  }

  // Only tools/call counts (mcp.md "Per-app minute cap"); initialize and tools/list do not. A
  // batch's calls are counted together or not at all: the one that would pass the cap names the 429.
  const calls = toolCalls(req.body);
  if (calls.length > 0) {
    const admitted = await s.limiter.admitMcpCalls(caps, app.id, calls.length);
    if (!admitted.ok) {
      s.metrics.limitRefusal('mcp_per_app');
      return overCap(reply, calls[admitted.room]?.id, caps.limits.mcpCallsPerMinute);
    }
  }

  const server = buildMcpServer({ s, account, caps, by: { type: 'ai_app', id: app.id, name: app.name } });
  // The SDK's web-standard transport, handed the body Fastify already parsed and checked: its
  // answer (JSON, stateless) goes out through Fastify like any other, in one write, with the
  // request's hooks and headers.
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    const answer = await transport.handleRequest(webRequest(req), { parsedBody: req.body });
    reply.code(answer.status);
    answer.headers.forEach((value, name) => {
      reply.header(name, value);
    });
    return reply.send(answer.body === null ? undefined : await answer.text());
  } finally {
    void server.close();
  }
}

/** The headers the transport reads (content negotiation, protocol version, session, resumption). */
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'] as const;

/** The request as the web-standard transport reads it: method, URL and its headers (the body is passed parsed). */
function webRequest(req: FastifyRequest): Request {
  const headers = new Headers();
  for (const name of TRANSPORT_HEADERS) {
    const value = req.headers[name];
    if (typeof value === 'string') headers.set(name, value);
  }
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.url}`, { method: req.method, headers });
}

/** The /mcp route (registered at the root, outside the /api/v1 guard pipeline). */
export function mcpRoutes(app: FastifyInstance, s: Services): void {
  app.post('/mcp', { schema: { hide: true } }, (req, reply) => handle(s, req, reply));
  // Stateless: no server-sent stream to open (GET) and no session to end (DELETE).
  app.route({
    method: ['GET', 'DELETE'],
    url: '/mcp',
    schema: { hide: true },
    handler: async (_req, reply) => {
      reply.header('Allow', 'POST');
      throw new ApiError('method_not_allowed');
    },
  });
}
