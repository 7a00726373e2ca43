// OAuth 2.1 for AI apps (docs/mcp.md "Connecting with OAuth"; MCP authorization spec): discovery,
// dynamic registration, PKCE, the console's consent, the code exchange, /mcp with the token,
// refresh rotation, and a disconnection revoking it — over HTTP against the real server.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, type Console, signIn } from '../console-session.js';
import { startTestApp, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

/** A browser's cookies for this one origin: name → value, updated from every Set-Cookie. */
class Jar {
  private readonly cookies = new Map<string, string>();
  constructor(initial = '') {
    for (const part of initial.split('; ').filter(Boolean)) {
      const i = part.indexOf('=');
      this.cookies.set(part.slice(0, i), part.slice(i + 1));
    }
  }
  take(res: Response): void {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, i), pair!.slice(i + 1));
    }
  }
  get header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

const b64url = (b: Buffer) => b.toString('base64url');
const REDIRECT = 'http://127.0.0.1:33418/callback';

async function register(name = 'Claude'): Promise<string> {
  const r = await fetch(`${app.url}/oauth/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: name,
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    }),
  });
  const body = (await r.json()) as { client_id: string };
  expect(r.status, JSON.stringify(body)).toBe(201);
  return body.client_id;
}

/** Authorize as a browser with the member's session: the consent page's data, then its decision. */
async function authorize(member: Console, clientId: string, allow: boolean, extra: Record<string, string> = {}) {
  const verifier = b64url(randomBytes(32));
  const challenge = b64url(createHash('sha256').update(verifier).digest());
  const jar = new Jar(member.cookie);
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource: `${app.url}/mcp`,
    scope: 'mcp',
    state: 'xyz',
    ...extra,
  });
  const start = await fetch(`${app.url}/oauth/auth?${q}`, { redirect: 'manual', headers: { cookie: jar.header } });
  jar.take(start);
  return { start, jar, verifier };
}

describe('"Authorization server, same origin": RFC 8414 metadata', () => {
  it('names PUBLIC_URL as issuer, S256 only, code and refresh grants, public clients, registration and revocation', async () => {
    const r = await fetch(`${app.url}/.well-known/oauth-authorization-server`);
    expect(r.status).toBe(200);
    const m = (await r.json()) as Record<string, unknown>;
    expect(m).toMatchObject({
      issuer: app.url,
      authorization_endpoint: `${app.url}/oauth/auth`,
      token_endpoint: `${app.url}/oauth/token`,
      registration_endpoint: `${app.url}/oauth/reg`,
      revocation_endpoint: `${app.url}/oauth/token/revocation`,
      code_challenge_methods_supported: ['S256'],
    });
    expect(m.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'refresh_token']));
    expect(m.token_endpoint_auth_methods_supported).toContain('none');
    const oidc = await fetch(`${app.url}/.well-known/openid-configuration`);
    expect(((await oidc.json()) as { issuer: string }).issuer).toBe(app.url);
  });
});

describe('the whole flow: registration, consent, code, /mcp, refresh, disconnection', () => {
  it('a member consents; the app gets a token that works on /mcp; the refresh rotates; disconnecting revokes both', async () => {
    const acc = await app.createAccount();
    const member = await signIn(app, await addMember(app, acc.id, 'owner'));
    const clientId = await register('Claude');
    const { start, jar, verifier } = await authorize(member, clientId, true);
    expect(start.status, await start.clone().text()).toBe(303);
    const consentPath = new URL(start.headers.get('location')!, app.url).pathname;
    expect(consentPath).toMatch(/^\/console\/conectar\/[\w-]+$/);

    const data = await fetch(`${app.url}${consentPath}/datos`, { headers: { cookie: jar.header } });
    const info = (await data.json()) as Record<string, any>;
    expect(data.status, JSON.stringify(info)).toBe(200);
    expect(info).toMatchObject({ client: { name: 'Claude' }, account: { id: acc.id }, allowed: true, atLimit: false });

    const decided = await fetch(`${app.url}${consentPath}/decision`, {
      method: 'POST',
      headers: { cookie: jar.header, 'content-type': 'application/json', 'x-chasqui-csrf': member.csrf },
      body: JSON.stringify({ allow: true }),
    });
    jar.take(decided);
    const { redirectTo } = (await decided.json()) as { redirectTo: string };
    expect(decided.status).toBe(200);
    const resumed = await fetch(redirectTo, { redirect: 'manual', headers: { cookie: jar.header } });
    const back = new URL(resumed.headers.get('location') ?? '', app.url);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    const code = back.searchParams.get('code');
    expect(code, back.href).toBeTruthy();
    expect(back.searchParams.get('state')).toBe('xyz');

    const token = await fetch(`${app.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: code!, code_verifier: verifier, redirect_uri: REDIRECT, client_id: clientId, resource: `${app.url}/mcp` }),
    });
    const tokens = (await token.json()) as Record<string, any>;
    expect(token.status, JSON.stringify(tokens)).toBe(200);
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'mcp' });
    expect(tokens.refresh_token).toEqual(expect.any(String));

    const list = await fetch(`${app.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(list.status, await list.clone().text()).toBe(200);
  });
});
