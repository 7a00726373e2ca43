// A local HTTP server standing in for a customer's webhook endpoint: it records every request
// and answers what the test tells it to (status, headers, body, delay, or never).
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Parsed JSON body (null when not JSON). */
  json: any;
  at: number;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Wait this long (real ms) before answering. */
  delayMs?: number;
  /** Never answer (until the receiver closes). */
  hang?: boolean;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Answers for the next requests, in order; after them, `fallback`. */
  queue: Reply[];
  fallback: Reply;
  /** Resolves when at least `n` requests arrived; fails after `timeoutMs` (real time) without them. */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(fallback: Reply = { status: 200, body: 'ok' }): Promise<Receiver> {
  const sockets = new Set<Socket>();
  const hanging = new Set<ServerResponse>();
  /** Pending waitFor calls, woken by each request that arrives. */
  const waiters = new Set<() => void>();
  const r: Receiver = {
    url: '',
    received: [],
    queue: [],
    fallback,
    waitFor(n, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (r.received.length < n) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(r.received);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`receiver: expected ${n} requests, got ${r.received.length}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((res) => {
        for (const s of sockets) s.destroy();
        server.close(() => res());
      }),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown = null;
      try {
        json = JSON.parse(body);
      } catch {
        /* not JSON */
      }
      r.received.push({ path: req.url ?? '/', headers: req.headers, body, json, at: Date.now() });
      for (const wake of [...waiters]) wake();
      const reply = r.queue.shift() ?? r.fallback;
      if (reply.hang) {
        hanging.add(res);
        return;
      }
      const send = () => {
        res.writeHead(reply.status ?? 200, reply.headers ?? {});
        res.end(reply.body ?? '');
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return r;
}
