// Slow, broken and vanishing clients (decisions.md "Slow clients"), spoken over raw sockets since
// no HTTP client sends half a request: deadlines come from HEADERS_TIMEOUT_MS and BODY_TIMEOUT_MS,
// set small here; every answer the server writes has the error body and an X-Request-Id.
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textFor } from '../../src/http/messages.es-AR.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';
import { until } from '../poll.js';

const HEADERS_MS = 400;
const BODY_MS = 600;
/** Time allowed past a deadline: node:http checks header deadlines every HEADERS_MS / 10, plus a busy machine. */
const SLACK_MS = 700;

const logLines: { level: number; msg: string; reqId?: string }[] = [];
const logStream = new Writable({
  write(chunk, _encoding, done) {
    logLines.push(JSON.parse(String(chunk)));
    done();
  },
});

let app: TestApp;
let acc: TestAccount;
let host: string;
let port: number;
beforeAll(async () => {
  const env = { LOG_LEVEL: 'debug', HEADERS_TIMEOUT_MS: String(HEADERS_MS), BODY_TIMEOUT_MS: String(BODY_MS) };
  app = await startTestApp({ env, logDestination: logStream });
  acc = await app.createAccount();
  const u = new URL(app.url);
  host = u.hostname;
  port = Number(u.port);
});
afterAll(async () => {
  await app?.close();
});

interface RawAnswer {
  status: number | null;
  headers: Record<string, string>;
  body: any;
  /** Milliseconds from the last byte we wrote to the server closing the connection. */
  closedAfterMs: number;
}

function open(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, host, () => resolve(s));
    s.once('error', reject);
  });
}

