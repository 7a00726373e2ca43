// A local fake of Meta's Graph API (the WhatsApp Cloud API), speaking its documented JSON:
//   POST /{version}/{phone-number-id}/messages → {messaging_product, contacts: [{input, wa_id}], messages: [{id}]}
//   GET  /{version}/{waba-id}/message_templates → {data: [...], paging: {cursors: {before, after}, next?}}
//   errors → {error: {message, type, code, error_data: {messaging_product, details}, fbtrace_id}}
// Tests start it, point GRAPH_API_URL at it, program answers and read what it received.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GraphCall {
  method: string;
  /** Path with the version segment, without the query string. */
  path: string;
  query: Record<string, string>;
  headers: IncomingMessage['headers'];
  /** Parsed JSON body (null when none). */
  body: any;
  /** When the request arrived (ms since the epoch, sub-millisecond: performance.timeOrigin + now()). */
  at: number;
}

export interface GraphErrorSpec {
  status: number;
  code: number;
  message?: string;
  type?: string;
  details?: string;
  subcode?: number;
}

/** What the next send answers: a Graph error, a malformed/empty body, or silence past the client's timeout. */
export type SendBehaviour = { error: GraphErrorSpec } | { delayMs: number } | { status: number; raw: string } | { drop: true };

export interface FakeGraph {
  /** Root URL (no version): the app adds its Graph version to it. */
  url: string;
  calls: GraphCall[];
  /** Calls to POST …/messages only. */
  sends(): GraphCall[];
  /** Phone-number id → the only access token Graph accepts for it (others get a 190). */
  tokens: Map<string, string>;
  /** WABA id → the templates Graph lists for it. */
  templates: Map<string, unknown[]>;
  /** Answers of the next sends, in order (then the default: accepted). */
  queue(...b: SendBehaviour[]): void;
  /** Wamids handed out, in order. */
  wamids: string[];
  /** Most templates per page, whatever `limit` asks (to exercise paging). */
  pageSize: number;
  /** Every accepted send answers after this long (ms): Graph's own latency. */
  latencyMs: number;
  reset(): void;
  close(): Promise<void>;
}

const TEMPLATE_PAGE_DEFAULT = 25;

function graphError(res: ServerResponse, e: GraphErrorSpec): void {
  const body = {
    error: {
      message: e.message ?? '(#100) Invalid parameter',
      type: e.type ?? 'OAuthException',
      code: e.code,
      ...(e.subcode !== undefined ? { error_subcode: e.subcode } : {}),
      error_data: { messaging_product: 'whatsapp', details: e.details ?? e.message ?? 'Invalid parameter' },
      fbtrace_id: `A${randomBytes(9).toString('base64url')}`,
    },
  };
  json(res, e.status, body);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export async function startFakeGraph(): Promise<FakeGraph> {
  const calls: GraphCall[] = [];
  const queue: SendBehaviour[] = [];
  const tokens = new Map<string, string>();
  const templates = new Map<string, unknown[]>();
  const wamids: string[] = [];
  let base = '';

  const server: Server = createServer((req, res) => {
    const at = performance.timeOrigin + performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', base);
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = null;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {
        body = raw;
      }
      const call: GraphCall = {
        method: req.method ?? 'GET',
        path: u.pathname,
        query: Object.fromEntries(u.searchParams),
        headers: req.headers,
        body,
        at,
      };
      calls.push(call);
      void handle(call, res);
    });
  });

  async function handle(call: GraphCall, res: ServerResponse): Promise<void> {
    const parts = call.path.split('/').filter(Boolean);
    const bearer = /^Bearer (.+)$/.exec(String(call.headers.authorization ?? ''))?.[1];
    // /{version}/{id}/{edge}
    if (parts.length !== 3 || !/^v\d+\.\d+$/.test(parts[0]!)) {
      return graphError(res, { status: 400, code: 100, type: 'GraphMethodException', message: 'Unsupported request' });
    }
    const [, id, edge] = parts as [string, string, string];
    const expected = tokens.get(id);
    if (!bearer || (expected !== undefined && bearer !== expected)) {
      return graphError(res, {
        status: 401,
        code: 190,
        type: 'OAuthException',
        message: 'Error validating access token: Session has expired',
        details: 'Error validating access token',
      });
    }
    if (call.method === 'POST' && edge === 'messages') {
      const next = queue.shift();
      if (next && 'error' in next) return graphError(res, next.error);
      if (next && 'drop' in next) {
        res.socket?.destroy();
        return;
      }
      if (next && 'delayMs' in next) await new Promise((r) => setTimeout(r, next.delayMs));
      else if (fake.latencyMs > 0) await new Promise((r) => setTimeout(r, fake.latencyMs));
      if (next && 'raw' in next) {
        res.writeHead(next.status, { 'content-type': 'application/json' });
        res.end(next.raw);
        return;
      }
      if (res.destroyed) return;
      const b = call.body as { messaging_product?: string; to?: string; type?: string } | null;
      if (b?.messaging_product !== 'whatsapp' || !b.to || !b.type) {
        return graphError(res, { status: 400, code: 100, message: '(#100) The parameter messaging_product is required.' });
      }
      const wamid = `wamid.${Buffer.from(`${b.to}_${randomBytes(12).toString('hex')}`).toString('base64')}`;
      wamids.push(wamid);
      return json(res, 200, { messaging_product: 'whatsapp', contacts: [{ input: b.to, wa_id: b.to }], messages: [{ id: wamid }] });
    }
    if (call.method === 'GET' && edge === 'message_templates') {
      const all = templates.get(id) ?? [];
      const limit = Math.min(Number(call.query.limit ?? TEMPLATE_PAGE_DEFAULT) || TEMPLATE_PAGE_DEFAULT, fake.pageSize);
      const start = call.query.after ? Number(Buffer.from(call.query.after, 'base64url').toString()) : 0;
      const data = all.slice(start, start + limit);
      const end = start + data.length;
      const cursor = (n: number) => Buffer.from(String(n)).toString('base64url');
      const paging: Record<string, unknown> = { cursors: { before: cursor(start), after: cursor(end) } };
      if (end < all.length) {
        const next = new URL(call.path, base);
        for (const [k, v] of Object.entries(call.query)) next.searchParams.set(k, v);
        next.searchParams.set('after', cursor(end));
        paging.next = next.toString();
      }
      return json(res, 200, { data, paging });
    }
    return graphError(res, { status: 400, code: 100, type: 'GraphMethodException', message: `Unsupported ${call.method} request` });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}`;

  const fake: FakeGraph = {
    url: base,
    pageSize: 1000,
    latencyMs: 0,
    calls,
    sends: () => calls.filter((c) => c.method === 'POST' && c.path.endsWith('/messages')),
    tokens,
    templates,
    wamids,
    queue: (...b) => queue.push(...b),
    reset() {
      calls.length = 0;
      queue.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}
