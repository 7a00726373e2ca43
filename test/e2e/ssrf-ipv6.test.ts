// The SSRF guard reads the IPv4 address inside IPv6 forms (docs/webhooks.md, last paragraph): local-use
// NAT64, IPv4-compatible and 6to4 addresses of the cloud metadata service are refused when a
// webhook is registered and when an attempt would connect, with ALLOW_PRIVATE_WEBHOOKS off.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPhone, startTestApp, storeWebhookUnchecked, type TestAccount, type TestApp } from '../harness.js';

const FORMS = ['http://[64:ff9b:1::a9fe:a9fe]/hook', 'http://[::a9fe:a9fe]/hook', 'http://[2002:a9fe:a9fe::]/hook'];

let prod: TestApp;
let acc: TestAccount;
beforeAll(async () => {
  prod = await startTestApp({ env: { ALLOW_PRIVATE_WEBHOOKS: 'off', WEBHOOK_TIMEOUT_MS: '400' }, workers: false });
  acc = await prod.createAccount();
});
afterAll(async () => {
  await prod?.close();
});

describe('"An IPv6 address that carries an IPv4 one … is judged by that IPv4 address" (docs/webhooks.md)', () => {
  it('local NAT64, IPv4-compatible and 6to4 of 169.254.169.254: 400 at registration', async () => {
    for (const url of FORMS) {
      const res = await prod.admin('POST', `/accounts/${acc.id}/webhooks`, { url });
      expect(res.status, url).toBe(400);
      expect(JSON.parse(res.body.error.message)[0].path, url).toEqual(['url']);
    }
  });

  it('the same URLs stored before the guard knew them: every attempt is refused without connecting', async () => {
    const s = prod.rt.services;
    for (const url of FORMS) await storeWebhookUnchecked(prod, acc.id, url);
    expect((await acc.call('POST', '/contacts', { phone: freshPhone() })).status).toBe(201);
    expect(await prod.rt.dispatcher.runOnce()).toBeGreaterThanOrEqual(3);
    const attempts = await s.db.selectFrom('webhook_attempts').select(['error', 'duration_ms']).execute();
    expect(attempts).toHaveLength(3);
    for (const a of attempts) expect(a).toEqual({ error: 'private address refused (SSRF guard)', duration_ms: 0 });
  });
});
