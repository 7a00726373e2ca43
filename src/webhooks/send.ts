// One delivery attempt over HTTP (decisions.md "Webhooks"): POST, JSON, signed per Standard
// Webhooks, bounded time, redirects not followed, any 2xx is success.
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { type Keyring, SecretKeyMissing } from '../secrets/keyring.js';
import type { Claimed } from './delivery-repo.js';
import { secretKey, signatureHeader } from './signing.js';
import { isPrivateLiteral, publicOnlyLookup } from './ssrf.js';

/** Response text kept in the attempt log (decisions.md: ≤ 2 KB). */
export const EXCERPT_BYTES = 2048;

export interface SendOutcome {
  statusCode: number | null;
  durationMs: number;
  excerpt: string | null;
  error: string | null;
  /** Seconds from a 429/503 `Retry-After`, when present. */
  retryAfterS: number | null;
  /** Stopped by our own shutdown: no attempt happened as far as the log is concerned. */
  aborted: boolean;
}

/** The pooled agent: keep-alive connections per origin; the SSRF lookup unless private is allowed. */
export function createAgent(opts: { allowPrivate: boolean; connectionsPerOrigin: number; timeoutMs: number }): Agent {
  return new Agent({
    connections: opts.connectionsPerOrigin,
    keepAliveTimeout: 10_000,
    connectTimeout: opts.timeoutMs,
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    ...(opts.allowPrivate ? {} : { connect: { lookup: publicOnlyLookup as never } }),
  });
}

/** The envelope `{id, event, createdAt, data}` (+ `test: true`), built around the stored JSON text. */
export function envelopeBody(c: Pick<Claimed, 'event_id' | 'kind' | 'event_created_at' | 'data' | 'test'>): string {
  const head = `{"id":${JSON.stringify(c.event_id)},"event":${JSON.stringify(c.kind)},"createdAt":${JSON.stringify(
    new Date(c.event_created_at).toISOString(),
  )},"data":${c.data}`;
  return c.test ? `${head},"test":true}` : `${head}}`;
}

/**
 * The claim with its signing secrets opened (sealed at rest), or the error naming a key not in the
 * ring: that attempt fails with it (its text is the attempt's error) and the schedule goes on.
 */
export function openSecrets(ring: Keyring, c: Claimed): Claimed | SecretKeyMissing {
  try {
    return {
      ...c,
      secret: ring.open(c.secret, 'webhooks.secret'),
      previous_secret: ring.openNullable(c.previous_secret, 'webhooks.previous_secret'),
    };
  } catch (err) {
    if (err instanceof SecretKeyMissing) return err;
    throw err;
  }
}

/** Signing keys of this attempt: the current secret, and the previous one during its 24 h. */
export function signingKeys(c: Pick<Claimed, 'secret' | 'previous_secret' | 'previous_secret_expires_at'>, now: Date): Buffer[] {
  const keys = [secretKey(c.secret)];
  if (c.previous_secret && c.previous_secret_expires_at && new Date(c.previous_secret_expires_at) > now)
    keys.push(secretKey(c.previous_secret));
  return keys;
}

function parseRetryAfter(v: string | string[] | undefined, now: Date): number | null {
  const s = Array.isArray(v) ? v[0] : v;
  if (!s) return null;
  if (/^\d+$/.test(s.trim())) return Number(s.trim());
  const at = Date.parse(s);
  return Number.isNaN(at) ? null : Math.max(0, (at - now.getTime()) / 1000);
}

export async function sendAttempt(
  agent: Agent,
  c: Claimed,
  now: Date,
  timeoutMs: number,
  allowPrivate: boolean,
  shutdown: AbortSignal,
): Promise<SendOutcome> {
  const body = envelopeBody(c);
  const ts = Math.floor(now.getTime() / 1000);
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  const url = new URL(c.url);
  if (!allowPrivate && isPrivateLiteral(url))
    return {
      statusCode: null,
      durationMs: 0,
      excerpt: null,
      error: 'private address refused (SSRF guard)',
      retryAfterS: null,
      aborted: false,
    };
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const res = await request(url, {
      method: 'POST',
      dispatcher: agent,
      signal: AbortSignal.any([timeout, shutdown]),
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Chasqui-Webhooks/1.0',
        'webhook-id': c.event_id,
        'webhook-timestamp': String(ts),
        'webhook-signature': signatureHeader(signingKeys(c, now), c.event_id, ts, body),
      },
      body,
    });
    // Keep at most 2 KB of the answer; stop reading past it.
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      const b = chunk as Buffer;
      chunks.push(b);
      size += b.length;
      if (size >= EXCERPT_BYTES) {
        res.body.destroy();
        break;
      }
    }
    const excerpt = Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
    const code = res.statusCode;
    return {
      statusCode: code,
      durationMs: took(),
      excerpt: excerpt || null,
      error: code >= 300 && code < 400 ? `redirect not followed (${res.headers.location ?? 'no location'})` : null,
      retryAfterS: code === 429 || code === 503 ? parseRetryAfter(res.headers['retry-after'], now) : null,
      aborted: false,
    };
  } catch (err) {
    if (shutdown.aborted)
      return { statusCode: null, durationMs: took(), excerpt: null, error: 'shutdown', retryAfterS: null, aborted: true };
    const e = err as Error & { code?: string };
    const error = timeout.aborted
      ? `timeout after ${timeoutMs} ms`
      : e.code === 'EPRIVATEADDRESS'
        ? 'private address refused (SSRF guard)'
        : `${e.code ?? e.name}: ${e.message}`.slice(0, 500);
    return { statusCode: null, durationMs: took(), excerpt: null, error, retryAfterS: null, aborted: false };
  }
}
