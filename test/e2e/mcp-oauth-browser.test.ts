// "Outside judge: the official MCP SDK client's OAuth flow end to end" (docs/mcp.md "Connecting
// with OAuth"): the SDK discovers everything from the 401, registers itself, sends the person to
// our authorize endpoint; in Chromium the person logs in to the console and presses `Permitir`
// (or `Cancelar`); the SDK exchanges the code and calls tools; refresh, revocation by
// disconnecting, and the refusals around them.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Client,
  discoverAuthorizationServerMetadata,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthTokens,
  refreshAuthorization,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMemberFor, haveBrowser, launchBrowser, openPage, SHOTS } from '../console.js';
import { startTestApp, type TestApp } from '../harness.js';

let app: TestApp;
let browser: Browser;
/** The AI app's own callback page: where the authorization server sends the browser back. */
let callback: Server;
let callbackUrl = '';
const arrived: URL[] = [];

beforeAll(async () => {
  app = await startTestApp();
  if (haveBrowser) browser = await launchBrowser();
  callback = createServer((req, res) => {
    const url = new URL(req.url ?? '/', callbackUrl);
    if (url.pathname === '/callback') arrived.push(url);
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end('<!doctype html><title>Listo</title><p>Podés volver a la app.</p>');
  });
  await new Promise<void>((r) => callback.listen(0, '127.0.0.1', r));
  callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
});
afterAll(async () => {
  await browser?.close();
  callback?.close();
  await app?.close();
});

/** What an AI app keeps: its registration, tokens, PKCE verifier; and where it sent the person. */
class AppSide implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  constructor(private readonly name: string) {}
  get redirectUrl() {
    return callbackUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [callbackUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

const mcpUrl = () => new URL(`${app.url}/mcp`);

/** Connects the SDK client: the first try is refused (401) and leaves the authorization URL. */
async function startConnecting(side: AppSide): Promise<StreamableHTTPClientTransport> {
  const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: side });
  const client = new Client({ name: side.clientMetadata.client_name ?? 'app', version: '1.0.0' });
  await expect(client.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
  expect(side.authorizationUrl).toBeDefined();
  return transport;
}

async function connected(side: AppSide): Promise<Client> {
  const client = new Client({ name: 'app', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: side }));
  return client;
}

