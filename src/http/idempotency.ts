// Idempotency-Key on POST /messages and POST /contacts (decisions.md, "Endpoints").
// Routes opt in with `config: { idempotent: true }`; only those routes get the hooks below, so
// every other request pays nothing for them.
//
// How it works: the row in idempotency_keys (primary key account + key) is the lock, so it holds
// across processes. After the guards (onRequest: key, plan, caps, quota) and after validation,
// preHandler inserts the row in state `running`; ON CONFLICT it takes the row over only when
// it expired (24 h by s.clock) or when a `running` row outlived its lease (a crashed process).
// Otherwise the row decides: another body or route → 422, still running → 409, done → replay.
//
// What is stored (the decision the spec leaves to us): only answers of a request that acted.
// - 2xx: stored and replayed.
// - The provider's refusals of a send (502 provider_rejected/provider_temporary, 409
//   provider_window/provider_template): stored, since the message was recorded as failed and a
//   retry with the same key must not send again (use a new key to try again).
// - Every other error the handler throws (400, 402 contact limit, 404, 409 window…) means it was
//   refused before acting, and 500/503 mean its transaction did not commit: the row is deleted,
//   so the same key may be retried once the cause is fixed (api.md §7: retry 500s).
// - Refused before the handler (401/402/429 guards, 400 validation, bad key header): the row is
//   never written.
// A replay counts as an API call like any request (api.md §8: every request with a valid key).
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import type { Services } from '../services.js';
import { ApiError, invalid } from './errors.js';
import { textFor } from './messages.es-AR.js';
import { MAX_JSON_DEPTH } from './storable.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    idempotent?: boolean;
  }
  interface FastifyRequest {
    /** Set when this request holds an Idempotency-Key row in state `running`. */
    idempotency: { key: string; hash: string } | null;
  }
}

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** A `running` row older than this belongs to a request that died with its process. */
export const RUNNING_LEASE_MS = 5 * 60 * 1000;
const HEADER = 'idempotency-key';

/** Error codes thrown after the send was recorded: the request acted, so its answer is kept. */
const ACTED_ERRORS = new Set(['provider_rejected', 'provider_temporary', 'provider_window', 'provider_template']);

/**
 * JSON with sorted object keys: the same body in another key order is the same request. Bodies
 * nest at most MAX_JSON_DEPTH levels (the parser refuses deeper ones); past that this refuses
 * with the same 400 rather than recurse without bound.
 */
export function canonicalJson(v: unknown, depth = 0): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (depth === MAX_JSON_DEPTH) throw invalid([], textFor('json_too_deep', { max: MAX_JSON_DEPTH }));
  if (Array.isArray(v)) return `[${v.map((x) => canonicalJson(x, depth + 1)).join(',')}]`;
  const entries = Object.entries(v as Record<string, unknown>)
    .filter(([, x]) => x !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x, depth + 1)}`).join(',')}}`;
}

/** What "the same request" means: the same route and the same JSON body (sha256, hex). */
export const requestFingerprint = (route: string, body: unknown): string =>
  createHash('sha256')
    .update(`${route}\n${canonicalJson(body ?? null)}`)
    .digest('hex');

