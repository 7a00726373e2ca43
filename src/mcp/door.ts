// The /mcp door (docs/mcp.md): the Host and Origin checks against DNS rebinding (403), then the
// guard pipeline of every door (http/guards.ts) with an AI app's token as the credential — IP
// block (429; failed tokens count toward it like invalid keys) → token (401 with the RFC 9728
// challenge) → Accept (406) — and, once the body is parsed, the JSON-RPC envelope (-32600) and the
// app's minute cap for tools/call (429). What the /mcp route refuses is answered the way MCP
// clients read it: a JSON-RPC error with `id: null` (the request's id for the cap) and the HTTP
// status of the MCP Streamable HTTP transport, never the REST error shape or a 500 — except the
// 401 and 403, whose REST shape and WWW-Authenticate challenge are what clients act on.
import { type JSONRPCMessage, parseJSONRPCMessage, validateHostHeader, validateOriginHeader } from '@modelcontextprotocol/server';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorHandler } from '../http/error-handler.js';
import { ApiError, ValidationError } from '../http/errors.js';
import type { Door } from '../http/guards.js';
import { textFor } from '../http/messages.es-AR.js';
import { bearer } from '../keys/token-cache.js';
import type { Services } from '../services.js';
import { type AppPrincipal, appUseRecorder, mcpChallenge } from './apps.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the /mcp door's guards: the connected app that calls, and its account. */
    mcp: AppPrincipal;
    /** Set by the /mcp door once the body is checked: its JSON-RPC messages as the SDK parsed them. */
    mcpMessages: JSONRPCMessage[];
  }
}

/** JSON-RPC 2.0 error codes (the spec's, and the SDK's -32000 for the transport's own refusals). */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const SERVER_ERROR = -32000;

/** A refusal of /mcp: an HTTP status and a JSON-RPC error body. */
export class JsonRpcHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly id: unknown = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const LOOPBACK = ['localhost', '127.0.0.1', '[::1]'];

/** Host names this server answers to: the public URL's and loopback (mcp.md; DNS rebinding). */
const allowedHostnames = (publicUrl: string): string[] => [new URL(publicUrl).hostname, ...LOOPBACK];
/** The last public URL's host names: parsed again only when it changes (a test app learns its port after listening). */
let hostnamesOf: { publicUrl: string; hostnames: string[] } = { publicUrl: '', hostnames: [] };

/** The JSON-RPC `tools/call` messages of a body (one message, or a batch). */
const toolCalls = (messages: JSONRPCMessage[]): { id?: unknown }[] =>
  messages.filter((m) => 'method' in m && m.method === 'tools/call') as { id?: unknown }[];

/** The message as the SDK parses it (what its transport would hand the server), or null if it is none. */
function jsonRpcMessage(m: unknown): JSONRPCMessage | null {
  try {
    return parseJSONRPCMessage(m);
  } catch {
    return null;
  }
}

/** A JSON-RPC request, notification or response, or a non-empty batch of them (JSON-RPC 2.0 §4–6): the messages, or null. */
function jsonRpcMessages(body: unknown): JSONRPCMessage[] | null {
  const raw = Array.isArray(body) ? body : [body];
  if (raw.length === 0) return null;
  const messages: JSONRPCMessage[] = [];
  for (const m of raw) {
    const parsed = jsonRpcMessage(m);
    if (!parsed) return null;
    messages.push(parsed);
  }
  return messages;
}

