// A local fake of Instagram's Graph API (Instagram API with Instagram Login), speaking its documented JSON:
//   POST /{version}/{ig-user-id}/messages  {recipient: {id} | {comment_id}, message: {text}} → {recipient_id, message_id}
//   errors → {error: {message, type, code, error_subcode?, fbtrace_id}}
// The token comes as `Authorization: Bearer …` or the `access_token` query parameter (Meta takes both).
// Like Instagram, a comment takes one private reply: a second one to the same comment is refused.
//
//   const ig = await startFakeInstagram();
//   // the app: INSTAGRAM_API_URL=ig.url (ends in /v22.0)
//   ig.tokens.set('17841400000000001', 'IGAA-token');   // only this token works for that account (else 190)
//   ig.queue({ error: igErrors.window });                // the next send answers Meta's window error
//   ig.queue({ delayMs: 500 }, { status: 200, raw: '' }, { drop: true });
//   ig.sends()[0].body / .token / .path / .headers       // what arrived
//   signInstagramWebhook('app-secret', rawBody)          // X-Hub-Signature-256 for a webhook test
//   await ig.close();
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface InstagramCall {
  method: string;
  /** Path with the version segment, without the query string. */
  path: string;
  query: Record<string, string>;
  headers: IncomingMessage['headers'];
  /** The token sent, from the Authorization header or the access_token parameter (null: none). */
  token: string | null;
  /** Parsed JSON body (the raw text when not JSON, null when empty). */
  body: any;
}

export interface InstagramErrorSpec {
  /** HTTP status; default 400. */
  status?: number;
  code: number;
  subcode?: number;
  message?: string;
  /** Default `IGApiException` (Meta's type for Instagram refusals); tokens use `OAuthException`. */
  type?: string;
}

/** Meta's answers to situations a test may want, as Instagram sends them. */
export const igErrors = {
  window: { status: 403, code: 10, subcode: 2534022, message: 'This message is sent outside of allowed window.' },
  windowMessenger: { status: 400, code: 10, subcode: 2018278, message: 'This message is sent outside of allowed window.' },
  userNotFound: { status: 400, code: 100, subcode: 2534014, message: 'The requested user cannot be found.' },
  userUnavailable: { status: 400, code: 551, subcode: 1545041, message: "This person isn't available right now." },
  tokenExpired: {
    status: 400,
    code: 190,
    subcode: 463,
    type: 'OAuthException',
    message: 'Error validating access token: Session has expired.',
  },
  tokenInvalid: { status: 400, code: 190, type: 'OAuthException', message: 'Invalid OAuth access token - Cannot parse access token' },
  permission: { status: 403, code: 10, message: 'Application does not have permission for this action' },
  appRateLimit: { status: 400, code: 4, message: 'Application request limit reached' },
  userRateLimit: { status: 400, code: 17, message: 'User request limit reached' },
  pageRateLimit: { status: 400, code: 32, message: 'Page request limit reached' },
  apiRateLimit: { status: 400, code: 613, message: 'Calls to this api have exceeded the rate limit.' },
  unknown: { status: 500, code: 1, type: 'OAuthException', message: 'An unknown error has occurred.' },
  serviceDown: {
    status: 503,
    code: 2,
    type: 'OAuthException',
    message: 'An unexpected error has occurred. Please retry your request later.',
  },
  alreadyReplied: { status: 400, code: 10900, message: 'Activity already replied to' },
} satisfies Record<string, InstagramErrorSpec>;

/** What the next send answers: a Meta error, a raw body, silence for a while, or a cut connection. */
export type InstagramSendBehaviour = { error: InstagramErrorSpec } | { delayMs: number } | { status: number; raw: string } | { drop: true };

export interface FakeInstagram {
  /** Base URL with the version, for INSTAGRAM_API_URL: http://127.0.0.1:PORT/v22.0. */
  url: string;
  calls: InstagramCall[];
  /** Calls to POST …/messages only. */
  sends(): InstagramCall[];
  /** Instagram user id → the only token Instagram accepts for it (others get a 190). Unset: any token. */
  tokens: Map<string, string>;
  /** Answers of the next sends, in order (then the default: accepted). */
  queue(...b: InstagramSendBehaviour[]): void;
  /** Message ids handed out, in order. */
  mids: string[];
  /** Comment ids that already got their one private reply. */
  repliedComments: Set<string>;
  reset(): void;
  close(): Promise<void>;
}

