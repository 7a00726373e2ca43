// POST /mcp: the MCP server for connected AI apps (mcp.md), over Streamable HTTP, stateless: each
// request stands alone, answered by an idle server of the pool (exchange.ts) with the app that
// calls passed along with its messages.
// Tool calls are not API calls (api.md §8), but /mcp is a door of the one guard pipeline
// (door.ts): Host and Origin (403, DNS rebinding) → IP block (429) → app token (401 with the
// RFC 9728 challenge) → Accept (406) → the body: malformed (-32700), no JSON-RPC request (-32600),
// too large (413) → per-app minute cap for tools/call (429, a JSON-RPC error) → the transport's
// own checks (batch size, one initialize, MCP-Protocol-Version: 400) → the SDK answers.
import { createRequire } from 'node:module';
import { type AuthInfo, type JSONRPCMessage, McpServer } from '@modelcontextprotocol/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../http/errors.js';
import { installGuards } from '../http/guards.js';
import type { Services } from '../services.js';
import { checkHostAndOrigin, installMcpErrors, JsonRpcHttpError, mcpDoor } from './door.js';
import { type ServerPool, serverPool } from './exchange.js';
import { callerInfo, registerTools } from './kit.js';
import { readTools } from './tools-read.js';
import { writeTools } from './tools-write.js';

const TOOLS = [...readTools, ...writeTools];
/** The package's version (src/ and dist/ both sit beside package.json), as the server's own. */
const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
const SERVER_INFO = { name: 'chasqui', version };

/** A new MCP server with every tool (one per server of the pool: the caller comes with each request). */
export function buildMcpServer(): McpServer {
  const server = new McpServer(SERVER_INFO, {
    instructions:
      'Herramientas de Chasqui para una cuenta de WhatsApp Business: contactos, plantillas, mensajes, conversaciones, campañas, casos y automatizaciones. Los resultados traen el mismo JSON que la API REST.',
  });
  registerTools(server, TOOLS);
  return server;
}

/** The SDK stateless transport's limit of messages in one batch. */
const MAX_BATCH_SIZE = 100;
const isInitialize = (m: JSONRPCMessage) => 'method' in m && m.method === 'initialize';
const isRequest = (m: JSONRPCMessage) => 'method' in m && 'id' in m;

/**
 * What the SDK's stateless transport refuses once the body is read, with its status, code and
 * English text (clients act on the status: a 400 for a protocol version makes them fall back).
 */
function checkExchange(req: FastifyRequest, messages: JSONRPCMessage[], versions: readonly string[]): void {
  if (messages.length > MAX_BATCH_SIZE)
    throw new JsonRpcHttpError(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`);
  if (messages.some(isInitialize)) {
    if (messages.length > 1) throw new JsonRpcHttpError(400, -32600, 'Invalid Request: Only one initialization request is allowed');
    return;
  }
  const asked = req.headers['mcp-protocol-version'];
  if (typeof asked === 'string' && !versions.includes(asked)) {
    const supported = versions.join(', ');
    throw new JsonRpcHttpError(400, -32000, `Bad Request: Unsupported protocol version: ${asked} (supported versions: ${supported})`);
  }
}

async function handle(pool: ServerPool, s: Services, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { app, account, caps } = req.mcp;
  const messages = req.mcpMessages;
  checkExchange(req, messages, pool.supportedVersions);
  const authInfo: AuthInfo = callerInfo(app.id, { s, account, caps, by: { type: 'ai_app', id: app.id, name: app.name } });
  const answers = await pool.exchange(messages, authInfo);
  // Notifications and responses only: accepted, nothing to answer. Otherwise one JSON body (JSON
  // mode: never a stream), an array for a batch.
  if (!messages.some(isRequest)) return reply.code(202).send();
  const body = JSON.stringify(answers.length === 1 ? answers[0] : answers);
  return reply.code(200).header('content-type', 'application/json').send(body);
}

/** The /mcp routes: POST behind its door (door.ts); GET and DELETE answer 405 to anyone. */
export async function mcpRoutes(app: FastifyInstance, s: Services): Promise<void> {
  await app.register(async (door) => {
    door.decorateRequest('mcp', null as never);
    door.decorateRequest('mcpMessages', null as never);
    installMcpErrors(door);
    door.addHook('onRequest', async (req) => checkHostAndOrigin(s, req));
    installGuards(door, s, mcpDoor(s));
    const pool = await serverPool(buildMcpServer);
    door.post('/mcp', { schema: { hide: true } }, (req, reply) => handle(pool, s, req, reply));
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
