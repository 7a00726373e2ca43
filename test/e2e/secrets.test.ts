// Secrets sealed at rest (docs/privacy.md "Secrets sealed at rest"; spec privacy-security.md): every
// credential kind stored through the operator API, then the database's raw backup searched for
// each; restarts on the same data with the keyring kept, rotated and trimmed; a plain row of the
// previous version sealed by the start pass; a key gone from the ring named in the failure; and
// production without SECRETS_KEYS refused.
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { announceChange, EVERY_ACCOUNT } from '../../src/channel/hot-reads.js';
import { loadConfig } from '../../src/config.js';
import { startRuntime } from '../../src/runtime.js';
import { Keyring } from '../../src/secrets/keyring.js';
import { loadKeyring } from '../../src/secrets/load.js';
import { found, rawBackup } from '../dump.js';
import { cloudCredentials, type FakeGraph, startFakeGraph } from '../fakes/graph.js';
import { type Receiver, startReceiver } from '../fakes/receiver.js';
import { ADMIN_TOKEN, freshPhone, request, startTestApp, type TestApp } from '../harness.js';
import { until } from '../poll.js';
import { serverEnv, spawnServer } from '../server-process.js';

const onPostgres = !!process.env.DATABASE_URL;
const key = (id: string, fill: number) => `${id}:${Buffer.alloc(32, fill).toString('base64')}`;
const OLD = key('old', 1);
const NEW = key('new', 2);

const cleanup: (() => Promise<unknown>)[] = [];
let fake: FakeGraph;
let hooks: Receiver;
beforeAll(async () => {
  fake = await startFakeGraph();
  hooks = await startReceiver();
  cleanup.push(
    () => fake.close(),
    () => hooks.close(),
  );
});
afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
});

/** What the tests use of a process. */
type Proc = Pick<TestApp, 'url' | 'rt' | 'admin' | 'databaseUrl' | 'env'>;

/** A first process whose data outlives it: PostgreSQL (a fresh database), or PGlite in a file directory. */
async function firstProcess(env: Record<string, string>): Promise<TestApp> {
  const base = { GRAPH_API_URL: fake.url, CHANNEL_PROVIDER: 'cloud', ...env };
  if (onPostgres) {
    const app = await startTestApp({ env: base });
    cleanup.push(() => app.close());
    return app;
  }
  const dir = mkdtempSync(join(tmpdir(), 'chasqui-secrets-'));
  cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
  const app = await startTestApp({ env: { ...base, DATABASE_URL: `file://${dir}/pg`, DATA_DIR: dir } });
  cleanup.push(() => app.close());
  return app;
}

/** The process stops and a new one starts on the same data with `SECRETS_KEYS` (its workers on). */
async function restart(
  prev: Proc & { close(): Promise<void> },
  secretsKeys: string,
  logDestination?: Writable,
): Promise<Proc & { close(): Promise<void> }> {
  if (onPostgres) {
    // The next process joins the same database before the first leaves (the last one drops it).
    const { DATA_DIR: _dir, DATABASE_URL: _url, ...own } = prev.env;
    const next = await startTestApp({
      sameDataAs: prev as TestApp,
      // With a log destination, the lines from info up (the tests' default is silent).
      env: { ...own, SECRETS_KEYS: secretsKeys, ...(logDestination ? { LOG_LEVEL: 'info' } : {}) },
      ...(logDestination ? { logDestination } : {}),
    });
    cleanup.push(() => next.close());
    await prev.close();
    return next;
  }
  await prev.close();
  const env = { ...prev.env, SECRETS_KEYS: secretsKeys, ...(logDestination ? { LOG_LEVEL: 'info' } : {}) };
  const rt = await startRuntime(loadConfig(env), { usageFlushMs: 0, ...(logDestination ? { logDestination } : {}) });
  let closed = false;
  const close = async () => {
    if (!closed) await rt.close();
    closed = true;
  };
  cleanup.push(close);
  const url = (await rt.listen()).replace('[::1]', '127.0.0.1');
  return {
    url,
    rt,
    env,
    databaseUrl: prev.databaseUrl,
    admin: (method, path, body) => request(`${url}/admin/v1${path}`, method, body, { authorization: `Bearer ${ADMIN_TOKEN}` }),
    close,
  };
}