/** The X-Hub-Signature-256 header Meta sends with a webhook: `sha256=<hex HMAC-SHA256 of the raw body>`. */
export function signInstagramWebhook(appSecret: string, rawBody: string | Buffer): string {
  return `sha256=${createHmac('sha256', appSecret).update(rawBody).digest('hex')}`;
}

const TEXT_MAX_BYTES = 1000;

function igError(res: ServerResponse, e: InstagramErrorSpec): void {
  json(res, e.status ?? 400, {
    error: {
      message: e.message ?? '(#100) Invalid parameter',
      type: e.type ?? 'IGApiException',
      code: e.code,
      ...(e.subcode !== undefined ? { error_subcode: e.subcode } : {}),
      fbtrace_id: `A${randomBytes(9).toString('base64url')}`,
    },
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export async function startFakeInstagram(): Promise<FakeInstagram> {
  const calls: InstagramCall[] = [];
  const queue: InstagramSendBehaviour[] = [];
  const tokens = new Map<string, string>();
  const mids: string[] = [];
  const repliedComments = new Set<string>();
  let base = '';

  const server: Server = createServer((req, res) => {
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
      const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
      const call: InstagramCall = {
        method: req.method ?? 'GET',
        path: u.pathname,
        query: Object.fromEntries(u.searchParams),
        headers: req.headers,
        token: bearer ?? u.searchParams.get('access_token'),
        body,
      };
      calls.push(call);
      void handle(call, res);
    });
  });

  async function handle(call: InstagramCall, res: ServerResponse): Promise<void> {
    // /{version}/{ig-user-id}/messages (the version is optional, as on graph.instagram.com)
    const parts = call.path.split('/').filter(Boolean);
    if (parts.length === 3 && /^v\d+\.\d+$/.test(parts[0]!)) parts.shift();
    if (call.method !== 'POST' || parts.length !== 2 || parts[1] !== 'messages') {
      return igError(res, { code: 100, type: 'IGApiException', message: `Unsupported ${call.method} request.` });
    }
    const igUserId = parts[0]!;
    const expected = tokens.get(igUserId);
    if (!call.token || (expected !== undefined && call.token !== expected)) {
      return igError(res, igErrors.tokenInvalid);
    }
    const next = queue.shift();
    if (next && 'error' in next) return igError(res, next.error);
    if (next && 'drop' in next) {
      res.socket?.destroy();
      return;
    }
    if (next && 'delayMs' in next) await new Promise((r) => setTimeout(r, next.delayMs));
    if (next && 'raw' in next) {
      res.writeHead(next.status, { 'content-type': 'application/json' });
      res.end(next.raw);
      return;
    }
    if (res.destroyed) return;
    const b = call.body as { recipient?: { id?: unknown; comment_id?: unknown }; message?: { text?: unknown } } | null;
    const userId = typeof b?.recipient?.id === 'string' ? b.recipient.id : null;
    const commentId = typeof b?.recipient?.comment_id === 'string' ? b.recipient.comment_id : null;
    if ((userId === null) === (commentId === null)) {
      return igError(res, { code: 100, message: '(#100) The parameter recipient is required.' });
    }
    const text = b?.message?.text;
    if (typeof text !== 'string' || text === '') return igError(res, { code: 100, message: '(#100) The parameter message is required.' });
    if (Buffer.byteLength(text, 'utf8') > TEXT_MAX_BYTES) {
      return igError(res, { code: 100, message: `(#100) Length of param message[text] must be less than or equal to ${TEXT_MAX_BYTES}` });
    }
    if (commentId !== null) {
      if (repliedComments.has(commentId)) return igError(res, igErrors.alreadyReplied);
      repliedComments.add(commentId);
    }
    const mid = `aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOj${randomBytes(12).toString('base64url')}`;
    mids.push(mid);
    // A private reply's recipient is the commenter; the fake knows no commenters, so it names the comment's author as "IGSID-of-<comment>".
    return json(res, 200, { recipient_id: userId ?? `IGSID-of-${commentId}`, message_id: mid });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}`;

  return {
    url: `${base}/v22.0`,
    calls,
    sends: () => calls.filter((c) => c.method === 'POST' && c.path.endsWith('/messages')),
    tokens,
    mids,
    repliedComments,
    queue: (...b) => queue.push(...b),
    reset() {
      calls.length = 0;
      queue.length = 0;
      mids.length = 0;
      repliedComments.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