/** Writes `text`, then reads until the server closes the connection. */
async function exchange(text: string): Promise<RawAnswer> {
  const s = await open();
  const chunks: Buffer[] = [];
  s.on('data', (c: Buffer) => chunks.push(c));
  s.on('error', () => {});
  const written = await new Promise<number>((resolve) => s.write(text, () => resolve(performance.now())));
  await new Promise((resolve) => s.once('close', resolve));
  const closedAfterMs = performance.now() - written;
  const raw = Buffer.concat(chunks).toString('utf8');
  if (raw === '') return { status: null, headers: {}, body: null, closedAfterMs };
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body), closedAfterMs };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function expectErrorShape(a: RawAnswer, status: number, code: Parameters<typeof textFor>[0]): void {
  expect(a.status).toBe(status);
  expect(a.headers['x-request-id']).toMatch(UUID);
  expect(a.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(a.body).toEqual({ error: textFor(code), cause: null });
}

const contactPost = (authorization: string | null, length: number) =>
  'POST /api/v1/contacts HTTP/1.1\r\n' +
  `Host: ${host}\r\n` +
  (authorization ? `Authorization: ${authorization}\r\n` : '') +
  'Content-Type: application/json\r\n' +
  `Content-Length: ${length}\r\n\r\n`;

describe('"a body not complete 30 s after its headers is answered 408 and closed — with or without a key" (decisions.md "Slow clients")', () => {
  it('a valid key and half a body: 408 in the error shape, closed at BODY_TIMEOUT_MS', async () => {
    const a = await exchange(`${contactPost(`Bearer ${acc.key}`, 200)}{"phone": "+54911`);
    expectErrorShape(a, 408, 'request_timeout');
    expect(a.closedAfterMs).toBeGreaterThanOrEqual(BODY_MS - 50);
    expect(a.closedAfterMs).toBeLessThan(BODY_MS + SLACK_MS);
  });

  it('no key: answered 401 at once, and the connection is still closed at BODY_TIMEOUT_MS', async () => {
    const a = await exchange(`${contactPost(null, 200)}{"phone": "+54911`);
    expect(a.status).toBe(401);
    expect(a.closedAfterMs).toBeLessThan(BODY_MS + SLACK_MS);
  });

  it('a URL the router refuses, then half a body: 404 at once, and the connection is closed at BODY_TIMEOUT_MS', async () => {
    const head = `POST /api/v1/contacts/%E0%A4%A HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n`;
    const a = await exchange(`${head}{"phone": "+54911`);
    expectErrorShape(a, 404, 'route_not_found');
    expect(a.closedAfterMs).toBeGreaterThanOrEqual(BODY_MS - 50);
    expect(a.closedAfterMs).toBeLessThan(BODY_MS + SLACK_MS);
  });
});

describe('a busy process refuses no body that reached it in time (decisions.md "Slow clients")', () => {
  it('a body waiting in the socket while the process was busy past BODY_TIMEOUT_MS is read, not answered 408', async () => {
    const body = JSON.stringify({ phone: freshPhone(), name: 'Demorada' });
    const s = await open();
    let answer = '';
    s.on('data', (c: Buffer) => {
      answer += c;
    });
    s.on('error', () => {});
    const closed = new Promise((resolve) => s.once('close', resolve));
    const head = contactPost(`Bearer ${acc.key}`, Buffer.byteLength(body));
    s.write(head.replace(/\r\n\r\n$/, '\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n'));
    // The server has the headers (it says 100 Continue): the body's clock runs.
    await until(() => answer.includes('100 Continue'));
    // The body is sent, then the process (the server runs in it) is busy past the body's deadline
    // with the body in its socket: a stalled event loop, as on a loaded machine. After this turn's
    // I/O, so the next turn starts with the due timers.
    setImmediate(() => {
      s.write(body);
      const busyUntil = performance.now() + BODY_MS + 200;
      while (performance.now() < busyUntil) {
        // busy
      }
    });
    await closed;
    expect(answer).toMatch(/HTTP\/1\.1 201 Created/);
    expect(answer).toContain('"name":"Demorada"');
  });
});

describe('"HEADERS_TIMEOUT_MS … 50 to 600,000" (docs/operator.md "Configuration")', () => {
  it('the largest header and body timeouts start a server that answers', async () => {
    const big = await startTestApp({ env: { HEADERS_TIMEOUT_MS: '600000', BODY_TIMEOUT_MS: '600000' } });
    try {
      expect((await fetch(`${big.url}/healthz`)).status).toBe(200);
    } finally {
      await big.close();
    }
  });
});

describe('"a request whose headers are not complete in 10 s is answered 408 and closed" (decisions.md "Slow clients")', () => {
  it('half a header block: 408 in the error shape with X-Request-Id, closed at HEADERS_TIMEOUT_MS', async () => {
    const a = await exchange(`GET /api/v1/contacts HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${acc.key}\r\n`);
    expectErrorShape(a, 408, 'request_timeout');
    expect(a.closedAfterMs).toBeLessThan(HEADERS_MS + SLACK_MS);
  });
});

describe('"Every answer the server writes, including … 431, has the error body and an X-Request-Id" (decisions.md "Slow clients")', () => {
  it('headers over 16 KiB: 431 with the catalogue text', async () => {
    const a = await exchange(`GET /api/v1/contacts HTTP/1.1\r\nHost: ${host}\r\nX-Padding: ${'a'.repeat(17 * 1024)}\r\n\r\n`);
    expectErrorShape(a, 431, 'headers_too_large');
  });

  it('HTTP the parser refuses (a header line without a colon): 400 with the catalogue text', async () => {
    const a = await exchange(`GET /api/v1/contacts HTTP/1.1\r\nHost: ${host}\r\nno colon here\r\n\r\n`);
    expectErrorShape(a, 400, 'bad_request');
  });
});

describe('"A client that disconnects mid-request is logged at debug, not as an outage" (decisions.md "Slow clients")', () => {
  it('40 uploads cut mid-body with a valid key: each logged at debug, no line at warn or above', async () => {
    const N = 40;
    const from = logLines.length;
    const lines = () => logLines.slice(from);
    const sockets = await Promise.all(Array.from({ length: N }, () => open()));
    for (const s of sockets) {
      s.on('error', () => {});
      s.write(`${contactPost(`Bearer ${acc.key}`, 100_000)}{"phone": "+549`);
    }
    // Every request reached its route (its headers were read) before the clients vanish.
    await until(() => lines().filter((l) => l.msg === 'incoming request').length >= N);
    for (const s of sockets) s.destroy();
    // Each request's end is logged, quietly or not: its abort as the client left, or — when the
    // abort went unnoticed on a busy machine — the server's own body deadline (BODY_MS) closing it.
    const QUIET = new Set(['request aborted by the client', 'request body not complete in time']);
    const handled = () =>
      new Set(
        lines()
          .filter((l) => QUIET.has(l.msg) || l.level >= 50)
          .map((l) => l.reqId),
      );
    const seen = () => {
      const counts = new Map<string, number>();
      for (const l of lines()) counts.set(`${l.level} ${l.msg}`, (counts.get(`${l.level} ${l.msg}`) ?? 0) + 1);
      return JSON.stringify([...counts]);
    };
    await until(() => handled().size >= N, { what: 'every cut upload logged' }).catch((e: Error) => {
      throw new Error(`${e.message}; lines: ${seen()}`);
    });
    expect(lines().filter((l) => l.level >= 40)).toEqual([]);
    expect(handled().size).toBe(N);
  });
});
