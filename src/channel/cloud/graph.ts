// A small client of Meta's Graph API (the WhatsApp Cloud API): one pooled undici agent, connect
// and total timeouts, redirects not followed (undici's default), no retries (POST /messages is not idempotent: api.md §7).
// The access token travels only in the Authorization header and is never logged.
import { Agent, type Dispatcher, request } from 'undici';

/** The error object Graph answers with (`{error: {message, type, code, error_subcode, error_data, fbtrace_id}}`). */
export interface GraphErrorBody {
  message?: string;
  type?: string;
  code?: number;
  error_subcode?: number;
  error_data?: { messaging_product?: string; details?: string };
  fbtrace_id?: string;
}

/** Graph answered with a non-2xx status. */
export class GraphApiError extends Error {
  constructor(
    readonly status: number,
    readonly error: GraphErrorBody | null,
  ) {
    super(`Graph API ${status}${error?.code !== undefined ? ` code ${error.code}` : ''}`);
  }
}

/** Graph could not be reached, or did not answer in time. */
export class GraphNetworkError extends Error {
  constructor(
    readonly timeout: boolean,
    cause: unknown,
  ) {
    super(timeout ? 'Graph API timeout' : 'Graph API unreachable', { cause });
  }
}

/** The Graph version used when GRAPH_API_URL names none (Meta keeps each version ≥ 2 years). */
export const DEFAULT_GRAPH_VERSION = 'v24.0';

/**
 * GRAPH_API_URL with a version segment: kept as is when it ends in one (`…/v24.0`), else
 * DEFAULT_GRAPH_VERSION is added (`http://fake:8080` → `http://fake:8080/v24.0`).
 */
export function graphBase(url: string): string {
  const base = url.replace(/\/+$/, '');
  return /\/v\d+(\.\d+)?$/.test(base) ? base : `${base}/${DEFAULT_GRAPH_VERSION}`;
}

export interface GraphClientOptions {
  /** GRAPH_API_URL, with or without the version segment (see graphBase). */
  baseUrl: string;
  connectTimeoutMs?: number;
  /** Whole request, from connect to the last byte of the answer. */
  timeoutMs?: number;
  /** Each request's duration, by operation (chasqui_provider_request_duration_seconds). */
  observe?: ((operation: string, seconds: number) => void) | undefined;
}

/** The operation a Graph path names, for the metrics: never the path itself (it carries ids). */
function graphOperation(path: string): string {
  const last = path.split('?')[0]!.replace(/\/+$/, '').split('/').pop();
  return last === 'messages' ? 'send' : last === 'message_templates' ? 'templates' : 'other';
}

export class GraphClient {
  private readonly agent: Agent;
  private readonly base: string;
  private readonly timeoutMs: number;
  private readonly observe: GraphClientOptions['observe'];

  constructor(opts: GraphClientOptions) {
    this.base = graphBase(opts.baseUrl);
    this.observe = opts.observe;
    this.timeoutMs = opts.timeoutMs ?? 15_000;
    const connectTimeout = Math.min(opts.connectTimeoutMs ?? 5_000, this.timeoutMs);
    this.agent = new Agent({ connect: { timeout: connectTimeout }, headersTimeout: this.timeoutMs, bodyTimeout: this.timeoutMs });
  }

  /** `path` relative to the base (`/123/messages`), or an absolute URL Graph gave us (`paging.next`). */
  url(path: string): string {
    return /^https?:\/\//.test(path) ? path : `${this.base}/${path.replace(/^\/+/, '')}`;
  }

  async call<T>(method: 'GET' | 'POST', path: string, token: string, body?: unknown): Promise<T> {
    const started = performance.now();
    try {
      return await this.send<T>(method, path, token, body);
    } finally {
      this.observe?.(graphOperation(path), (performance.now() - started) / 1000);
    }
  }

  private async send<T>(method: 'GET' | 'POST', path: string, token: string, body?: unknown): Promise<T> {
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(this.url(path), {
        method,
        dispatcher: this.agent,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      throw new GraphNetworkError(isTimeout(err), err);
    }
    return (await graphAnswer(res)) as T;
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/**
 * A Graph answer (WhatsApp Cloud API, Instagram): its JSON (null when empty or not JSON); a non-2xx
 * throws GraphApiError with Meta's error object, a body that does not arrive GraphNetworkError.
 */
export async function graphAnswer(res: Dispatcher.ResponseData<unknown>): Promise<unknown> {
  let text: string;
  try {
    text = await res.body.text();
  } catch (err) {
    throw new GraphNetworkError(isTimeout(err), err);
  }
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (res.statusCode < 200 || res.statusCode >= 300) {
    const e = json && typeof json === 'object' && 'error' in json ? (json as { error: unknown }).error : null;
    throw new GraphApiError(res.statusCode, e && typeof e === 'object' ? (e as GraphErrorBody) : null);
  }
  return json;
}

/** A timeout (connect, headers, body or the whole request's), as opposed to another network failure. */
export function isTimeout(err: unknown): boolean {
  const e = err as { name?: string; code?: string } | null;
  return (
    e?.name === 'TimeoutError' ||
    e?.name === 'AbortError' ||
    e?.code === 'UND_ERR_CONNECT_TIMEOUT' ||
    e?.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    e?.code === 'UND_ERR_BODY_TIMEOUT'
  );
}
