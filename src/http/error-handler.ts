// Turns every error into the one body shape of api.md §7; 500s never leak internals.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, ValidationError } from './errors.js';

const FASTIFY_CODES: Record<string, ConstructorParameters<typeof ApiError>[0]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'body_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_TYPE: 'unsupported_media_type',
};

// Socket errors: only those of the database's own connections (they name the system call that
// failed) mean the database is out of reach. A request whose client went away fails with the
// same codes and no system call.
const SOCKET_CODES = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH'];
// SQLSTATE codes (pg and PGlite): connection exceptions (class 08), shutdown, too many connections.
const SQLSTATE_CODES = ['57P01', '57P02', '57P03', '53300'];
// The pg pool and client's own texts for a connection lost, refused or never obtained.
const PG_CONNECTION_TEXTS =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i;

/** A lost or refused database connection, raised by pg or PGlite: answer 503 (try again), not 500. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string; syscall?: string } | null;
  if (!e) return false;
  const code = e.code ?? '';
  if (SQLSTATE_CODES.includes(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
  if (SOCKET_CODES.includes(code)) return typeof e.syscall === 'string';
  return PG_CONNECTION_TEXTS.test(e.message ?? '');
}

/** The request's own stream failed because its client closed the connection (or we did: too slow). */
const abortedByClient = (err: Error, req: FastifyRequest): boolean =>
  req.raw.socket?.destroyed !== false && ['ECONNRESET', 'ERR_STREAM_PREMATURE_CLOSE'].includes((err as FastifyError).code ?? '');

export function errorHandler(err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (err instanceof ApiError) {
    for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
    return reply.code(err.statusCode).send(err.body());
  }
  if (err instanceof ValidationError) return reply.code(400).send(err.body());
  const code = (err as FastifyError).code;
  if (code && FASTIFY_CODES[code]) {
    const e = new ApiError(FASTIFY_CODES[code]);
    return reply.code(e.statusCode).send(e.body());
  }
  if (err instanceof SyntaxError && (err as FastifyError).statusCode === 400) {
    const e = new ApiError('invalid_json');
    return reply.code(400).send(e.body());
  }
  if (isDatabaseUnavailable(err)) {
    req.log.error({ err: { message: err.message, code } }, 'database unavailable');
    const e = new ApiError('database_unavailable');
    return reply.code(503).header('Retry-After', '5').send(e.body());
  }
  if (abortedByClient(err, req)) {
    // Nobody is left to read an answer; sending one only completes the request's bookkeeping.
    req.log.debug({ code }, 'request aborted by the client');
    return reply.code(400).send(new ApiError('validation').body());
  }
  const status = (err as FastifyError).statusCode;
  if (status && status >= 400 && status < 500) {
    // Any other client error Fastify raised (e.g. malformed URL): a generic text, same shape.
    const e = new ApiError(status === 404 ? 'route_not_found' : 'validation');
    return reply.code(status).send(e.body());
  }
  req.log.error({ err }, 'unexpected error');
  const e = new ApiError('internal');
  return reply.code(500).send({ ...e.body(), requestId: req.id });
}
