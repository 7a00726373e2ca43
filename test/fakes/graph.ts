// A local fake of Meta's Graph API (the WhatsApp Cloud API), speaking its documented JSON:
//   POST /{version}/{phone-number-id}/messages → {messaging_product, contacts: [{input, wa_id}], messages: [{id}]}
//   GET  /{version}/{waba-id}/message_templates → {data: [...], paging: {cursors: {before, after}, next?}}
//   POST /{version}/{waba-id}/message_templates {name, language, category, components} → {id, status: "PENDING", category}
//     (the template is then listed with that status; a name already listed in that language → error 100 / subcode 2388024)
//   errors → {error: {message, type, code, error_data: {messaging_product, details}, fbtrace_id}}
// A send's `biz_opaque_callback_data` (a string up to 512 characters) is kept and echoed in the
// status webhooks the fake writes for it (statusWebhook), as Meta does.
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

/**
 * What the next send answers: a Graph error, a malformed/empty body, silence past the client's
 * timeout, or held (accepted, its wamid handed out at once, answered when the test releases it).
 */
export type SendBehaviour =
  | { error: GraphErrorSpec }
  | { delayMs: number }
  | { status: number; raw: string }
  | { drop: true }
  | { hold: true };

/** A send Graph accepted: what its status webhooks name. */
export interface AcceptedSend {
  wamid: string;
  /** The Graph phone-number id it was sent from. */
  phoneNumberId: string;
  to: string;
  /** The send's `biz_opaque_callback_data`, echoed in its statuses. */
  opaque?: string;
}

/** Meta's limit on `biz_opaque_callback_data`. */
const OPAQUE_MAX = 512;

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
  /** Every accepted send, by wamid. */
  accepted: Map<string, AcceptedSend>;
  /** Sends held ({hold: true}) and not released yet, oldest first. */
  held(): AcceptedSend[];
  /** Ends the held sends: answered (`answer`, the default) or their connection dropped. */
  release(answer?: boolean): void;
  /**
   * The status webhook Meta posts for an accepted send (entry[].changes[].value.statuses[]), with
   * the send's `biz_opaque_callback_data` echoed; `errors` go with `failed`.
   */
  statusWebhook(
    wamid: string,
    status: 'sent' | 'delivered' | 'read' | 'failed',
    o: { wabaId: string; at?: Date; errors?: unknown[] },
  ): unknown;
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

/** A Cloud API number's credentials as the operator connects it (operator.md "Channel numbers"): fresh random ids and secrets. */
export interface CloudCredentials {
  phoneNumberId: string;
  wabaId: string;
  accessToken: string;
  appSecret: string;
  verifyToken: string;
}

const randomDigits = (n: number) => Array.from(randomBytes(n), (b) => String(b % 10)).join('');

/** New credentials; `over` keeps the ones a test names (a shared WABA, a known app secret); undefined ones are made. */
export function cloudCredentials(over: { [K in keyof CloudCredentials]?: string | undefined } = {}): CloudCredentials {
  return {
    phoneNumberId: over.phoneNumberId ?? randomDigits(15),
    wabaId: over.wabaId ?? randomDigits(15),
    accessToken: over.accessToken ?? `EAAG${randomBytes(24).toString('base64url')}`,
    appSecret: over.appSecret ?? randomBytes(16).toString('hex'),
    verifyToken: over.verifyToken ?? `vt-${randomBytes(8).toString('hex')}`,
  };
}

