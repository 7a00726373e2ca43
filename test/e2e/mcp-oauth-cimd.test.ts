// "Client ID Metadata Documents (a client_id that is an https URL whose JSON names the client;
// fetched through the same SSRF guard as webhooks, cached)" (docs/mcp.md "With OAuth"): a client
// that never registers. The document is served over https by a local server whose certificate the
// Chasqui process trusts (NODE_EXTRA_CA_CERTS, as an operator trusts an internal CA).
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, request } from '../harness.js';
import { serverEnv, spawnServer } from '../server-process.js';

const cleanup: (() => Promise<void> | void)[] = [];
let dir = '';
let documents: Server;
let clientId = '';
const REDIRECT = 'http://127.0.0.1:33419/callback';
const haveOpenssl = (() => {
  try {
    execFileSync('openssl', ['version']);
    return true;
  } catch {
    return false;
  }
})();

beforeAll(async () => {
  if (!haveOpenssl) return;
  dir = mkdtempSync(join(tmpdir(), 'chasqui-cimd-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  documents = createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (req, res) => {
    if (req.url !== '/oauth/client.json') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' }).end(
      JSON.stringify({
        client_id: clientId,
        client_name: 'Asistente por documento',
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }),
    );
  });
  await new Promise<void>((r) => documents.listen(0, '127.0.0.1', r));
  clientId = `https://127.0.0.1:${(documents.address() as AddressInfo).port}/oauth/client.json`;
  cleanup.push(() => new Promise<void>((r) => documents.close(() => r())));
});
afterAll(async () => {
  for (const fn of cleanup.reverse()) await fn();
});

/** A Chasqui process on PGlite in its own data dir that trusts the documents' certificate. */
async function chasqui(own: Record<string, string> = {}): Promise<string> {
  const data = mkdtempSync(join(tmpdir(), 'chasqui-cimd-data-'));
  cleanup.push(() => rmSync(data, { recursive: true, force: true }));
  const { url } = await spawnServer(
    serverEnv({ DATA_DIR: data, DATABASE_URL: '', REDIS_URL: '', NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem'), ...own }),
    (fn) => cleanup.push(fn),
  );
  return url;
}

const admin = (url: string, method: string, path: string, body?: unknown) =>
  request(`${url}/admin/v1${path}`, method, body, { authorization: `Bearer ${ADMIN_TOKEN}` });

const authorizeUrl = (url: string, verifier: string) =>
  `${url}/oauth/auth?${new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    resource: `${url}/mcp`,
    scope: 'mcp',
  })}`;

describe.skipIf(!haveOpenssl)('Client ID Metadata Documents', () => {
  it('the metadata says so; a client named by its https document URL is consented, gets a code, a token, and /mcp answers it', async () => {
    const url = await chasqui();
    const meta = (await (await fetch(`${url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(meta.client_id_metadata_document_supported).toBe(true);

    const acc = await admin(url, 'POST', '/accounts', { name: 'Librería Sur', plan: 'escala' });
    expect(acc.status).toBe(201);
    const member = { email: `duena-${Date.now()}@example.com`, name: 'Sara Dueña', role: 'owner', password: 'una clave larga de la dueña' };
    expect((await admin(url, 'POST', `/accounts/${acc.body.id}/members`, member)).status).toBe(201);
    const login = await fetch(`${url}/console/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: member.email, password: member.password }),
    });
    const cookies = new Map<string, string>();
    const keep = (r: Response) => {
      for (const c of r.headers.getSetCookie()) {
        const pair = c.split(';')[0]!;
        cookies.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1));
      }
    };
    const jar = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    keep(login);
    const { csrf } = (await (await fetch(`${url}/console/api/me`, { headers: { cookie: jar() } })).json()) as { csrf: string };

    const verifier = randomBytes(32).toString('base64url');
    const start = await fetch(authorizeUrl(url, verifier), { redirect: 'manual', headers: { cookie: jar() } });
    keep(start);
    expect(start.status, await start.clone().text()).toBe(303);
    const consent = new URL(start.headers.get('location')!, url).pathname;
    const data = (await (await fetch(`${url}${consent}/datos`, { headers: { cookie: jar() } })).json()) as Record<string, any>;
    expect(data.client).toMatchObject({ id: clientId, name: 'Asistente por documento' });
    const decided = await fetch(`${url}${consent}/decision`, {
      method: 'POST',
      headers: { cookie: jar(), 'content-type': 'application/json', 'x-chasqui-csrf': csrf },
      body: JSON.stringify({ allow: true }),
    });
    keep(decided);
    const { redirectTo } = (await decided.json()) as { redirectTo: string };
    const resumed = await fetch(redirectTo, { redirect: 'manual', headers: { cookie: jar() } });
    const code = new URL(resumed.headers.get('location')!).searchParams.get('code');
    expect(code).toBeTruthy();
    const token = await fetch(`${url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: code!,
        code_verifier: verifier,
        redirect_uri: REDIRECT,
        client_id: clientId,
      }),
    });
    const tokens = (await token.json()) as Record<string, string>;
    expect(token.status, JSON.stringify(tokens)).toBe(200);
    const list = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokens.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(list.status).toBe(200);
    const apps = await admin(url, 'GET', `/accounts/${acc.body.id}/ai-apps`);
    expect(apps.body.data).toEqual([expect.objectContaining({ name: 'Asistente por documento', oauthClientId: clientId })]);
  }, 120_000);

  it('"fetched through the same SSRF guard as webhooks": where private addresses are refused, a document on 127.0.0.1 is never fetched', async () => {
    const url = await chasqui({ ALLOW_PRIVATE_WEBHOOKS: 'off' });
    const start = await fetch(authorizeUrl(url, randomBytes(32).toString('base64url')), { redirect: 'manual' });
    expect(start.status).toBe(400);
    expect(start.headers.get('location')).toBeNull();
    const page = await start.text();
    // The person reads Spanish; the library's English detail stays below it for support.
    expect(page).toContain('No se pudo conectar la app');
    expect(page).toContain('No reconocemos la app que querías conectar: su registro no existe, venció o no se pudo leer.');
    expect(page).toContain('Detalle técnico: invalid_client: client_id metadata document fetch not allowed');
  }, 120_000);
});
