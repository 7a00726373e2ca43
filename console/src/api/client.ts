// The console's only fetch(): same-origin cookie, X-Chasqui-CSRF on writes, and our error shape
// (`{error: "texto"}`, or a 400's `{error: {message: "<JSON of [{path, message}]>"}}`) turned into
// an ApiError whose text is the server's, verbatim. A session that ends while a page is open (it
// expired, the member logged out in another tab, was disabled or removed) sends the member to the
// login, which brings them back to where they were.
import { BASE, navigate } from '../router';
import { texts } from '../texts';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** A 400's problems by path (`password`, `attributes.2.value`); what matches no field stays in `message`. */
    readonly fields: Record<string, string> = {},
    /** Seconds, from Retry-After (429). */
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }
}

let csrf = '';
/** The token GET /console/api/me returns; sent on every state change. */
export function setCsrf(token: string): void {
  csrf = token;
}

interface Problem {
  path: (string | number)[];
  message: string;
}

function errorOf(status: number, body: unknown, retryAfter: string | null): ApiError {
  const seconds = retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) : null;
  const error = (body as { error?: unknown } | null)?.error;
  if (typeof error === 'string') return new ApiError(status, error, {}, seconds);
  if (error && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') {
    const text = (error as { message: string }).message;
    try {
      const problems = JSON.parse(text) as Problem[];
      const fields: Record<string, string> = {};
      for (const p of problems) fields[p.path.join('.')] = p.message;
      return new ApiError(status, problems.map((p) => p.message).join(' '), fields, seconds);
    } catch {
      return new ApiError(status, text, {}, seconds);
    }
  }
  return new ApiError(status, status >= 500 ? texts.serverError : texts.unexpected(status), {}, seconds);
}

/**
 * Calls our API; resolves with the JSON body (undefined for 204), rejects with ApiError. The body
 * is sent as JSON, or as it is with `contentType` (a CSV file: a File and 'text/csv').
 */
export async function call<T = unknown>(method: string, path: string, body?: unknown, contentType?: string): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = contentType ?? 'application/json';
  if (method !== 'GET' && method !== 'HEAD' && csrf) headers['x-chasqui-csrf'] = csrf;
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : contentType ? (body as BodyInit) : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, texts.offline);
  }
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (res.status === 401 && path.startsWith('/admin/v1/')) sessionLost();
  if (!res.ok) throw errorOf(res.status, parsed, res.headers.get('retry-after'));
  return parsed as T;
}

/**
 * An account route (what every signed-in page calls) answered 401: the session is gone. The login
 * and the consent page handle their own 401s; this is for a page left open.
 */
function sessionLost(): void {
  const here = location.pathname;
  if (here === `${BASE}/login`) return;
  navigate(`${BASE}/login?aviso=sesion-vencida&siguiente=${encodeURIComponent(here)}`, true);
}
