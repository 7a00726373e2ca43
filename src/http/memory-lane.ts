// The memory lane: GET /api/v1/me answered by node:http itself when everything it needs is in this
// process's memory (the cached key, a cap decision without a round trip, a fresh account view).
// It is the same guard and the same view, called before Fastify rather than inside it: a busy
// client polling /me costs about what bare node:http costs (docs/performance.md). Anything else
// goes to Fastify as before: other routes and methods, a query string or trailing slash, a body,
// a key or view not cached, a refused or pending admission (taken over by the guards, never
// decided twice), request logging at debug, and a closing server (Fastify answers 503).
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { FastifyServerFactory } from 'fastify';
import type { Services } from '../services.js';
import { ApiError } from './errors.js';
import { cachedAuth, clientIp, kAdmission } from './guards.js';

const PATH = '/api/v1/me';
const JSON_TYPE = 'application/json; charset=utf-8';

declare module 'fastify' {
  interface FastifyInstance {
    /** The lane in front of this instance's server; null when every request is logged. */
    memoryLane: MemoryLane | null;
  }
}

export class MemoryLane {
  private open = true;
  /** Requests answered here (the rest went to Fastify). */
  answered = 0;

  constructor(readonly services: Services) {}

  /** From now on every request goes to Fastify (it answers 503 while closing). */
  close(): void {
    this.open = false;
  }

  /** Answers the request (true) or leaves it to Fastify, untouched or with its admission (false). */
  answer(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.url !== PATH || req.method !== 'GET' || !this.open) return false;
    const h = req.headers;
    if (h['content-length'] !== undefined || h['transfer-encoding'] !== undefined) return false;
    const s = this.services;
    const ip = clientIp(req, s.config.trustProxy);
    const auth = cachedAuth(req, s, ip);
    const view = auth && s.accountViews.readyView(auth.account.id);
    if (!auth || !view) return false;
    // From here the request is admitted exactly once, here or by the guards.
    const outcome = s.limiter.admit(auth.caps, { ip, message: false });
    if (outcome instanceof Promise || outcome.error) {
      req[kAdmission] = { auth, ip, outcome };
      return false;
    }
    // Admitted here, so answered here whatever happens next: handing the request to Fastify now
    // would admit and count it a second time.
    this.answered += 1;
    const head: string[] = ['x-request-id', randomUUID()];
    for (const k in outcome.headers) head.push(k, outcome.headers[k] as string);
    const rateHeadersEnd = head.length;
    try {
      // Counted before the view is rendered, as the guards do: the answer includes this call.
      s.usage.countApiCall(auth.account.id);
      const body = s.accountViews.render(auth.account, view);
      head.push('content-type', JSON_TYPE, 'content-length', String(body.bytes));
      res.writeHead(200, head);
      res.end(body.text);
    } catch (err) {
      head.length = rateHeadersEnd; // a failed writeHead leaves the body's headers in the list
      this.fail(res, head, err);
    }
    return true;
  }

  private fail(res: ServerResponse, head: string[], err: unknown): void {
    const id = head[1] as string;
    this.services.log.error({ err, reqId: id }, 'GET /me could not be answered');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const e = new ApiError('internal');
    const body = JSON.stringify({ ...e.body(), requestId: id });
    head.push('content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(body)));
    res.writeHead(e.statusCode, head);
    res.end(body);
  }
}

/**
 * Fastify's server with the lane in front. The timeouts are those Fastify sets on the servers it
 * makes itself (fastify/lib/server.js), so connections behave the same with or without the lane.
 */
export function laneServerFactory(lane: MemoryLane): FastifyServerFactory {
  return (handler, opts) => {
    const o = opts as { keepAliveTimeout: number; requestTimeout: number; connectionTimeout: number; maxRequestsPerSocket: number };
    const server = createServer((req, res) => {
      let answered = false;
      try {
        answered = lane.answer(req, res);
      } catch (err) {
        // A defect before admission (nothing counted yet) must not take the process down:
        // Fastify answers instead. After admission the lane answers its own failures.
        lane.services.log.error({ err }, 'memory lane failed; Fastify answers');
        if (res.headersSent) {
          res.destroy();
          return;
        }
      }
      if (!answered) handler(req, res);
    });
    server.keepAliveTimeout = o.keepAliveTimeout;
    server.requestTimeout = o.requestTimeout;
    server.setTimeout(o.connectionTimeout);
    if (o.maxRequestsPerSocket > 0) server.maxRequestsPerSocket = o.maxRequestsPerSocket;
    return server;
  };
}