export function installIdempotency(app: FastifyInstance, s: Services): void {
  app.decorateRequest('idempotency', null);
  const hashes = new WeakMap<FastifyRequest, string>();
  const errors = new WeakMap<FastifyRequest, unknown>();

  // Before validation: check the header and fingerprint the body as the client sent it.
  const preValidation = async (req: FastifyRequest) => {
    const raw = req.headers[HEADER];
    if (raw === undefined) return;
    const key = Array.isArray(raw) ? raw.join(', ') : raw;
    if (key.length < 1 || key.length > 255) throw invalid(['Idempotency-Key'], textFor('idempotency_key_invalid'));
    hashes.set(req, requestFingerprint(`${req.method} ${req.routeOptions.url}`, req.body));
  };

  // After validation, right before the handler: claim the key or answer from it.
  const preHandler = async (req: FastifyRequest, reply: FastifyReply) => {
    const hash = hashes.get(req);
    if (hash === undefined) return;
    const key = req.headers[HEADER] as string;
    const accountId = req.auth.account.id;
    const route = `${req.method} ${req.routeOptions.url}`;
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = s.clock.now();
      const claimed = await sql<{ key: string }>`
        INSERT INTO idempotency_keys (account_id, key, route, request_hash, state, created_at)
        VALUES (${accountId}, ${key}, ${route}, ${hash}, 'running', ${now})
        ON CONFLICT (account_id, key) DO UPDATE
          SET route = excluded.route, request_hash = excluded.request_hash, state = 'running',
              response_status = NULL, response_body = NULL, created_at = excluded.created_at
          WHERE idempotency_keys.created_at <= ${new Date(now.getTime() - IDEMPOTENCY_TTL_MS)}
             OR (idempotency_keys.state = 'running' AND idempotency_keys.created_at <= ${new Date(now.getTime() - RUNNING_LEASE_MS)})
        RETURNING key`.execute(s.db);
      if (claimed.rows.length > 0) {
        req.idempotency = { key, hash };
        return;
      }
      const row = await s.db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('account_id', '=', accountId)
        .where('key', '=', key)
        .executeTakeFirst();
      if (!row) continue; // released between our insert and our read: try to claim again
      if (row.request_hash !== hash || row.route !== route) throw new ApiError('idempotency_mismatch');
      if (row.state !== 'done') throw new ApiError('idempotency_in_progress');
      return replay(reply, row.response_status ?? 200, row.response_body);
    }
    throw new ApiError('idempotency_in_progress');
  };

  const onError = async (req: FastifyRequest, _reply: FastifyReply, err: unknown) => {
    if (req.idempotency) errors.set(req, err);
  };

  // The answer is settled before it leaves: a retry arriving after it sees `done`, never `running`.
  const onSend = async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const held = req.idempotency;
    if (!held) return payload;
    req.idempotency = null;
    const status = reply.statusCode;
    const err = errors.get(req);
    const acted = (status >= 200 && status < 300) || (err instanceof ApiError && ACTED_ERRORS.has(err.code));
    const row = s.db.updateTable('idempotency_keys');
    try {
      if (acted) {
        // The exact JSON text, kept as a jsonb string: the replay is byte for byte the first answer.
        const text =
          typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : JSON.stringify(payload ?? null);
        await row
          .set({ state: 'done', response_status: status, response_body: JSON.stringify(text) })
          .where('account_id', '=', req.auth.account.id)
          .where('key', '=', held.key)
          .where('request_hash', '=', held.hash)
          .execute();
      } else {
        await s.db
          .deleteFrom('idempotency_keys')
          .where('account_id', '=', req.auth.account.id)
          .where('key', '=', held.key)
          .where('request_hash', '=', held.hash)
          .where('state', '=', 'running')
          .execute();
      }
    } catch (e) {
      // The row stays `running`: retries get 409 until the lease ends, then may act again.
      req.log.warn({ err: { message: (e as Error).message }, status }, 'idempotency key not settled');
    }
    return payload;
  };

  app.addHook('onRoute', (route) => {
    if (!route.config?.idempotent) return;
    route.preValidation = withHook(route.preValidation, preValidation);
    route.preHandler = withHook(route.preHandler, preHandler);
    route.onError = withHook(route.onError, onError);
    route.onSend = withHook(route.onSend, onSend);
  });
}

/** A route's own hooks (none, one or a list) plus ours, last. */
// `any`: Fastify types each hook list of a route differently.
function withHook(existing: any, hook: unknown): any {
  if (!existing) return [hook];
  return Array.isArray(existing) ? [...existing, hook] : [existing, hook];
}

function replay(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return reply
    .code(status)
    .header('Idempotent-Replayed', 'true')
    .header('content-type', 'application/json; charset=utf-8')
    .serializer((p: unknown) => p as string)
    .send(text);
}

/** Periodic purge of keys past their 24 hours (they are ignored already; this keeps the table small). */
export async function purgeIdempotencyKeys(s: Services): Promise<number> {
  const cutoff = new Date(s.clock.ms() - IDEMPOTENCY_TTL_MS);
  const res = await s.db.deleteFrom('idempotency_keys').where('created_at', '<=', cutoff).executeTakeFirst();
  return Number(res.numDeletedRows ?? 0);
}
