// Channel numbers of the operator API (operator.md "Channel numbers") and how
// POST /messages picks the sending number (decisions.md "Endpoints").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPhone, startTestApp, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const approvedTemplate = async (accountId: string) => {
  const t = await app.admin('POST', `/accounts/${accountId}/templates`, {
    name: `aviso_${Date.now()}_${Math.floor(Math.random() * 1e6)}`,
    category: 'UTILITY',
    body: 'Hola {{nombre}}',
    variables: [{ name: 'nombre', label: 'Nombre', example: 'Ana' }],
    status: 'APPROVED',
  });
  expect(t.status).toBe(201);
  return t.body.id as string;
};

describe('phone numbers (operator.md)', () => {
  it('POST phone-numbers → 201 {id, phone, name, provider, status: "connected", default, agentId, throughputPerSecond: 80}; "the first one is the default"', async () => {
    const acc = await app.createAccount();
    expect(acc.phoneNumberId).toMatch(/^[0-9a-f-]{36}$/);
    const second = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone: '+54 9 11 5555-0100', name: 'Ventas' });
    expect(second.status).toBe(201);
    expect(second.body).toEqual({
      id: expect.any(String),
      phone: '5491155550100',
      name: 'Ventas',
      provider: 'sandbox',
      status: 'connected',
      default: false,
      agentId: null,
      throughputPerSecond: 80,
    });
    const me = await acc.call('GET', '/me');
    expect(me.body.phoneNumbers.map((p: any) => [p.id, p.default])).toEqual([
      [acc.phoneNumberId, true],
      [second.body.id, false],
    ]);
  });

  it('an unknown account → 404; an invalid phone → 400; cloud without its ids → 400', async () => {
    const acc = await app.createAccount();
    const none = await app.admin('POST', '/accounts/0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e/phone-numbers', { phone: freshPhone() });
    expect(none.status).toBe(404);
    expect((await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone: '12' })).status).toBe(400);
    const cloud = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone: freshPhone(), provider: 'cloud' });
    expect(cloud.status).toBe(400);
  });

  it('"the token and app secret are never returned": a cloud number answers without its secrets', async () => {
    const acc = await app.createAccount();
    const cloud = {
      phoneNumberId: `pn${Date.now()}`,
      wabaId: 'waba1',
      accessToken: 'EAAG-secret-token',
      appSecret: 'app-secret-value',
      verifyToken: 'verify-me',
    };
    const res = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone: freshPhone(), provider: 'cloud', cloud });
    expect(res.status).toBe(201);
    expect(res.body.provider).toBe('cloud');
    const texts = [JSON.stringify(res.body), JSON.stringify((await app.admin('GET', `/accounts/${acc.id}`)).body)];
    texts.push(JSON.stringify((await app.admin('GET', `/accounts/${acc.id}/phone-numbers`)).body));
    for (const t of texts) {
      expect(t).not.toContain('EAAG-secret-token');
      expect(t).not.toContain('app-secret-value');
    }
    const again = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone: freshPhone(), provider: 'cloud', cloud });
    expect(again.status).toBe(400);
  });

  it('PATCH {default: true} "unsets the previous one" and GET /me reflects it; sends leave from the new default', async () => {
    const acc = await app.createAccount();
    const second = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone: freshPhone() });
    const patched = await app.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${second.body.id}`, { default: true });
    expect(patched.status).toBe(200);
    expect(patched.body.default).toBe(true);
    const me = await acc.call('GET', '/me');
    const byId = Object.fromEntries(me.body.phoneNumbers.map((p: any) => [p.id, p.default]));
    expect(byId).toEqual({ [acc.phoneNumberId]: false, [second.body.id]: true });

    const tid = await approvedTemplate(acc.id);
    const sent = await acc.call('POST', '/messages', { to: freshPhone(), template: { id: tid } });
    expect(sent.status).toBe(201);
    expect(sent.body.phoneNumberId).toBe(second.body.id);
    const other = await app.admin('PATCH', `/accounts/${acc.id}/phone-numbers/0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e`, { default: true });
    expect(other.status).toBe(404);
  });

  it('"channel disconnected" → 409 on send, with the number named or as the only one; another account\'s number → 409', async () => {
    const acc = await app.createAccount();
    const other = await app.createAccount();
    const tid = await approvedTemplate(acc.id);
    const to = freshPhone();
    const foreign = await acc.call('POST', '/messages', {
      to,
      template: { id: tid },
      phoneNumberId: other.phoneNumberId,
    });
    expect(foreign.status).toBe(409);
    expect(foreign.body.cause).toBeNull();

    const off = await app.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${acc.phoneNumberId}`, { status: 'disconnected' });
    expect(off.body).toMatchObject({ status: 'disconnected', default: true });
    const named = await acc.call('POST', '/messages', { to, template: { id: tid }, phoneNumberId: acc.phoneNumberId });
    expect(named.status).toBe(409);
    expect(named.body.error).toMatch(/desconectado/);
    const omitted = await acc.call('POST', '/messages', { to, template: { id: tid } });
    expect(omitted.status).toBe(409);

    // Reconnected, it sends again.
    await app.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${acc.phoneNumberId}`, { status: 'connected' });
    expect((await acc.call('POST', '/messages', { to, template: { id: tid } })).status).toBe(201);
  });

  it('phoneNumberId omitted and the default disconnected: "the account\'s default connected number" is another connected one', async () => {
    const acc = await app.createAccount();
    const second = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone: freshPhone() });
    await app.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${acc.phoneNumberId}`, { status: 'disconnected' });
    const tid = await approvedTemplate(acc.id);
    const sent = await acc.call('POST', '/messages', { to: freshPhone(), template: { id: tid } });
    expect(sent.status).toBe(201);
    expect(sent.body.phoneNumberId).toBe(second.body.id);
  });
});
