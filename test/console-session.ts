// A console member in tests: logs in over HTTP, keeps the session cookie and the CSRF token of
// GET /console/api/me, and calls the operator account routes with them (docs/console.md).
import { type Res, request, type TestApp } from './harness.js';

export interface Member {
  id: string;
  email: string;
  password: string;
}

let seq = 0;
export const freshEmail = (tag = 'm'): string => `${tag}-${Date.now().toString(36)}-${++seq}@Example.com`;
export const PASSWORD = 'una-clave-larga-123';

/** Adds a member with a password through the operator API (active at once). */
export async function addMember(app: TestApp, accountId: string, role: string, email = freshEmail(role)): Promise<Member> {
  const res = await app.admin('POST', `/accounts/${accountId}/members`, { email, name: `Persona ${role}`, role, password: PASSWORD });
  if (res.status !== 201) throw new Error(`add member: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.member.id, email, password: PASSWORD };
}

export const login = (app: TestApp, email: string, password: string): Promise<Res> =>
  request(`${app.url}/console/api/login`, 'POST', { email, password });

export const cookieOf = (res: Res): string => (res.headers.get('set-cookie') ?? '').split(';')[0];

export interface Console {
  cookie: string;
  csrf: string;
  /** /admin/v1 + path with the cookie; `csrf: false` leaves the header out. */
  call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    opts?: { csrf?: string | false; headers?: Record<string, string> },
  ): Promise<Res<T>>;
  me(): Promise<Res>;
}

export async function signIn(app: TestApp, m: Member): Promise<Console> {
  const res = await login(app, m.email, m.password);
  if (res.status !== 204) throw new Error(`login: ${res.status} ${JSON.stringify(res.body)}`);
  const cookie = cookieOf(res);
  const me = () => request(`${app.url}/console/api/me`, 'GET', undefined, { cookie });
  const csrf = (await me()).body.csrf as string;
  return {
    cookie,
    csrf,
    me,
    call: (method, path, body, opts = {}) => {
      const token = opts.csrf === undefined ? csrf : opts.csrf;
      return request(`${app.url}/admin/v1${path}`, method, body, {
        cookie,
        ...(token ? { 'x-chasqui-csrf': token } : {}),
        ...opts.headers,
      });
    },
  };
}