describe.skipIf(!haveBrowser)('the official MCP SDK client and a person in Chromium', () => {
  it('401 → discovery → registration → login and `Permitir` → code → tools; refresh rotates (the old one refused); disconnecting revokes at once', async () => {
    const acc = await app.createAccount({ name: 'Zapatería Ana' });
    const owner = await addMemberFor(app, acc.id, 'owner', 'Ana Dueña');
    const side = new AppSide('Claude');
    const transport = await startConnecting(side);
    const auth = side.authorizationUrl!;
    expect(`${auth.origin}${auth.pathname}`).toBe(`${app.url}/oauth/auth`);
    expect(auth.searchParams.get('resource')).toBe(`${app.url}/mcp`);
    expect(auth.searchParams.get('code_challenge_method')).toBe('S256');

    const { page, errors } = await openPage(browser);
    await page.goto(auth.href);
    // No session yet: the console's login, which comes back to the consent.
    await page.getByLabel('Email', { exact: true }).fill(owner.email);
    await page.getByLabel('Contraseña', { exact: true }).fill(owner.password);
    await page.getByRole('button', { name: 'Ingresar' }).click();
    await page.getByRole('heading', { level: 1, name: 'Conectar Claude a Zapatería Ana' }).waitFor();
    await page.screenshot({ path: `${SHOTS}/console-connect-1280.png` });
    arrived.length = 0;
    await page.getByRole('button', { name: 'Permitir' }).click();
    await page.waitForURL((u) => u.href.startsWith(callbackUrl));
    const back = arrived.at(-1)!;
    expect(back.searchParams.get('code'), back.href).toBeTruthy();
    await transport.finishAuth(back.searchParams);
    expect(side.saved).toMatchObject({ token_type: expect.stringMatching(/bearer/i), expires_in: 3600 });

    const client = await connected(side);
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('get_account');
    const called = await client.callTool({ name: 'get_account', arguments: {} });
    expect(JSON.stringify(called.content)).toContain('Zapatería Ana');
    await client.close();

    // The consent made a connected app, listed with how it connected.
    const apps = await app.admin('GET', `/accounts/${acc.id}/ai-apps`);
    const connectedApp = apps.body.data.find((a: { oauthClientId: string | null }) => a.oauthClientId === side.info?.client_id);
    expect(connectedApp).toMatchObject({ name: 'Claude', prefix: null });

    // Refresh: a new pair; the old refresh token is then refused.
    const metadata = await discoverAuthorizationServerMetadata(app.url);
    expect(metadata?.token_endpoint).toBe(`${app.url}/oauth/token`);
    const old = side.saved!;
    const fresh = await refreshAuthorization(app.url, {
      metadata,
      clientInformation: side.info!,
      refreshToken: old.refresh_token!,
      resource: mcpUrl(),
    });
    expect(fresh.refresh_token).toBeTruthy();
    expect(fresh.refresh_token).not.toBe(old.refresh_token);
    await expect(
      refreshAuthorization(app.url, { metadata, clientInformation: side.info!, refreshToken: old.refresh_token!, resource: mcpUrl() }),
    ).rejects.toThrow();
    side.saveTokens(fresh);

    // Disconnecting the app: its access token is refused at once, its refresh token too.
    expect((await app.admin('DELETE', `/accounts/${acc.id}/ai-apps/${connectedApp.id}`)).status).toBe(204);
    const refused = await fetch(mcpUrl(), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${fresh.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(refused.status).toBe(401);
    await expect(
      refreshAuthorization(app.url, { metadata, clientInformation: side.info!, refreshToken: fresh.refresh_token!, resource: mcpUrl() }),
    ).rejects.toThrow();
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('`Cancelar` sends the app `access_denied`; an agent is told their role cannot connect apps', async () => {
    const acc = await app.createAccount({ name: 'Óptica Sur' });
    const owner = await addMemberFor(app, acc.id, 'owner', 'Olga Dueña');
    const agent = await addMemberFor(app, acc.id, 'agent', 'Beto Agente');

    const side = new AppSide('ChatGPT');
    await startConnecting(side);
    const first = await openPage(browser);
    await first.page.goto(side.authorizationUrl!.href);
    await first.page.getByLabel('Email', { exact: true }).fill(owner.email);
    await first.page.getByLabel('Contraseña', { exact: true }).fill(owner.password);
    await first.page.getByRole('button', { name: 'Ingresar' }).click();
    await first.page.getByRole('heading', { level: 1, name: 'Conectar ChatGPT a Óptica Sur' }).waitFor();
    arrived.length = 0;
    await first.page.getByRole('button', { name: 'Cancelar' }).click();
    await first.page.waitForURL((u) => u.href.startsWith(callbackUrl));
    expect(arrived.at(-1)?.searchParams.get('error')).toBe('access_denied');
    await first.page.close();

    const other = new AppSide('Cursor');
    await startConnecting(other);
    const second = await openPage(browser, 360);
    await second.page.goto(other.authorizationUrl!.href);
    await second.page.getByLabel('Email', { exact: true }).fill(agent.email);
    await second.page.getByLabel('Contraseña', { exact: true }).fill(agent.password);
    await second.page.getByRole('button', { name: 'Ingresar' }).click();
    await second.page.getByRole('heading', { level: 1, name: 'Conectar Cursor a Óptica Sur' }).waitFor();
    await second.page.getByText('Tu rol no permite conectar apps.').waitFor();
    expect(await second.page.getByRole('button', { name: 'Permitir' }).count()).toBe(0);
    await second.page.screenshot({ path: `${SHOTS}/console-connect-agent-360.png` });
    await second.page.close();
  }, 60_000);
});