export const mcpDoor = (s: Services): Door<AppPrincipal> => {
  const recordUse = appUseRecorder(s);
  return {
    credential: 'app_token',
    cached: (req) => s.apps.cached(req.headers.authorization),
    lookup: (req) => s.apps.authenticate(bearer(req.headers.authorization)),
    unknown(req) {
      // An API key where an app token belongs: say which credential /mcp takes.
      const key = req.headers.authorization?.includes('etk_live_') ?? false;
      return new ApiError(key ? 'mcp_api_key' : 'mcp_unauthorized', { headers: { 'WWW-Authenticate': mcpChallenge(s) } });
    },
    blocked: () => new JsonRpcHttpError(429, SERVER_ERROR, textFor('ip_blocked'), null, { 'Retry-After': '60' }),
    // MCP is on every plan and tool calls are not API calls: no plan, request cap or quota here.
    admit(req, _reply, principal) {
      req.mcp = principal;
      recordUse(principal.app.id);
      // The transport's own 406 speaks English: the same rule, answered in Spanish first.
      const accept = req.headers.accept ?? '';
      if (!accept.includes('application/json') || !accept.includes('text/event-stream'))
        throw new JsonRpcHttpError(406, SERVER_ERROR, textFor('mcp_not_acceptable'));
      return undefined;
    },
    async admitBody(req) {
      // No body, or JSON that is no JSON-RPC request: nothing to count or to hand to the SDK.
      if (req.body === undefined) throw new JsonRpcHttpError(400, PARSE_ERROR, textFor('invalid_json'));
      const messages = jsonRpcMessages(req.body);
      if (!messages) throw new JsonRpcHttpError(400, INVALID_REQUEST, textFor('mcp_invalid_request'));
      req.mcpMessages = messages;
      // Only tools/call counts (mcp.md "Per-app minute cap"); initialize and tools/list do not. A
      // batch's calls are counted together or not at all: the one that would pass the cap names the 429.
      const calls = toolCalls(messages);
      if (calls.length === 0) return;
      const { app, caps } = req.mcp;
      const admitted = await s.limiter.admitMcpCalls(caps, app.id, calls.length);
      if (!admitted.ok) {
        s.metrics.limitRefusal('mcp_per_app');
        const message = textFor('mcp_rate_limited', { limit: caps.limits.mcpCallsPerMinute ?? '' });
        throw new JsonRpcHttpError(429, SERVER_ERROR, message, calls[admitted.room]?.id ?? null, { 'Retry-After': '60' });
      }
    },
  };
};

/** Host and Origin (403), before the credential: a page of another site never reaches the token check. */
export function checkHostAndOrigin(s: Services, req: FastifyRequest): void {
  if (hostnamesOf.publicUrl !== s.publicUrl) hostnamesOf = { publicUrl: s.publicUrl, hostnames: allowedHostnames(s.publicUrl) };
  const { hostnames } = hostnamesOf;
  if (!validateHostHeader(req.headers.host, hostnames).ok) throw new ApiError('mcp_host_refused');
  if (!validateOriginHeader(req.headers.origin, hostnames).ok) throw new ApiError('mcp_origin_refused');
}

/** Body errors Fastify raises before the route, as the MCP transport answers them (the SDK's statuses). */
function bodyError(err: FastifyError | Error): JsonRpcHttpError | null {
  // JSON whose text cannot be stored (a NUL, a lone surrogate): the request is refused as a whole.
  if (err instanceof ValidationError) {
    const message = err.problems.map((p) => (p.path.length > 0 ? `${p.path.join('.')}: ${p.message}` : p.message)).join(' ');
    return new JsonRpcHttpError(400, INVALID_REQUEST, message);
  }
  switch ((err as FastifyError).code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new JsonRpcHttpError(413, SERVER_ERROR, textFor('body_too_large'));
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new JsonRpcHttpError(415, SERVER_ERROR, textFor('unsupported_media_type'));
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new JsonRpcHttpError(400, PARSE_ERROR, textFor('invalid_json'));
  }
  if (err instanceof SyntaxError && (err as FastifyError).statusCode === 400)
    return new JsonRpcHttpError(400, PARSE_ERROR, textFor('invalid_json'));
  return null;
}

/** The /mcp scope's error handler: JSON-RPC errors for what MCP clients read as such, else the usual one. */
export function installMcpErrors(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply) => {
    const e = err instanceof JsonRpcHttpError ? err : bodyError(err);
    if (!e) return errorHandler(err, req, reply);
    for (const [k, v] of Object.entries(e.headers)) reply.header(k, v);
    return reply
      .code(e.status)
      .type('application/json; charset=utf-8')
      .send({ jsonrpc: '2.0', id: e.id ?? null, error: { code: e.code, message: e.message } });
  });
}
