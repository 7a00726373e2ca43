// POST /mcp: the MCP server for connected AI apps (mcp.md), over Streamable HTTP, stateless: each
// request gets its own McpServer bound to the app that calls, and its own transport.
// Tool calls are not API calls (api.md §8), but /mcp is a door of the one guard pipeline
// (door.ts): Host and Origin (403, DNS rebinding) → IP block (429) → app token (401 with the
// RFC 9728 challenge) → Accept (406) → the body: malformed (-32700), no JSON-RPC request (-32600),
// too large (413) → per-app minute cap for tools/call (429, a JSON-RPC error) → the SDK answers.
import { createRequire } from 'node:module';
import { McpServer, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../http/errors.js';
import { installGuards } from '../http/guards.js';
import type { Services } from '../services.js';
import { checkHostAndOrigin, installMcpErrors, mcpDoor } from './door.js';
import { registerTools, type ToolCaller } from './kit.js';
import { readTools } from './tools-read.js';
import { writeTools } from './tools-write.js';

const TOOLS = [...readTools, ...writeTools];
/** The package's version (src/ and dist/ both sit beside package.json), as the server's own. */
const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
const SERVER_INFO = { name: 'chasqui', version };

/** A new MCP server with every tool, bound to one caller (one per request: the server is stateless). */
export function buildMcpServer(caller: ToolCaller): McpServer {
  const server = new McpServer(SERVER_INFO, {
    instructions:
      'Herramientas de Chasqui para una cuenta de WhatsApp Business: contactos, plantillas, mensajes, conversaciones, campañas, casos y automatizaciones. Los resultados traen el mismo JSON que la API REST.',
  });
  registerTools(server, caller, TOOLS);
  return server;
}

async function handle(s: Services, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { app, account, caps } = req.mcp;
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

/** The /mcp routes: POST behind its door (door.ts); GET and DELETE answer 405 to anyone. */
export async function mcpRoutes(app: FastifyInstance, s: Services): Promise<void> {
  await app.register(async (door) => {
    door.decorateRequest('mcp', null as never);
    installMcpErrors(door);
    door.addHook('onRequest', async (req) => checkHostAndOrigin(s, req));
    installGuards(door, s, mcpDoor(s));
    door.post('/mcp', { schema: { hide: true } }, (req, reply) => handle(s, req, reply));
  });
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
