// Operator POSTs whose body is optional (operator-api.md: `close {by?}`, `jobs/{name}/run`,
// `campaigns/{cid}/cancel`). Many HTTP clients send `Content-Type: application/json` with an empty
// body on such calls; Fastify would answer 400 (empty JSON). A route-level preParsing hook treats
// an empty body as no body, so the route sees `undefined`; a non-empty malformed body still 400s.
import type { FastifyReply, FastifyRequest } from 'fastify';

export async function emptyBodyIsNoBody<P>(req: FastifyRequest, _reply: FastifyReply, payload: P): Promise<P> {
  const h = req.raw.headers;
  if (h['content-length'] === '0' && h['transfer-encoding'] === undefined) delete h['content-type'];
  return payload;
}