const digits = (n: number) => Array.from(randomBytes(n), (b) => String(b % 10)).join('');
const sign = (raw: string, secret: string) => `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;

/** Every sealed column's values (and the sealed JSON places) as stored. */
async function storedValues(p: Proc): Promise<string[]> {
  const db = p.rt.services.db;
  const { rows } = await sql<{ v: string }>`
    SELECT v FROM (
      SELECT unnest(ARRAY[cloud_access_token, cloud_app_secret, cloud_verify_token]) AS v FROM phone_numbers
      UNION ALL SELECT unnest(ARRAY[access_token, app_secret, verify_token]) FROM social_accounts
      UNION ALL SELECT unnest(ARRAY[secret, previous_secret]) FROM webhooks
      UNION ALL SELECT webhook_token FROM automations
      UNION ALL SELECT h.value FROM automations, jsonb_array_elements(steps) s, jsonb_each_text(s.value->'headers') h
      UNION ALL SELECT value #>> '{}' FROM oauth_keys
    ) x WHERE v IS NOT NULL`.execute(db);
  return rows.map((r) => r.v);
}

describe('secrets sealed at rest (privacy-security.md "Secrets at rest")', () => {
  it('"Nothing in a database dump or backup reveals a secret"; after a restart with the same keyring the Cloud send carries the token and deliveries verify; rotation re-seals everything and the old key can go', async () => {
    let app: Proc & { close(): Promise<void> } = await firstProcess({ SECRETS_KEYS: OLD, WEBHOOK_RETRY_SCHEDULE: '1,1,1' });
    const acc = (await app.admin('POST', '/accounts', { name: 'Tienda sellada', plan: 'escala' })).body;
    const apiKey = (await app.admin('POST', `/accounts/${acc.id}/keys`, { name: 'k' })).body.key as string;

    // A Cloud number: token, app secret, verify token.
    const cloud = cloudCredentials();
    const phone = freshPhone({ spelling: 'digits' });
    const number = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone, name: 'WhatsApp', provider: 'cloud', cloud });
    expect(number.status, JSON.stringify(number.body)).toBe(201);
    fake.tokens.set(cloud.phoneNumberId, cloud.accessToken);

    // An Instagram account.
    const ig = {
      igUserId: digits(17),
      accessToken: `IGQ${randomBytes(20).toString('base64url')}`,
      appSecret: randomBytes(16).toString('hex'),
      verifyToken: `ivt-${digits(10)}`,
    };
    const social = await app.admin('POST', `/accounts/${acc.id}/social-accounts`, {
      name: 'Instagram',
      provider: 'instagram',
      instagram: ig,
    });
    expect(social.status, JSON.stringify(social.body)).toBe(201);

    // A webhook, its secret rotated so the previous one is kept.
    const wh = await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url: `${hooks.url}/events`, events: ['message.received'] });
    expect(wh.status).toBe(201);
    const rotated = await app.admin('POST', `/accounts/${acc.id}/webhooks/${wh.body.id}/rotate-secret`);
    expect(rotated.status).toBe(200);

    // An automation with an http step carrying a bearer token, and an incoming webhook.
    const bearer = `Bearer tienda-${randomBytes(12).toString('hex')}`;
    const flow = await app.admin('POST', `/accounts/${acc.id}/automations`, {
      name: 'Pedido',
      status: 'active',
      trigger: { type: 'webhook' },
      steps: [{ id: 'crm', type: 'http', method: 'POST', url: `${hooks.url}/crm`, headers: { Authorization: bearer }, body: { a: 1 } }],
    });
    expect(flow.status, JSON.stringify(flow.body)).toBe(201);
    // The operator's editor shows the flow as written (docs/automations.md).
    expect(flow.body.steps[0].headers).toEqual({ Authorization: bearer });
    const hookToken = String(flow.body.webhookUrl).split('/').at(-1)!;

    // OAuth: a client registered makes the server's signing and cookie keys.
    const reg = await fetch(`${app.url}/oauth/reg`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Claude',
        redirect_uris: ['http://127.0.0.1:33418/callback'],
        token_endpoint_auth_method: 'none',
      }),
    });
    expect(reg.status).toBe(201);
    const ring = app.rt.services.secrets;
    const oauthKeys = await sql<{ name: string; value: string }>`SELECT name, value FROM oauth_keys ORDER BY name`.execute(
      app.rt.services.db,
    );
    expect(oauthKeys.rows.map((r) => r.name)).toEqual(['cookies', 'jwks']);
    const opened = Object.fromEntries(oauthKeys.rows.map((r) => [r.name, JSON.parse(ring.open(r.value, 'oauth_keys.value'))]));
    const oauthSecrets = [opened.jwks.d as string, ...(opened.cookies as string[])];

    const secrets = [
      cloud.accessToken,
      cloud.appSecret,
      cloud.verifyToken,
      ig.accessToken,
      ig.appSecret,
      ig.verifyToken,
      wh.body.secret,
      rotated.body.secret,
      bearer.slice('Bearer '.length),
      hookToken,
      ...oauthSecrets,
    ];
    expect(found(await rawBackup(app as TestApp), secrets)).toEqual([]);
    expect((await storedValues(app)).every((v) => v.startsWith('sealed:v1:old:'))).toBe(true);

    // The verify tokens still answer Meta's handshake; the incoming webhook URL still opens its automation.
    const hs = await request(
      `${app.url}/channels/whatsapp/webhook?hub.mode=subscribe&hub.verify_token=${cloud.verifyToken}&hub.challenge=42`,
      'GET',
    );
    expect(hs.status).toBe(200);
    expect(
      (await request(`${app.url}/hooks/automations/${hookToken}`, 'POST', { phone: `+${freshPhone({ spelling: 'digits' })}` })).status,
    ).toBeLessThan(300);
    // …and its http step sends the header opened.
    const crm = await until(() => hooks.received.find((r) => r.path === '/crm'));
    expect(crm.headers.authorization).toBe(bearer);

    // A row as the version before sealing wrote it: plain, readable until the start pass seals it.
    const plainSecret = `whsec_${randomBytes(24).toString('base64')}`;
    await sql`UPDATE webhooks SET secret = ${plainSecret}, previous_secret = NULL WHERE id = ${wh.body.id}`.execute(app.rt.services.db);

    // Restart with a new first key and the old one kept: the start pass seals the plain row.
    app = await restart(app, `${NEW},${OLD}`);
    const afterStart = await storedValues(app);
    expect(afterStart.some((v) => !v.startsWith('sealed:v1:'))).toBe(false);
    expect(afterStart.filter((v) => v.startsWith('sealed:v1:new:'))).toHaveLength(1);

    // "`npx chasqui secrets rotate` re-seals everything with the first key."
    const rot = await app.admin('POST', '/secrets/rotate');
    expect(rot.status, JSON.stringify(rot.body)).toBe(200);
    expect(rot.body).toEqual({ resealed: afterStart.length - 1, keyId: 'new', missingKeyIds: [] });
    expect((await storedValues(app)).every((v) => v.startsWith('sealed:v1:new:'))).toBe(true);
    const line = await app.rt.services.db.selectFrom('audit_log').selectAll().where('action', '=', 'secrets.rotated').execute();
    expect(line).toMatchObject([{ account_id: null, actor_type: 'operator', target_id: 'new' }]);
    expect((await app.admin('POST', '/secrets/rotate')).body.resealed).toBe(0);

    // The old key goes: everything still opens.
    app = await restart(app, NEW);
    fake.reset();
    fake.tokens.set(cloud.phoneNumberId, cloud.accessToken);
    const from = freshPhone({ spelling: 'digits' });
    const payload = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: cloud.wabaId,
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: phone, phone_number_id: cloud.phoneNumberId },
                contacts: [{ profile: { name: 'Ana' }, wa_id: from }],
                messages: [
                  {
                    from,
                    id: `wamid.${randomBytes(8).toString('hex')}`,
                    timestamp: String(Math.floor(Date.now() / 1000)),
                    type: 'text',
                    text: { body: 'Hola' },
                  },
                ],
              },
            },
          ],
        },
      ],
    });
    const inbound = await request(`${app.url}/channels/whatsapp/webhook`, 'POST', payload, {
      'content-type': 'application/json',
      'x-hub-signature-256': sign(payload, cloud.appSecret),
    });
    expect(inbound.status).toBe(200);
    expect((await app.admin('POST', '/jobs/inbound/run')).status).toBe(200);
    const sent = await request(
      `${app.url}/api/v1/messages`,
      'POST',
      { to: `+${from}`, text: 'Hola, sí' },
      { authorization: `Bearer ${apiKey}` },
    );
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    expect(fake.sends().at(-1)!.headers.authorization).toBe(`Bearer ${cloud.accessToken}`);

    // The delivery of message.received is signed with the (plain-then-sealed) secret.
    const got = await until(() => hooks.received.find((r) => r.path === '/events'));
    const headers = {
      'webhook-id': String(got.headers['webhook-id']),
      'webhook-timestamp': String(got.headers['webhook-timestamp']),
      'webhook-signature': String(got.headers['webhook-signature']),
    };
    expect(new StandardWebhook(plainSecret).verify(got.body, headers)).toMatchObject({ event: 'message.received' });

    // "A value sealed by an unknown key is an error naming the key id, never a crash loop."
    const gone = new Keyring([{ id: 'gone', key: Buffer.alloc(32, 9) }]);
    await sql`UPDATE phone_numbers SET cloud_access_token = ${gone.seal(cloud.accessToken, 'phone_numbers.cloud_access_token')}
      WHERE id = ${number.body.id}`.execute(app.rt.services.db);
    // A number written by hand is announced like the services do, or sends keep the row they read (channel/hot-reads.ts).
    await announceChange(app.rt.services.db, EVERY_ACCOUNT);
    const refused = await request(
      `${app.url}/api/v1/messages`,
      'POST',
      { to: `+${from}`, text: 'Otra' },
      { authorization: `Bearer ${apiKey}` },
    );
    expect(refused.body.error).toContain('la clave "gone", que no está entre las claves con que arrancó el servidor');
    const failed = await request(`${app.url}/api/v1/messages/${refused.body.messageId}`, 'GET', undefined, {
      authorization: `Bearer ${apiKey}`,
    });
    expect(failed.body).toMatchObject({ status: 'failed', error: expect.stringContaining('"gone"') });
    // The next start says so at once, before anything needs the value.
    const logs: string[] = [];
    const logStream = new Writable({
      write(chunk, _encoding, done) {
        logs.push(String(chunk));
        done();
      },
    });
    app = await restart(app, NEW, logStream);
    const said = logs.map((l) => JSON.parse(l)).find((l) => l.missingKeyIds);
    expect(said).toMatchObject({ level: 50, missingKeyIds: ['gone'], keyIds: ['new'] });
    expect((await app.admin('POST', '/secrets/rotate')).body).toEqual({ resealed: 0, keyId: 'new', missingKeyIds: ['gone'] });
    await app.close();
    // Three restarts of the server on its data and a backup: 12 s on a quiet machine, over the
    // default 30 s when other test runs share the machine's two CPUs.
  }, 90_000);

  it('"a value sealed by an unknown key is an error naming the key id": a webhook attempt and an http step fail with it, the rest goes on', async () => {
    const app = await startTestApp();
    cleanup.push(() => app.close());
    const acc = await app.createAccount();
    const db = app.rt.services.db;
    const gone = new Keyring([{ id: 'gone', key: Buffer.alloc(32, 9) }]);

    const wh = await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url: `${hooks.url}/gone`, events: ['contact.created'] });
    expect(wh.status).toBe(201);
    await sql`UPDATE webhooks SET secret = ${gone.seal(wh.body.secret, 'webhooks.secret')} WHERE id = ${wh.body.id}`.execute(db);
    expect((await acc.call('POST', '/contacts', { phone: freshPhone() })).status).toBe(201);
    const attempt = await until(async () => {
      await app.admin('POST', '/jobs/webhooks/run');
      const [d] = (await app.admin('GET', `/accounts/${acc.id}/webhooks/${wh.body.id}/deliveries`)).body.data;
      if (!d) return undefined;
      return (await app.admin('GET', `/accounts/${acc.id}/webhooks/${wh.body.id}/deliveries/${d.id}`)).body.attemptLog[0];
    });
    expect(attempt.error).toContain('la clave "gone", que no está entre las claves con que arrancó el servidor');
    expect(hooks.received.some((r) => r.path === '/gone')).toBe(false);

    const flow = await app.admin('POST', `/accounts/${acc.id}/automations`, {
      name: 'CRM',
      status: 'active',
      trigger: { type: 'webhook' },
      steps: [{ id: 'crm', type: 'http', method: 'POST', url: `${hooks.url}/crm-gone`, headers: { 'X-Api-Key': 'clave-de-la-tienda' } }],
    });
    expect(flow.status).toBe(201);
    const sealedHeader = gone.seal('clave-de-la-tienda', 'automations.steps.headers');
    await sql`UPDATE automations SET steps = jsonb_set(steps, '{0,headers,X-Api-Key}', to_jsonb(${sealedHeader}::text))
      WHERE id = ${flow.body.id}`.execute(db);
    // The operator's view shows the value it cannot open as stored (sealed), never a 500.
    const shown = await app.admin('GET', `/accounts/${acc.id}/automations/${flow.body.id}`);
    expect(shown.status).toBe(200);
    expect(shown.body.steps[0].headers['X-Api-Key']).toBe(sealedHeader);
    const hook = await request(String(flow.body.webhookUrl), 'POST', { phone: `+${freshPhone({ spelling: 'digits' })}` });
    expect(hook.status).toBeLessThan(300);
    const failed = await until(async () => {
      await app.admin('POST', '/jobs/automations/run');
      const [e] = (await app.admin('GET', `/accounts/${acc.id}/automations/${flow.body.id}/executions`)).body.data;
      return e?.status === 'failed' ? e : undefined;
    });
    expect(failed.error).toContain('X-Api-Key');
    expect(failed.error).toContain('"gone"');
    expect(hooks.received.some((r) => r.path === '/crm-gone')).toBe(false);
  });

  it('without SECRETS_KEYS outside production the first start makes DATA_DIR/secrets-key (mode 0600) and a restart reuses it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chasqui-secrets-key-'));
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    const first = await startTestApp({ env: { SECRETS_KEYS: '', DATA_DIR: dir } });
    const file = join(dir, 'secrets-key');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const id = first.rt.services.secrets.sealingKeyId;
    const sealed = first.rt.services.secrets.seal('x', 'webhooks.secret');
    await first.close();
    const again = await startTestApp({ env: { SECRETS_KEYS: '', DATA_DIR: dir } });
    cleanup.push(() => again.close());
    expect(again.rt.services.secrets.sealingKeyId).toBe(id);
    expect(again.rt.services.secrets.open(sealed, 'webhooks.secret')).toBe('x');
    // The same data directory moved to production: refused, told to use that file's key, not a new one.
    expect(() => loadKeyring({ SECRETS_KEYS: undefined, NODE_ENV: 'production', DATA_DIR: dir })).toThrow(
      `Las credenciales de esta base ya están cifradas con la clave de ${file}`,
    );
  });

  it('"with NODE_ENV=production and no key, the server refuses to start with a Spanish message that says how to make one"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chasqui-secrets-prod-'));
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    const env = serverEnv({ DATA_DIR: dir, DATABASE_URL: '', REDIS_URL: '', NODE_ENV: 'production', SECRETS_KEYS: '' });
    const err = await spawnServer(env, (fn) => cleanup.push(fn)).then(
      () => null,
      (e: Error) => e.message,
    );
    expect(err).toContain('Falta SECRETS_KEYS');
    expect(err).toContain('openssl rand -base64 32');
    // A malformed keyring is refused with its Spanish reason, never echoing the key.
    // Each mistake says which part is wrong, by position; SECRETS_KEYS is named once.
    const key = randomBytes(32).toString('base64');
    const problem = (v: string) => {
      try {
        loadConfig({ SECRETS_KEYS: v });
        return null;
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(problem('k1:corta')).toMatch(/SECRETS_KEYS: la clave número 1 tiene 3 bytes y tiene que tener 32/);
    expect(problem(key)).toMatch(/SECRETS_KEYS: la clave número 1 no tiene id/);
    expect(problem(`k1:${key},k 2:${key}`)).toMatch(/SECRETS_KEYS: el id de la clave número 2 solo puede tener letras/);
    expect(problem(`k1:${randomBytes(32).toString('hex')}`)).toMatch(
      /la clave número 1 tiene 48 bytes|la clave número 1 no está en base64/,
    );
    expect(problem(`k1:${key},k1:${key}`)).toMatch(/SECRETS_KEYS: repite el id de clave "k1"/);
    for (const v of ['k1:corta', key, `k1:${randomBytes(32).toString('hex')}`]) expect(problem(v)).not.toContain(v.split(':').pop()!);
    expect(problem(`k1:${key},`)).toBeNull();
    expect(problem(`k2:${key}, k1:${key}`)).toBeNull();
  });
});