export async function startFakeGraph(): Promise<FakeGraph> {
  const calls: GraphCall[] = [];
  const queue: SendBehaviour[] = [];
  const tokens = new Map<string, string>();
  const templates = new Map<string, unknown[]>();
  const wamids: string[] = [];
  const accepted = new Map<string, AcceptedSend>();
  const held: { send: AcceptedSend; release: (answer: boolean) => void }[] = [];
  let base = '';

  /** Hands out a wamid for a valid send and remembers what its statuses echo. */
  function accept(phoneNumberId: string, b: { to: string; biz_opaque_callback_data?: unknown }): AcceptedSend {
    const wamid = `wamid.${Buffer.from(`${b.to}_${randomBytes(12).toString('hex')}`).toString('base64')}`;
    wamids.push(wamid);
    const send: AcceptedSend = { wamid, phoneNumberId, to: b.to };
    if (typeof b.biz_opaque_callback_data === 'string') send.opaque = b.biz_opaque_callback_data;
    accepted.set(wamid, send);
    return send;
  }

  /** Graph's refusal of a malformed send body, or null. */
  function invalidSend(b: { messaging_product?: string; to?: string; type?: string; biz_opaque_callback_data?: unknown } | null) {
    if (b?.messaging_product !== 'whatsapp' || !b.to || !b.type) {
      return { status: 400, code: 100, message: '(#100) The parameter messaging_product is required.' };
    }
    const opaque = b.biz_opaque_callback_data;
    if (opaque !== undefined && (typeof opaque !== 'string' || opaque.length > OPAQUE_MAX)) {
      return { status: 400, code: 100, message: '(#100) Param biz_opaque_callback_data must be a string of at most 512 characters.' };
    }
    return null;
  }

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
      const b = call.body as { messaging_product?: string; to?: string; type?: string } | null;
      let send: AcceptedSend | undefined;
      if (next && 'hold' in next) {
        // Accepted now (its statuses can be written), answered when released.
        const refused = invalidSend(b);
        if (refused) return graphError(res, refused);
        const held_ = accept(id, b as { to: string });
        send = held_;
        const answer = await new Promise<boolean>((release) => held.push({ send: held_, release }));
        if (!answer) {
          res.socket?.destroy();
          return;
        }
      } else if (next && 'delayMs' in next) await new Promise((r) => setTimeout(r, next.delayMs));
      else if (fake.latencyMs > 0) await new Promise((r) => setTimeout(r, fake.latencyMs));
      if (next && 'raw' in next) {
        res.writeHead(next.status, { 'content-type': 'application/json' });
        res.end(next.raw);
        return;
      }
      if (res.destroyed) return;
      const refused = invalidSend(b);
      if (refused) return graphError(res, refused);
      const { wamid } = send ?? accept(id, b as { to: string });
      return json(res, 200, { messaging_product: 'whatsapp', contacts: [{ input: b!.to, wa_id: b!.to }], messages: [{ id: wamid }] });
    }
    if (call.method === 'POST' && edge === 'message_templates') {
      const t = (call.body ?? {}) as { name?: string; language?: string; category?: string; components?: unknown[] };
      const list = templates.get(id) ?? [];
      if (!t.name || !t.language || !t.category || !Array.isArray(t.components))
        return graphError(res, { status: 400, code: 100, type: 'OAuthException', message: 'Invalid parameter' });
      if (
        list.some(
          (x) => (x as { name?: string; language?: string }).name === t.name && (x as { language?: string }).language === t.language,
        )
      )
        return graphError(res, {
          status: 400,
          code: 100,
          type: 'OAuthException',
          message: 'Invalid parameter',
          details: `Content in this language already exists for ${t.name}`,
        });
      const created = {
        id: String(10_000_000 + list.length + Math.floor(Math.random() * 1_000_000)),
        status: 'PENDING',
        category: t.category,
      };
      templates.set(id, [...list, { ...t, ...created }]);
      return json(res, 200, created);
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
    accepted,
    held: () => held.map((h) => h.send),
    release(answer = true) {
      for (const h of held.splice(0)) h.release(answer);
    },
    statusWebhook(wamid, status, o) {
      const send = accepted.get(wamid);
      if (!send) throw new Error(`the fake Graph accepted no send with wamid ${wamid}`);
      const st: Record<string, unknown> = {
        id: wamid,
        status,
        timestamp: String(Math.floor((o.at ?? new Date()).getTime() / 1000)),
        recipient_id: send.to,
        ...(send.opaque !== undefined ? { biz_opaque_callback_data: send.opaque } : {}),
        ...(o.errors ? { errors: o.errors } : {}),
      };
      return {
        object: 'whatsapp_business_account',
        entry: [
          {
            id: o.wabaId,
            changes: [
              {
                field: 'messages',
                value: {
                  messaging_product: 'whatsapp',
                  metadata: { phone_number_id: send.phoneNumberId },
                  statuses: [st],
                },
              },
            ],
          },
        ],
      };
    },
    queue: (...b) => queue.push(...b),
    reset() {
      calls.length = 0;
      queue.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        fake.release(false);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}
