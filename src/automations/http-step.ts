// The automation `http` step (docs/automations.md): one request, no retries, under the webhook
// SSRF rule (the agent's lookup refuses private and local addresses unless ALLOW_PRIVATE_WEBHOOKS);
// `{status, body}` with the body parsed when it is JSON, else text, cut at 64 KB.
import type { Agent } from 'undici';
import { executionErrors, httpStepReasons } from '../http/messages.es-AR.js';
import { openOrNull, sealedBy } from '../secrets/keyring.js';
import type { Services } from '../services.js';
import { isPrivateLiteral, PrivateAddressError } from '../webhooks/ssrf.js';
import type { StepOf } from './flow.js';
import { HOP_HEADER, MAX_HOPS, refusedHop } from './loops.js';
import { asText, lookup, type TextContext as RenderContext, renderJson, renderText } from './text.js';

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

/** `{{{ path }}}` (inserted raw) or `{{ path }}` (percent-encoded for where it falls). */
const URL_PLACEHOLDER = /\{\{\{\s*([^{}]*?)\s*\}\}\}|\{\{\s*([^{}]*?)\s*\}\}/g;

/** Lone surrogates (which encodeURIComponent refuses) become U+FFFD. */
const wellFormed = (v: string): string => v.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');

/** A value encoded so it stays inside its component: every character but A-Z a-z 0-9 - _ ~ escaped, dots too (`..` cannot climb). */
const encodeComponent = (v: string): string =>
  encodeURIComponent(wellFormed(v)).replace(/[!'()*.]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** Characters the author may leave unescaped in a request target; anything else is percent-encoded. */
const UNSAFE_IN_TARGET = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]/gu;

export interface RenderedUrl {
  url: string;
  /** The template's own scheme://host[:port] when it is written literally (raw values cannot change it). */
  literalOrigin: string | null;
}

/**
 * The http step's URL (automations.md "The http step's request"): the author's text as written,
 * each `{{path}}` percent-encoded as the component it falls in (host, path segment, query value,
 * fragment: `/ ? # & = + % ..` cannot change the URL's shape), each `{{{path}}}` inserted raw.
 */
export function renderUrl(template: string, ctx: RenderContext): RenderedUrl {
  let out = '';
  let last = 0;
  for (const m of template.matchAll(URL_PLACEHOLDER)) {
    out += template.slice(last, m.index);
    last = m.index + m[0].length;
    const raw = m[1] !== undefined;
    const path = (raw ? m[1] : m[2]) ?? '';
    const value = path === '' ? '' : asText(lookup(path, ctx));
    out += raw ? value : encodeComponent(value);
  }
  out += template.slice(last);
  const head = /^(https?:\/\/[^/?#{}]*)(?=[/?#]|$)/i.exec(template);
  return { url: out, literalOrigin: head ? head[1] : null };
}

/**
 * The request target (path and query, no fragment) as rendered, so an encoded `%2E%2E` is not
 * resolved away; the parsed URL's when the rendered text does not start plainly `scheme://host`.
 */
function requestTarget(rendered: string, url: URL): string {
  const head = /^https?:\/\/[^/?#\\]*/i.exec(rendered);
  if (head === null) return `${url.pathname}${url.search}`;
  let target = rendered.slice(head[0].length);
  const hash = target.indexOf('#');
  if (hash !== -1) target = target.slice(0, hash);
  if (!target.startsWith('/')) target = `/${target}`;
  return wellFormed(target).replace(UNSAFE_IN_TARGET, (c) => encodeURIComponent(c));
}

/** A rendered header value that would split the request (CR, LF or NUL): its name, else null. */
const badHeader = (headers: Record<string, string>): string | null =>
  Object.entries(headers).find(([, v]) => /[\r\n\0]/.test(v))?.[0] ?? null;

/** `hop`: the execution's hop + 1, sent as Chasqui-Hop (loops.ts); the author's headers cannot set it. */
export async function httpStep(s: Services, agent: Agent, step: HttpStep, ctx: RenderContext, hop: number): Promise<HttpStepResult> {
  const timeoutMs = step.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const rendered = renderUrl(step.url, ctx);
  let url: URL;
  try {
    url = new URL(rendered.url);
  } catch {
    return failed(step, httpStepReasons.url);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return failed(step, httpStepReasons.url);
  if (rendered.literalOrigin !== null && new URL(rendered.literalOrigin).origin !== url.origin) return failed(step, httpStepReasons.origin);
  if (!s.config.allowPrivateWebhooks && isPrivateLiteral(url)) return failed(step, httpStepReasons.refused);

  const headers: Record<string, string> = {};
  // Header values are sealed at rest (secrets/steps.ts): opened here, for this request only.
  for (const [k, v] of Object.entries(step.headers ?? {})) {
    const opened = openOrNull(s.secrets, v, 'automations.steps.headers');
    if (opened === null) return failed(step, httpStepReasons.headerKeyMissing(k, sealedBy(v) ?? ''));
    headers[k.toLowerCase()] = renderText(opened, ctx);
  }
  let body: string | undefined;
  if (step.body !== undefined && step.method !== 'GET') {
    body = JSON.stringify(renderJson(step.body, ctx));
    headers['content-type'] ??= 'application/json';
  }
  headers['user-agent'] ??= 'Chasqui-Automations/1';
  headers[HOP_HEADER] = String(hop);
  const broken = badHeader(headers);
  if (broken !== null) return failed(step, httpStepReasons.headerLineBreak(broken));

  try {
    const res = await agent.request({
      origin: url.origin,
      path: requestTarget(rendered.url, url),
      method: step.method as 'GET',
      headers,
      ...(body !== undefined ? { body } : {}),
      signal: AbortSignal.timeout(timeoutMs),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const text = await readCapped(res.body as never);
    const ct = res.headers['content-type'];
    const parsed = parseBody(text, Array.isArray(ct) ? ct[0] : ct);
    if (res.statusCode >= 200 && res.statusCode < 300) return { ok: true, result: { status: res.statusCode, body: parsed }, error: '' };
    const loop = refusedHop(res.statusCode, res.headers);
    if (loop !== null) return failed(step, httpStepReasons.loop(loop, MAX_HOPS), res.statusCode, parsed);
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
