// The automation `http` step (docs/automations.md): one request, no retries, under the webhook
// SSRF rule (the agent's lookup refuses private and local addresses unless ALLOW_PRIVATE_WEBHOOKS);
// `{status, body}` with the body parsed when it is JSON, else text, cut at 64 KB.
import { type Agent, request } from 'undici';
import { executionErrors, httpStepReasons } from '../http/messages.es-AR.js';
import type { Services } from '../services.js';
import { isPrivateLiteral, PrivateAddressError } from '../webhooks/ssrf.js';
import type { StepOf } from './flow.js';
import { type TextContext as RenderContext, renderJson, renderText } from './text.js';

export const MAX_BODY_BYTES = 64 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;

export type HttpStep = StepOf<'http'>;

export interface HttpStepResult {
  ok: boolean;
  result: { status: number | null; body: unknown };
  /** Why it did not succeed (the step log), and the execution's error when there is no onError. */
  reason?: string;
  error: string;
}

/** Reads at most MAX_BODY_BYTES of the body; the rest is dropped. */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const room = MAX_BODY_BYTES - size;
    chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
    size += Math.min(chunk.length, room);
    if (size >= MAX_BODY_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseBody(text: string, contentType: string | undefined): unknown {
  if (text === '') return null;
  if (contentType?.includes('json') || /^\s*[[{"]/.test(text)) {
    try {
      return JSON.parse(text);
    } catch {
      /* not JSON after all: text */
    }
  }
  return text;
}

const failed = (step: HttpStep, reason: string, status: number | null = null, body: unknown = null): HttpStepResult => ({
  ok: false,
  result: { status, body },
  reason,
  error: executionErrors.http(step.id, reason),
});

export async function httpStep(s: Services, agent: Agent, step: HttpStep, ctx: RenderContext): Promise<HttpStepResult> {
  const timeoutMs = step.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let url: URL;
  try {
    url = new URL(renderText(step.url, ctx));
  } catch {
    return failed(step, httpStepReasons.url);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return failed(step, httpStepReasons.url);
  if (!s.config.allowPrivateWebhooks && isPrivateLiteral(url)) return failed(step, httpStepReasons.refused);

  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(step.headers ?? {})) headers[k.toLowerCase()] = renderText(v, ctx);
  let body: string | undefined;
  if (step.body !== undefined && step.method !== 'GET') {
    body = JSON.stringify(renderJson(step.body, ctx));
    headers['content-type'] ??= 'application/json';
  }
  headers['user-agent'] ??= 'Chasqui-Automations/1';

  try {
    const res = await request(url, {
      method: step.method as 'GET',
      headers,
      ...(body !== undefined ? { body } : {}),
      dispatcher: agent,
      signal: AbortSignal.timeout(timeoutMs),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const text = await readCapped(res.body as never);
    const ct = res.headers['content-type'];
    const parsed = parseBody(text, Array.isArray(ct) ? ct[0] : ct);
    if (res.statusCode >= 200 && res.statusCode < 300) return { ok: true, result: { status: res.statusCode, body: parsed }, error: '' };
    return failed(step, httpStepReasons.status(res.statusCode), res.statusCode, parsed);
  } catch (err) {
    const e = err as Error & { code?: string; cause?: { code?: string } };
    if (err instanceof PrivateAddressError || e.cause instanceof PrivateAddressError || e.code === 'EPRIVATEADDRESS')
      return failed(step, httpStepReasons.refused);
    if (e.name === 'TimeoutError' || e.name === 'AbortError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT')
      return failed(step, httpStepReasons.timeout(timeoutMs));
    return failed(step, httpStepReasons.network);
  }
}
