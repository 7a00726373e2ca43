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
async function authorize(member: Console, clientId: string, extra: Record<string, string> = {}) {
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
  it('a member consents; the app gets a token that works on /mcp; the revocation endpoint refuses it at once', async () => {
    const acc = await app.createAccount();
    const member = await signIn(app, await addMember(app, acc.id, 'owner'));
    const clientId = await register('Claude');
    const { start, jar, verifier } = await authorize(member, clientId);
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
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: code!,
        code_verifier: verifier,
        redirect_uri: REDIRECT,
        client_id: clientId,
        resource: `${app.url}/mcp`,
      }),
    });
    const tokens = (await token.json()) as Record<string, any>;
    expect(token.status, JSON.stringify(tokens)).toBe(200);
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'mcp' });
    expect(tokens.refresh_token).toEqual(expect.any(String));

    const list = await fetch(`${app.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokens.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(list.status, await list.clone().text()).toBe(200);

    // "revocation": the access token revoked at the revocation endpoint is refused at once.
    const revoked = await fetch(`${app.url}/oauth/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokens.access_token, token_type_hint: 'access_token', client_id: clientId }),
    });
    expect(revoked.status).toBe(200);
    const after = await fetch(`${app.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokens.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(after.status).toBe(401);
  });
});

/** The authorization server's redirect back to the client (an error, or a code), as a URL. */
const redirectOf = (res: Response): URL => new URL(res.headers.get('location') ?? '', app.url);

describe('"PKCE S256 required for every client" and "the RFC 8707 resource … required … must equal {PUBLIC_URL}/mcp"', () => {
  it('no code_challenge, a plain one, no resource or another resource: refused back to the client, no consent page', async () => {
    const acc = await app.createAccount();
    const member = await signIn(app, await addMember(app, acc.id, 'owner'));
    const clientId = await register('Cursor');
    const cases: [Record<string, string>, string][] = [
      [{ code_challenge: '' }, 'invalid_request'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ resource: '' }, 'invalid_target'],
      [{ resource: 'https://otro.example/mcp' }, 'invalid_target'],
    ];
    for (const [extra, error] of cases) {
      const { start } = await authorize(member, clientId, extra);
      const back = redirectOf(start);
      expect(`${back.origin}${back.pathname}`, JSON.stringify(extra)).toBe(REDIRECT);
      expect(back.searchParams.get('error'), JSON.stringify(extra)).toBe(error);
    }
  });
});

describe('"open dynamic registration … the same client registering again is fine … loopback http … or a private-use scheme"', () => {
  it('registers twice with the same metadata (two clients); a cursor:// redirect makes a native app; loopback http and https pages are fine; plain http elsewhere is refused', async () => {
    const a = await register('Claude');
    const b = await register('Claude');
    expect(a).not.toBe(b);
    const reg = async (redirect: string) => {
      const r = await fetch(`${app.url}/oauth/reg`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'X', redirect_uris: [redirect], token_endpoint_auth_method: 'none' }),
      });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    const cursor = await reg('cursor://anysphere.cursor-retrieval/oauth/callback');
    expect(cursor.status, JSON.stringify(cursor.body)).toBe(201);
    expect(cursor.body.application_type).toBe('native');
    const loopback = await reg('http://127.0.0.1:6274/oauth/callback');
    expect(loopback.status).toBe(201);
    const web = await reg('https://claude.ai/api/mcp/auth_callback');
    expect(web.status).toBe(201);
    expect(web.body.application_type).toBe('web');
    const plainHttp = await reg('http://example.com/callback');
    expect(plainHttp.status).toBe(400);
    expect(plainHttp.body).toMatchObject({
      error: 'invalid_redirect_uri',
      error_description: expect.stringMatching(/tiene que ser https/),
    });
  });
});

describe('consent: "an owner or admin consents; an agent sees `Tu rol no permite conectar apps.`"; the plan\'s maximum', () => {
  it('an agent gets allowed: false and a 403 on Permitir; at the maximum of apps the page says so and Permitir answers 402', async () => {
    const acc = await app.createAccount({ limits: { aiApps: 1 } });
    const agent = await signIn(app, await addMember(app, acc.id, 'agent'));
    const clientId = await register('ChatGPT');
    const asAgent = await authorize(agent, clientId);
    const path = redirectOf(asAgent.start).pathname;
    const seen = await fetch(`${app.url}${path}/datos`, { headers: { cookie: asAgent.jar.header } });
    expect(await seen.json()).toMatchObject({ allowed: false, atLimit: false });
    const refused = await fetch(`${app.url}${path}/decision`, {
      method: 'POST',
      headers: { cookie: asAgent.jar.header, 'content-type': 'application/json', 'x-chasqui-csrf': agent.csrf },
      body: JSON.stringify({ allow: true }),
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: string }).error).toMatch(/^Tu rol no permite conectar apps/);

    // The plan's one app is taken by an operator-connected one.
    expect((await app.admin('POST', `/accounts/${acc.id}/ai-apps`, { name: 'Otra app' })).status).toBe(201);
    const owner = await signIn(app, await addMember(app, acc.id, 'owner'));
    const asOwner = await authorize(owner, clientId);
    const ownerPath = redirectOf(asOwner.start).pathname;
    const info = await fetch(`${app.url}${ownerPath}/datos`, { headers: { cookie: asOwner.jar.header } });
    expect(await info.json()).toMatchObject({ allowed: true, atLimit: true, limit: 1 });
    const full = await fetch(`${app.url}${ownerPath}/decision`, {
      method: 'POST',
      headers: { cookie: asOwner.jar.header, 'content-type': 'application/json', 'x-chasqui-csrf': owner.csrf },
      body: JSON.stringify({ allow: true }),
    });
    expect(full.status).toBe(402);
    // Without the CSRF header the decision is refused like every console write.
    const noCsrf = await fetch(`${app.url}${ownerPath}/decision`, {
      method: 'POST',
      headers: { cookie: asOwner.jar.header, 'content-type': 'application/json' },
      body: JSON.stringify({ allow: false }),
    });
    expect(noCsrf.status).toBe(403);
  });
});

describe('"open dynamic registration (… rate limited per IP …)"', () => {
  it('the 31st registration from one IP in an hour → 429 with Retry-After and a Spanish text', async () => {
    const limited = await startTestApp();
    try {
      const one = () =>
        fetch(`${limited.url}/oauth/reg`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_name: 'Bot', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
        });
      for (let i = 0; i < 30; i++) expect((await one()).status).toBe(201);
      const over = await one();
      expect(over.status).toBe(429);
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await over.json()) as { error: string }).error).toMatch(/^Demasiadas apps registradas/);
    } finally {
      await limited.close();
    }
  });
});

describe('"Stored state … survives restarts and is shared by processes"', () => {
  const shared = Boolean(process.env.DATABASE_URL);

  it.skipIf(!shared)(
    'consent on one process, the code exchanged on a second after the first stopped, the token used on a third',
    async () => {
      const first = await startTestApp({ sameDataAs: app });
      const acc = await first.createAccount();
      const member = await signIn(first, await addMember(first, acc.id, 'owner'));
      const reg = await fetch(`${first.url}/oauth/reg`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Claude', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
      });
      const clientId = ((await reg.json()) as { client_id: string }).client_id;
      const verifier = b64url(randomBytes(32));
      const q = new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT,
        code_challenge: b64url(createHash('sha256').update(verifier).digest()),
        code_challenge_method: 'S256',
        resource: `${first.url}/mcp`,
        scope: 'mcp',
      });
      const jar = new Jar(member.cookie);
      const start = await fetch(`${first.url}/oauth/auth?${q}`, { redirect: 'manual', headers: { cookie: jar.header } });
      jar.take(start);
      const path = new URL(start.headers.get('location')!, first.url).pathname;
      const decided = await fetch(`${first.url}${path}/decision`, {
        method: 'POST',
        headers: { cookie: jar.header, 'content-type': 'application/json', 'x-chasqui-csrf': member.csrf },
        body: JSON.stringify({ allow: true }),
      });
      jar.take(decided);
      const { redirectTo } = (await decided.json()) as { redirectTo: string };
      const resumed = await fetch(redirectTo, { redirect: 'manual', headers: { cookie: jar.header } });
      const code = new URL(resumed.headers.get('location')!).searchParams.get('code')!;
      expect(code).toBeTruthy();
      const publicUrl = first.url;
      await first.close();

      // The second and third processes answer at the first one's public URL (its issuer and resource).
      const second = await startTestApp({ sameDataAs: app, env: { PUBLIC_URL: publicUrl } });
      const third = await startTestApp({ sameDataAs: app, env: { PUBLIC_URL: publicUrl } });
      try {
        const token = await fetch(`${second.url}/oauth/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            code,
            code_verifier: verifier,
            redirect_uri: REDIRECT,
            client_id: clientId,
          }),
        });
        const tokens = (await token.json()) as Record<string, string>;
        expect(token.status, JSON.stringify(tokens)).toBe(200);
        const list = await fetch(`${third.url}/mcp`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${tokens.access_token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            host: new URL(publicUrl).host,
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        });
        expect(list.status, await list.clone().text()).toBe(200);
      } finally {
        await second.close();
        await third.close();
      }
    },
  );
});
