// Slow and broken clients (decisions.md "Slow clients"): headers not complete in time, a body not
// complete in time after its headers, headers too large or HTTP the parser refuses are answered in
// the one error shape with an X-Request-Id, and the connection is closed. A client that goes away
// is no fault of ours: logged at debug.
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';
import type { ErrorCode } from './messages.es-AR.js';

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/**
 * Writes the error answer straight on the socket (no route, or no time left for one), unless a
 * response already started on it, then closes it. What was sent before the close stays sent.
 */
export function answerAndClose(socket: Socket, code: ErrorCode, requestId: string, responseStarted: boolean): void {
  if (socket.writable && !responseStarted) {
    const e = new ApiError(code);
    const body = JSON.stringify(e.body());
    socket.write(
      `HTTP/1.1 ${e.statusCode} ${REASONS[e.statusCode] ?? 'Error'}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy();
}

/** The response a connection is serving (node:http's `_httpMessage`, as runtime.ts reads it). */
const responseStartedOn = (socket: Socket): boolean =>
  (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;

/**
 * The server's 'clientError': what node:http refuses before any route runs. Only the error's code
 * is logged: its raw packet holds the request's headers, API keys included.
 */
export function clientErrorHandler(log: FastifyBaseLogger) {
  return (err: Error & { code?: string }, socket: Socket): void => {
    log.debug({ code: err.code }, 'client error');
    if (err.code === 'ECONNRESET' || socket.destroyed) {
      socket.destroy();
      return;
    }
    const code: ErrorCode =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 'request_timeout'
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? 'headers_too_large'
          : 'bad_request';
    answerAndClose(socket, code, randomUUID(), responseStartedOn(socket));
  };
}

/** A request carries a body when it says so (RFC 9112 §6.3); the rest are complete with their headers. */
const hasBody = (h: IncomingHttpHeaders): boolean =>
  h['transfer-encoding'] !== undefined || (h['content-length'] !== undefined && h['content-length'] !== '0');

/**
 * A body not complete `ms` after its headers, once what its socket holds is read: 408 (when nothing
 * was answered yet) and closed. It starts before the key is checked, so it holds with or without
 * one. The request's own stream then fails as aborted, which the error handler logs at debug.
 */
export function watchBody(req: FastifyRequest, reply: FastifyReply, ms: number): void {
  const raw = req.raw;
  if (!hasBody(raw.headers) || raw.complete) return;
  const timer = setTimeout(() => {
    // Judged after this turn's I/O: timers run before sockets are read, so a body that arrived
    // while the process was busy past the deadline is read first, not refused.
    setImmediate(() => {
      if (raw.complete) return;
      req.log.debug('request body not complete in time');
      answerAndClose(raw.socket, 'request_timeout', req.id, reply.raw.headersSent);
    });
  }, ms);
  timer.unref();
  raw.once('close', () => clearTimeout(timer));
}

/** node:http checks header deadlines on this period: a tenth of the timeout, at most a second. */
export const checkingIntervalFor = (headersTimeoutMs: number): number => Math.max(10, Math.min(1000, Math.floor(headersTimeoutMs / 10)));
