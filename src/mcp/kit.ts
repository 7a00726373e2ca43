// What every MCP tool shares (mcp.md "Tools"): its zod schema listed as JSON Schema, its
// arguments checked by the same zod schema with the Spanish texts of a REST 400, its result
// (`structuredContent` = the REST JSON, plus a short text), and refusals as `isError` results.
import type { AuthInfo, CallToolResult, McpServer, ServerContext, StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import type { FastifyBaseLogger } from 'fastify';
import type { z } from 'zod';
import type { AccountRow, By } from '../db/types.js';
import { isDatabaseUnavailable } from '../http/error-handler.js';
import { ApiError, ValidationError, type ValidationProblem } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import type { AccountLimitsCtx } from '../limits/types.js';
import type { Services } from '../services.js';

/** Who calls: the connected app and its account (src/mcp/apps.ts, resolved by the /mcp door: door.ts). */
export interface ToolCaller {
  s: Services;
  account: AccountRow;
  /** The app, as the `…By` fields show it (decisions.md). */
  by: By & { type: 'ai_app' };
  /** What the limiter needs for the account's message cap. */
  caps: AccountLimitsCtx;
}

type ToolResult = CallToolResult;

/**
 * The schema as the SDK lists it (its JSON Schema, converted once per process, not once per
 * server of the pool), with a validation that lets every value through: the tool parses with the zod
 * schema itself, so a refusal reads like a REST 400 (the SDK's own check answers in English).
 */
function listed(schema: z.ZodType): StandardSchemaWithJSON {
  const std = schema['~standard'] as unknown as StandardSchemaWithJSON['~standard'];
  const json = new Map<string, Record<string, unknown>>();
  const convert =
    (io: 'input' | 'output') =>
    (opts: { target: string }): Record<string, unknown> => {
      const key = `${io} ${opts.target}`;
      let v = json.get(key);
      if (!v) {
        v = std.jsonSchema[io](opts as Parameters<typeof std.jsonSchema.input>[0]);
        json.set(key, v);
      }
      return v;
    };
  return {
    '~standard': { ...std, validate: (value: unknown) => ({ value }), jsonSchema: { input: convert('input'), output: convert('output') } },
  };
}

/** One problem per zod issue, as the REST validator makes them (src/app.ts problemsOf). */
function problemsOf(issues: z.core.$ZodIssue[]): ValidationProblem[] {
  return issues.flatMap((i) => {
    const path = i.path.map((p) => (typeof p === 'number' ? p : String(p)));
    if (i.code === 'unrecognized_keys') return i.keys.map((k) => ({ path: [...path, k], message: textFor('unknown_field') }));
    return [{ path, message: i.message }];
  });
}

const problemsText = (problems: ValidationProblem[]): string =>
  textFor('mcp_invalid_arguments', {
    problems: problems.map((p) => (p.path.length ? `${p.path.join('.')}: ${p.message}` : p.message)).join(' '),
  });

/** A refusal as a tool result: the Spanish text, and the REST error body as structured content. */
function refusal(err: unknown, log: FastifyBaseLogger): ToolResult {
  if (err instanceof ApiError) {
    return { isError: true, content: [{ type: 'text', text: err.message }], structuredContent: err.body() };
  }
  if (err instanceof ValidationError) return { isError: true, content: [{ type: 'text', text: problemsText(err.problems) }] };
  if (isDatabaseUnavailable(err)) return { isError: true, content: [{ type: 'text', text: textFor('database_unavailable') }] };
  log.error({ err }, 'mcp tool failed');
  return { isError: true, content: [{ type: 'text', text: textFor('internal') }] };
}

/** A tool's answer: the REST JSON as structured content, a short Spanish line and the JSON as text. */
export const answer = (summary: string, data: object): ToolResult => ({
  content: [
    { type: 'text', text: summary },
    // Clients that do not read structuredContent still get the data (MCP: serialized JSON in a text block).
    { type: 'text', text: JSON.stringify(data) },
  ],
  structuredContent: data as Record<string, unknown>,
});

interface ToolSpec<S extends z.ZodType> {
  name: string;
  description: string;
  input: S;
  /** Reads only (MCP annotation readOnlyHint), or changes something. */
  readOnly: boolean;
  run: (c: ToolCaller, args: z.output<S>) => Promise<ToolResult>;
}

export interface ToolDef<S extends z.ZodType> extends ToolSpec<S> {
  listed: StandardSchemaWithJSON;
}

/** A tool definition (built once per process; registered on each server of the pool). */
export const tool = <S extends z.ZodType>(spec: ToolSpec<S>): ToolDef<S> => ({ ...spec, listed: listed(spec.input) });

/**
 * The request's caller as the SDK carries it to the tools (`authInfo`, pass-through: the SDK
 * reads none of it). A server of the pool serves every app, so a tool knows its caller only
 * from here, never from the server it runs on.
 */
export const callerInfo = (appId: string, caller: ToolCaller): AuthInfo => ({ token: '', clientId: appId, scopes: [], extra: { caller } });

function callerOf(ctx: ServerContext): ToolCaller {
  const caller = ctx.http?.authInfo?.extra?.caller as ToolCaller | undefined;
  // Only /mcp delivers messages to these servers, always with a caller: without one, refuse (500).
  if (!caller) throw new Error('MCP tool call without a caller');
  return caller;
}

/** Registers the tools on a server of the pool: each reads its caller from the request. */
export function registerTools(server: McpServer, defs: readonly ToolDef<z.ZodType>[]): void {
  for (const def of defs) {
    server.registerTool(
      def.name,
      {
        description: def.description,
        inputSchema: def.listed,
        annotations: { readOnlyHint: def.readOnly, destructiveHint: false, openWorldHint: false },
      },
      async (raw: unknown, ctx: ServerContext) => {
        const caller = callerOf(ctx);
        const parsed = def.input.safeParse(raw ?? {});
        if (!parsed.success) return { isError: true, content: [{ type: 'text', text: problemsText(problemsOf(parsed.error.issues)) }] };
        try {
          return await def.run(caller, parsed.data);
        } catch (err) {
          return refusal(err, caller.s.log);
        }
      },
    );
  }
}
