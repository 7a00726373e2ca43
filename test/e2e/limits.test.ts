// Limits (api.md §5, §7 "429 cases", §8; decisions.md "Plans", "Limits", order of checks).
// Time is the injected ManualClock: windows, the quota month and the IP block follow it.
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { RedisLimiter } from '../../src/limits/redis.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';

// A fixed minute start: requests of one test never straddle a window by accident.
const MINUTE = Date.parse('2026-05-12T15:04:00.000Z');

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
  app.clock.set(MINUTE);
});
afterAll(async () => {
  await app?.close();
});

/** A customer writes first, so a free-text send is inside the 24-hour window. */
async function openConversation(a: TestApp, acc: TestAccount): Promise<string> {
  const to = freshPhone();
  const r = await a.inbound({ accountId: acc.id, from: to, text: 'Hola' });
  expect(r.status).toBe(201);
  return to;
}

const usageOf = async (a: TestApp, accountId: string) => {
  const r = await a.admin('GET', `/accounts/${accountId}`);
  expect(r.status).toBe(200);
  return r.body.usage;
};

/** The next minute of the injected clock starts (a fresh window). */
const nextMinute = (a: TestApp) => a.clock.set(Math.floor(a.clock.now().getTime() / 60_000 + 1) * 60_000);

describe('per-minute caps (api.md §8, decisions.md "Limits")', () => {
  it('the 11th call with a cap of 10 gets 429 (Retry-After: 60, X-RateLimit-Limit: 10, cause null) and the usage counts 10', async () => {
    nextMinute(app);
    const acc = await app.createAccount({ limits: { requestsPerMinute: 10 } });
    for (let i = 1; i <= 10; i++) {
      const r = await acc.call('GET', '/me');
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('10');
      expect(r.headers.get('x-ratelimit-remaining')).toBe(String(10 - i));
    }
    const over = await acc.call('GET', '/me');
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: expect.stringMatching(/10 pedidos por minuto/), cause: null });
    expect(over.headers.get('retry-after')).toBe('60');
    expect(over.headers.get('x-ratelimit-limit')).toBe('10');
    expect(over.headers.get('x-ratelimit-remaining')).toBe('0');
    // "A rejected minute-cap request did nothing and is not counted."
    expect((await usageOf(app, acc.id)).apiCalls).toBe(10);
  });

  it('"Every authenticated /api/v1 response carries X-RateLimit-Limit/Remaining/Reset" and the IETF RateLimit-Policy/RateLimit pair, errors included', async () => {
    nextMinute(app);
    app.clock.advance(15_000); // 45 s to the next window
    const acc = await app.createAccount(); // escala: 300 per minute
    const ok = await acc.call('GET', '/me');
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-ratelimit-limit')).toBe('300');
    expect(ok.headers.get('x-ratelimit-remaining')).toBe('299');
    expect(ok.headers.get('x-ratelimit-reset')).toBe('45');
    expect(ok.headers.get('ratelimit-policy')).toBe('"minute";q=300;w=60');
    expect(ok.headers.get('ratelimit')).toBe('"minute";r=299;t=45');
    expect(ok.headers.get('retry-after')).toBeNull();
    // A 404 (unknown route) and a 400 (validation) are authenticated responses too, and count.
    const notFound = await acc.call('GET', '/no-such-route');
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('x-ratelimit-remaining')).toBe('298');
    const invalid = await acc.call('POST', '/contacts', {});
    expect(invalid.status).toBe(400);
    expect(invalid.headers.get('x-ratelimit-remaining')).toBe('297');
    expect((await usageOf(app, acc.id)).apiCalls).toBe(3);
    // Not authenticated: no rate-limit headers, not counted for any account.
    const anon = await app.api(null, 'GET', '/me');
    expect(anon.status).toBe(401);
    expect(anon.headers.get('x-ratelimit-limit')).toBeNull();

    const ent = await app.createAccount({ plan: 'enterprise' });
    const e = await ent.call('GET', '/me');
    expect(e.headers.get('x-ratelimit-limit')).toBe('1200');
    expect(e.body.limits).toMatchObject({ requestsPerMinute: 1200, messagesPerMinute: 300, apiCallsPerMonth: null });
  });

  it('"A POST /messages counts against both caps"; a message-cap 429 has its own text, X-RateLimit-Limit of the message cap, and leaves the request counter untouched', async () => {
    nextMinute(app);
    const acc = await app.createAccount({ limits: { requestsPerMinute: 10, messagesPerMinute: 2 } });
    const to = await openConversation(app, acc);
    const s1 = await acc.call('POST', '/messages', { to, text: 'Uno' });
    expect(s1.status).toBe(201);
    expect(s1.headers.get('x-ratelimit-remaining')).toBe('9');
    // A send rejected by the handler (409: unknown number) still counts against both caps.
    const s2 = await acc.call('POST', '/messages', { to, text: 'Dos', phoneNumberId: '00000000-0000-7000-8000-000000000000' });
    expect(s2.status).toBe(409);
    expect(s2.headers.get('x-ratelimit-remaining')).toBe('8');

    const s3 = await acc.call('POST', '/messages', { to, text: 'Tres' });
    expect(s3.status).toBe(429);
    expect(s3.body).toEqual({ error: expect.stringMatching(/2 mensajes por minuto/), cause: null });
    expect(s3.headers.get('retry-after')).toBe('60');
    expect(s3.headers.get('x-ratelimit-limit')).toBe('2');
    // The request cap is untouched by the rejected send: 8 left before it, 7 after this GET.
    expect(s3.headers.get('ratelimit')).toMatch(/^"minute";r=8;/);
    const me = await acc.call('GET', '/me');
    expect(me.status).toBe(200);
    expect(me.headers.get('x-ratelimit-remaining')).toBe('7');
    // The rejected send did nothing: one message stored, and the usage has 3 calls + this GET.
    const stored = await app.rt.services.db
      .selectFrom('messages')
      .select('id')
      .where('account_id', '=', acc.id)
      .where('direction', '=', 'outbound')
      .execute();
    expect(stored).toHaveLength(1);
    expect(me.body.usage.apiCalls).toBe(3);
  });

  it('a message cap without a request cap: the send over it gets 429 with Retry-After and X-RateLimit-Limit of the message cap; other answers carry no rate-limit headers', async () => {
    nextMinute(app);
    const acc = await app.createAccount({ plan: 'enterprise', limits: { requestsPerMinute: null, messagesPerMinute: 1 } });
    const to = await openConversation(app, acc);
    const s1 = await acc.call('POST', '/messages', { to, text: 'Uno' });
    expect(s1.status).toBe(201);
    expect(s1.headers.get('x-ratelimit-limit')).toBeNull();
    const s2 = await acc.call('POST', '/messages', { to, text: 'Dos' });
    expect(s2.status).toBe(429);
    expect(s2.headers.get('retry-after')).toBe('60');
    expect(s2.headers.get('x-ratelimit-limit')).toBe('1');
    expect(s2.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it('"a request rejected by either cap counts against neither": a send refused by the request cap leaves the message cap; overrides apply at once (PATCH limits)', async () => {
    nextMinute(app);
    const acc = await app.createAccount({ limits: { requestsPerMinute: 2, messagesPerMinute: 1 } });
    const to = await openConversation(app, acc);
    expect((await acc.call('GET', '/me')).status).toBe(200);
    expect((await acc.call('GET', '/me')).status).toBe(200);
    const refused = await acc.call('POST', '/messages', { to, text: 'Hola' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-limit')).toBe('2');
    expect(refused.body.error).toMatch(/pedidos por minuto/);

    const patched = await app.admin('PATCH', `/accounts/${acc.id}`, { limits: { requestsPerMinute: 5 } });
    expect(patched.status).toBe(200);
    expect(patched.body.limits).toMatchObject({ requestsPerMinute: 5, messagesPerMinute: 1 });
    // Same window: the request cap is now 5 (2 used), and the message cap still has its 1.
    const sent = await acc.call('POST', '/messages', { to, text: 'Hola' });
    expect(sent.status).toBe(201);
    expect(sent.headers.get('x-ratelimit-limit')).toBe('5');
    expect(sent.headers.get('x-ratelimit-remaining')).toBe('2');
    const second = await acc.call('POST', '/messages', { to, text: 'Otra' });
    expect(second.status).toBe(429);
    expect(second.headers.get('x-ratelimit-limit')).toBe('1');
  });

  it('"Minute caps are fixed one-minute windows per account": the cap resets when the clock reaches the next minute; all keys of the account add up', async () => {
    nextMinute(app);
    app.clock.advance(30_000);
    const acc = await app.createAccount({ limits: { requestsPerMinute: 2 } });
    const second = await app.admin('POST', `/accounts/${acc.id}/keys`, { name: 'otra integración' });
    expect(second.status).toBe(201);
    expect((await acc.call('GET', '/me')).status).toBe(200);
    expect((await app.api(second.body.key, 'GET', '/me')).status).toBe(200);
    const over = await acc.call('GET', '/me');
    expect(over.status).toBe(429);
    expect(over.headers.get('x-ratelimit-reset')).toBe('30');
    app.clock.advance(29_000);
    const still = await app.api(second.body.key, 'GET', '/me');
    expect(still.status).toBe(429);
    expect(still.headers.get('x-ratelimit-reset')).toBe('1');
    app.clock.advance(1_000);
    const fresh = await acc.call('GET', '/me');
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('x-ratelimit-remaining')).toBe('1');
    expect(fresh.headers.get('x-ratelimit-reset')).toBe('60');
    // Another account has its own counters.
    const other = await app.createAccount({ limits: { requestsPerMinute: 2 } });
    expect((await other.call('GET', '/me')).headers.get('x-ratelimit-remaining')).toBe('1');
  });
});

describe('monthly quotas (api.md §8)', () => {
  it('"Quotas renew on day 1 of each month at 00:00 Argentina time": the quota month turns at 03:00 UTC on day 1', async () => {
    const a = await startTestApp();
    try {
      a.clock.set('2026-03-01T02:58:30.000Z'); // still February in Buenos Aires
      const acc = await a.createAccount({ limits: { apiCallsPerMonth: 3 } });
      for (let i = 0; i < 3; i++) expect((await acc.call('GET', '/templates')).status).toBe(200);
      const over = await acc.call('GET', '/templates');
      expect(over.status).toBe(429);
      let usage = await usageOf(a, acc.id);
      expect(usage.period).toEqual({ start: '2026-02-01T03:00:00.000Z', end: '2026-03-01T03:00:00.000Z' });
      expect(usage.apiCalls).toBe(3);

      a.clock.set('2026-03-01T02:59:59.999Z');
      expect((await acc.call('GET', '/templates')).status).toBe(429);
      a.clock.set('2026-03-01T03:00:00.000Z');
      const renewed = await acc.call('GET', '/me');
      expect(renewed.status).toBe(200);
      expect(renewed.body.usage.period).toEqual({ start: '2026-03-01T03:00:00.000Z', end: '2026-04-01T03:00:00.000Z' });
      expect(renewed.body.usage.apiCalls).toBe(1);
      usage = await usageOf(a, acc.id);
      expect(usage.apiCalls).toBe(1);
    } finally {
      await a.close();
    }
  });

  it('over the API quota → 429 with cause {type: "upgrade", reason: "limit", resource: "apiCalls", plan, limit, used, suggested} and no Retry-After; rejected calls are not counted', async () => {
    nextMinute(app);
    const acc = await app.createAccount({ limits: { apiCallsPerMonth: 4, requestsPerMinute: 100 } });
    // "every request with a valid key, successful or not": a 404 and a 400 count too.
    expect((await acc.call('GET', '/me')).status).toBe(200);
    expect((await acc.call('GET', '/contacts/00000000-0000-7000-8000-000000000000')).status).toBe(404);
    expect((await acc.call('POST', '/contacts', { phone: 'no' })).status).toBe(400);
    expect((await acc.call('GET', '/templates')).status).toBe(200);
    const over = await acc.call('GET', '/me');
    expect(over.status).toBe(429);
    expect(over.body).toEqual({
      error: expect.stringMatching(/4 llamadas/),
      cause: { type: 'upgrade', reason: 'limit', resource: 'apiCalls', plan: 'escala', limit: 4, used: 4, suggested: 'enterprise' },
    });
    expect(over.headers.get('retry-after')).toBeNull();
    // Quota rejections are not counted, against the quota or the minute cap.
    expect((await acc.call('GET', '/me')).status).toBe(429);
    expect((await acc.call('GET', '/me')).headers.get('x-ratelimit-remaining')).toBe('96');
    expect((await usageOf(app, acc.id)).apiCalls).toBe(4);
    // Raising the quota (operator override) lets the account call again at once.
    expect((await app.admin('PATCH', `/accounts/${acc.id}`, { limits: { apiCallsPerMonth: 5 } })).status).toBe(200);
    expect((await acc.call('GET', '/me')).status).toBe(200);
    expect((await acc.call('GET', '/me')).status).toBe(429);
  });

  it('"Counting may be batched … no database write per request": calls are written to usage_counters on flush, and the usage shows them before', async () => {
    nextMinute(app);
    const acc = await app.createAccount();
    for (let i = 0; i < 5; i++) await acc.call('GET', '/templates');
    const written = async () =>
      (
        await app.rt.services.db
          .selectFrom('usage_counters')
          .select('count')
          .where('account_id', '=', acc.id)
          .where('resource', '=', 'apiCalls')
          .executeTakeFirst()
      )?.count ?? 0;
    expect(Number(await written())).toBe(0);
    expect((await usageOf(app, acc.id)).apiCalls).toBe(5);
    await app.rt.services.usage.flush();
    expect(Number(await written())).toBe(5);
    expect((await usageOf(app, acc.id)).apiCalls).toBe(5);
  });
});

describe('GET /me from a view kept per account (decisions.md "GET /me"; api.md §8: "The usage counter may lag up to half a minute")', () => {
  const meText = async (acc: TestAccount) => {
    const res = await fetch(`${app.url}/api/v1/me`, { headers: { authorization: `Bearer ${acc.key}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    return res.text();
  };

  it('"The usage counter may lag up to half a minute": the kept view shows apiCalls as of its build (this call included) for 2 s, is then the operator\'s fresh view byte for byte, and never goes back across a batch write', async () => {
    nextMinute(app);
    const acc = await app.createAccount();
    const first = JSON.parse(await meText(acc));
    expect(first.usage.apiCalls).toBe(1);
    for (let i = 0; i < 3; i++) expect(JSON.parse(await meText(acc)).usage.apiCalls).toBe(1);
    app.clock.advance(2_000);
    // Rebuilt: the four calls before it and this one. The operator view reads the database now.
    const text = await meText(acc);
    expect(JSON.parse(text).usage.apiCalls).toBe(5);
    expect(text).toBe(JSON.stringify((await app.admin('GET', `/accounts/${acc.id}`)).body));
    // A batch write makes the kept view stale: the next one counts the same calls, from the database.
    await app.rt.services.usage.flush();
    expect(JSON.parse(await meText(acc)).usage.apiCalls).toBe(6);
    expect(JSON.parse(await meText(acc)).usage.apiCalls).toBe(6);
  });

  it('a write through this process shows at once: a contact made by POST /contacts or by an inbound message, a number connected by the operator, a plan change', async () => {
    nextMinute(app);
    const acc = await app.createAccount();
    const before = JSON.parse(await meText(acc));
    expect(before.usage.contacts).toBe(0);
    expect(before.phoneNumbers).toHaveLength(1);

    expect((await acc.call('POST', '/contacts', { phone: freshPhone(), name: 'Ana' })).status).toBe(201);
    expect(JSON.parse(await meText(acc)).usage.contacts).toBe(1);
    await openConversation(app, acc);
    expect(JSON.parse(await meText(acc)).usage.contacts).toBe(2);

    const pn = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone: freshPhone(), provider: 'sandbox' });
    expect(pn.status).toBe(201);
    expect(JSON.parse(await meText(acc)).phoneNumbers.map((n: { id: string }) => n.id)).toContain(pn.body.id);
    expect((await app.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${pn.body.id}`, { status: 'disconnected' })).status).toBe(200);
    const numbers = JSON.parse(await meText(acc)).phoneNumbers;
    expect(numbers.find((n: { id: string }) => n.id === pn.body.id).status).toBe('disconnected');

    expect((await app.admin('PATCH', `/accounts/${acc.id}`, { plan: 'enterprise' })).status).toBe(200);
    expect(JSON.parse(await meText(acc)).plan).toBe('enterprise');
  });

  /** An account whose view is kept with no contacts, then a contact written straight in the database. */
  const contactMadeElsewhere = async () => {
    nextMinute(app);
    const acc = await app.createAccount();
    expect(JSON.parse(await meText(acc)).usage.contacts).toBe(0);
    const now = new Date();
    await app.rt.services.db
      .insertInto('contacts')
      .values({ id: newId(), account_id: acc.id, phone: freshPhone({ spelling: 'digits' }), created_at: now, updated_at: now })
      .execute();
    return acc;
  };

  it('a change made elsewhere (another process, straight in the database) shows within the 2 s the view is kept', async () => {
    const acc = await contactMadeElsewhere();
    expect(JSON.parse(await meText(acc)).usage.contacts).toBe(0);
    app.clock.advance(1_999);
    expect(JSON.parse(await meText(acc)).usage.contacts).toBe(0);
    app.clock.advance(1);
    expect(JSON.parse(await meText(acc)).usage.contacts).toBe(1);
  });

  it('in the last half second of the 2 s a GET /me starts the next read in the background and is answered from the kept view; the read then replaces it (no request waits while the account is asked about steadily)', async () => {
    const acc = await contactMadeElsewhere();
    app.clock.advance(1_499);
    expect(JSON.parse(await meText(acc)).usage.contacts).toBe(0);
    app.clock.advance(1);
    // This one starts the read and is answered at once from the kept text.
    const kept = JSON.parse(await meText(acc));
    expect(kept.usage).toMatchObject({ contacts: 0, apiCalls: 1 });
    // The clock stands still: within the same 2 s, the view read in the background shows the contact.
    let seen = kept;
    for (let i = 0; i < 50 && seen.usage.contacts === 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
      seen = JSON.parse(await meText(acc));
    }
    expect(seen.usage.contacts).toBe(1);
    expect(seen.usage.apiCalls).toBeGreaterThan(kept.usage.apiCalls);
  });
});

describe('invalid keys (api.md §5, decisions.md "Limits")', () => {
  it('"The 21st within one minute blocks the IP for 60 s": every request gets 429 (text only), valid keys too; the block lifts after 60 s', async () => {
    const a = await startTestApp();
    try {
      a.clock.set(MINUTE + 50_000); // the 21 span a minute boundary of the clock: still one minute
      const acc = await a.createAccount();
      const revoked = await a.admin('POST', `/accounts/${acc.id}/keys`, { name: 'vieja' });
      await a.admin('DELETE', `/accounts/${acc.id}/keys/${revoked.body.id}`);
      const bad = [null, `${acc.key}x`, revoked.body.key, 'etk_live_short', `etk_live_${'A'.repeat(40)}`];
      for (let i = 0; i < 20; i++) {
        // X-Forwarded-For is ignored without TRUST_PROXY: all of these are the socket's IP.
        const r = await a.api(bad[i % bad.length], 'GET', '/me', undefined, { 'x-forwarded-for': `198.51.100.${i}` });
        expect(r.status).toBe(401);
        if (i === 9) a.clock.advance(15_000);
      }
      const blocking = await a.api(bad[0]!, 'GET', '/me');
      expect(blocking.status).toBe(429);
      expect(blocking.body).toEqual({ error: expect.stringMatching(/claves inválidas/), cause: null });
      const valid = await acc.call('GET', '/me');
      expect(valid.status).toBe(429);
      expect(valid.body).toEqual({ error: expect.stringMatching(/claves inválidas/), cause: null });
      expect(valid.headers.get('x-ratelimit-limit')).toBeNull();
      // Blocked requests do not count as API calls.
      expect((await usageOf(a, acc.id)).apiCalls).toBe(0);
      // The operator API is not behind the IP block.
      expect((await a.admin('GET', `/accounts/${acc.id}`)).status).toBe(200);

      a.clock.advance(59_999);
      expect((await acc.call('GET', '/me')).status).toBe(429);
      a.clock.advance(1);
      expect((await acc.call('GET', '/me')).status).toBe(200);
      // A fresh count starts: one invalid key is a plain 401 again.
      expect((await a.api(null, 'GET', '/me')).status).toBe(401);
      expect((await acc.call('GET', '/me')).status).toBe(200);
    } finally {
      await a.close();
    }
  });

  it('20 invalid keys in a minute do not block; invalid keys spread over more than a minute never do', async () => {
    const a = await startTestApp();
    try {
      a.clock.set(MINUTE);
      const acc = await a.createAccount();
      for (let i = 0; i < 20; i++) expect((await a.api(null, 'GET', '/me')).status).toBe(401);
      expect((await acc.call('GET', '/me')).status).toBe(200);
      a.clock.advance(60_000);
      for (let i = 0; i < 20; i++) expect((await a.api(null, 'GET', '/me')).status).toBe(401);
      expect((await acc.call('GET', '/me')).status).toBe(200);
    } finally {
      await a.close();
    }
  });

  it('"X-Forwarded-For only when TRUST_PROXY is set": with it, the first hop is the caller IP that gets blocked', async () => {
    const a = await startTestApp({ env: { TRUST_PROXY: '1' } });
    try {
      a.clock.set(MINUTE);
      const acc = await a.createAccount();
      const attacker = { 'x-forwarded-for': '203.0.113.7, 10.0.0.1' };
      for (let i = 0; i < 20; i++) expect((await a.api(null, 'GET', '/me', undefined, attacker)).status).toBe(401);
      expect((await a.api(null, 'GET', '/me', undefined, attacker)).status).toBe(429);
      expect((await acc.call('GET', '/me', undefined, { 'x-forwarded-for': '203.0.113.7' })).status).toBe(429);
      // Another client behind the same proxy (same socket IP) is not blocked.
      expect((await acc.call('GET', '/me', undefined, { 'x-forwarded-for': '203.0.113.8, 10.0.0.1' })).status).toBe(200);
      expect((await acc.call('GET', '/me')).status).toBe(200);
    } finally {
      await a.close();
    }
  });
});

describe('maxima (api.md §8: "At the maximum of keys or URLs, creating another answers 402")', () => {
  it('valid API keys: one more → 402 with the upgrade cause; "revoked keys … do not count towards the key maximum"', async () => {
    const acc = await app.createAccount({ limits: { apiKeys: 2 } });
    const second = await app.admin('POST', `/accounts/${acc.id}/keys`, { name: 'dos' });
    expect(second.status).toBe(201);
    const third = await app.admin('POST', `/accounts/${acc.id}/keys`, { name: 'tres' });
    expect(third.status).toBe(402);
    expect(third.body).toEqual({
      error: expect.stringMatching(/2 claves/),
      cause: { type: 'upgrade', reason: 'limit', resource: 'apiKeys', plan: 'escala', limit: 2, used: 2, suggested: expect.any(String) },
    });
    expect((await app.admin('DELETE', `/accounts/${acc.id}/keys/${second.body.id}`)).status).toBe(204);
    expect((await app.admin('POST', `/accounts/${acc.id}/keys`, { name: 'tres' })).status).toBe(201);
  });

  it('webhook URLs: one more → 402 with the same cause shape', async () => {
    const acc = await app.createAccount({ limits: { webhookUrls: 1 } });
    const first = await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url: 'http://127.0.0.1:9/a' });
    expect(first.status).toBe(201);
    const second = await app.admin('POST', `/accounts/${acc.id}/webhooks`, { url: 'http://127.0.0.1:9/b' });
    expect(second.status).toBe(402);
    expect(second.body.cause).toMatchObject({
      type: 'upgrade',
      reason: 'limit',
      resource: 'webhookUrls',
      plan: 'escala',
      limit: 1,
      used: 1,
    });
  });

  it('contacts: a new contact over the limit → 402 with the same cause shape; updating an existing one still works; usage.contacts counts them', async () => {
    const acc = await app.createAccount({ limits: { contacts: 1 } });
    const phone = freshPhone();
    expect((await acc.call('POST', '/contacts', { phone, name: 'Ana' })).status).toBe(201);
    const more = await acc.call('POST', '/contacts', { phone: freshPhone() });
    expect(more.status).toBe(402);
    expect(more.body.cause).toEqual({
      type: 'upgrade',
      reason: 'limit',
      resource: 'contacts',
      plan: 'escala',
      limit: 1,
      used: 1,
      suggested: expect.any(String),
    });
    expect((await acc.call('POST', '/contacts', { phone, name: 'Ana María' })).status).toBe(200);
    expect((await acc.call('GET', '/me')).body.usage.contacts).toBe(1);
  });
});

describe('shared state (issue "Limits" §5)', () => {
  it('Redis unreachable → the API keeps serving (fail open), never 500; caps still hold per process', async () => {
    const a = await startTestApp({ env: { REDIS_URL: 'redis://127.0.0.1:1' } });
    try {
      a.clock.set(MINUTE);
      const acc = await a.createAccount({ limits: { requestsPerMinute: 3 } });
      for (let i = 0; i < 3; i++) {
        const r = await acc.call('GET', '/me');
        expect(r.status).toBe(200);
        expect(r.headers.get('x-ratelimit-remaining')).toBe(String(2 - i));
      }
      expect((await acc.call('GET', '/me')).status).toBe(429);
      expect((await a.api(null, 'GET', '/me')).status).toBe(401);
      expect((await usageOf(a, acc.id)).apiCalls).toBe(3);
    } finally {
      await a.close();
    }
  });

  const redisUrl = process.env.REDIS_URL;
  const shared = Boolean(process.env.DATABASE_URL && redisUrl);

  it.skipIf(!redisUrl)('Redis lost and back: requests are served meanwhile and the limiter returns to Redis by itself', async () => {
    const target = new URL(redisUrl!);
    // A TCP relay in front of Redis that the test can cut (a fake network, not our code).
    const sockets = new Set<Socket>();
    let relay: Server | null = null;
    const openRelay = (port: number) =>
      new Promise<number>((resolve, reject) => {
        relay = createServer((client) => {
          const upstream = connect(Number(target.port || 6379), target.hostname);
          for (const s of [client, upstream]) {
            sockets.add(s);
            s.on('error', () => {});
            s.on('close', () => sockets.delete(s));
          }
          client.pipe(upstream).pipe(client);
          client.on('close', () => upstream.destroy());
          upstream.on('close', () => client.destroy());
        });
        relay.once('error', reject);
        relay.listen(port, '127.0.0.1', () => resolve((relay!.address() as AddressInfo).port));
      });
    const cutRelay = () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        relay!.close(() => resolve());
      });
    const port = await openRelay(0);
    const prefix = `chasqui-test-relay-${process.pid}-${Date.now()}`;
    const a = await startTestApp({ env: { REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_KEY_PREFIX: prefix } });
    const direct = new Redis(redisUrl!);
    try {
      a.clock.set(MINUTE);
      const acc = await a.createAccount({ limits: { requestsPerMinute: 50 } });
      const reqKey = `${prefix}:req:${acc.id}:${MINUTE}`;
      expect((await acc.call('GET', '/me')).status).toBe(200);
      expect(await direct.get(reqKey)).toBe('1');

      await cutRelay();
      for (let i = 0; i < 3; i++) expect((await acc.call('GET', '/me')).status).toBe(200);
      expect(await direct.get(reqKey)).toBe('1');

      await openRelay(port);
      // ioredis reconnects on its own schedule: wait for the limiter to say it is back on Redis.
      const limiter = a.rt.services.limiter;
      expect(limiter).toBeInstanceOf(RedisLimiter);
      await (limiter as RedisLimiter).whenShared();
      expect((await acc.call('GET', '/me')).status).toBe(200);
      // Counted in Redis again (a lease may take a few tokens at once).
      expect(Number(await direct.get(reqKey))).toBeGreaterThan(1);
    } finally {
      await a.close();
      await cutRelay();
      direct.disconnect();
    }
  });

  it.skipIf(!redisUrl)(
    'Redis slow for a moment on a connection that never drops (commands time out): served meanwhile, and back on Redis at the next answer',
    async () => {
      const target = new URL(redisUrl!);
      // A TCP relay in front of Redis that holds what the client sends while stalled (a slow
      // network, not our code): commands time out, the connection stays up, no reconnection follows.
      // Each connection keeps what it held (the process has several: the limiter's, its
      // subscriber, the send pacer's), so the bytes go back to their own connection.
      let stalled = false;
      const pipes: { upstream: Socket; held: Buffer[] }[] = [];
      const relay = createServer((client) => {
        const upstream = connect(Number(target.port || 6379), target.hostname);
        for (const s of [client, upstream]) s.on('error', () => {});
        const pipe = { upstream, held: [] as Buffer[] };
        pipes.push(pipe);
        client.on('data', (d: Buffer) => (stalled ? pipe.held.push(d) : upstream.write(d)));
        upstream.pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      const port = await new Promise<number>((resolve) =>
        relay.listen(0, '127.0.0.1', () => resolve((relay.address() as AddressInfo).port)),
      );
      const a = await startTestApp({
        env: { REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_KEY_PREFIX: `chasqui-test-stall-${process.pid}-${Date.now()}` },
      });
      try {
        a.clock.set(MINUTE);
        const acc = await a.createAccount({ limits: { requestsPerMinute: 50 } });
        expect((await acc.call('GET', '/me')).status).toBe(200);
        const limiter = a.rt.services.limiter as RedisLimiter;
        stalled = true;
        // A send always asks Redis: its command times out and the answer comes from memory.
        expect((await acc.call('GET', '/me')).status).toBe(200);
        expect((await acc.call('POST', '/messages', { to: freshPhone(), text: 'hola' })).status).toBe(409);
        let back = false;
        void limiter.whenShared().then(() => {
          back = true;
        });
        stalled = false;
        for (const { upstream, held } of pipes) for (const d of held.splice(0)) upstream.write(d);
        // Once the back-off ends (by the service clock), the next request is decided in Redis again.
        a.clock.advance(1_000);
        expect((await acc.call('POST', '/messages', { to: freshPhone(), text: 'hola' })).status).toBe(409);
        await limiter.whenShared();
        expect(back).toBe(true);
      } finally {
        await a.close();
        relay.close();
      }
    },
  );

  it.skipIf(!shared)('two app instances on one PostgreSQL + Redis share the minute cap, the monthly quota and the IP block', async () => {
    const a1 = await startTestApp();
    const a2 = await startTestApp({ sameDataAs: a1, clock: a1.clock });
    try {
      a1.clock.set(MINUTE);
      const acc = await a1.createAccount({ limits: { requestsPerMinute: 6, apiCallsPerMonth: 9 } });
      for (let i = 0; i < 3; i++) {
        expect((await acc.call('GET', '/me')).status).toBe(200);
        expect((await a2.api(acc.key, 'GET', '/me')).status).toBe(200);
      }
      const over = await a2.api(acc.key, 'GET', '/me');
      expect(over.status).toBe(429);
      expect(over.headers.get('x-ratelimit-limit')).toBe('6');
      expect((await acc.call('GET', '/me')).status).toBe(429);
      // Next window: 3 more calls reach the monthly quota of 9 across both processes.
      a1.clock.advance(60_000);
      expect((await acc.call('GET', '/me')).status).toBe(200);
      expect((await a2.api(acc.key, 'GET', '/me')).status).toBe(200);
      expect((await acc.call('GET', '/me')).status).toBe(200);
      const quota = await a2.api(acc.key, 'GET', '/me');
      expect(quota.status).toBe(429);
      expect(quota.body.cause).toMatchObject({ resource: 'apiCalls', limit: 9, used: 9 });
      await a1.rt.services.usage.flush();
      await a2.rt.services.usage.flush();
      expect((await usageOf(a2, acc.id)).apiCalls).toBe(9);

      // Invalid keys at both processes add up for one IP.
      a1.clock.advance(60_000);
      for (let i = 0; i < 10; i++) {
        expect((await a1.api(null, 'GET', '/me')).status).toBe(401);
        expect((await a2.api(null, 'GET', '/me')).status).toBe(401);
      }
      expect((await a1.api(null, 'GET', '/me')).status).toBe(429);
      expect((await a2.api(acc.key, 'GET', '/me')).status).toBe(429);
    } finally {
      await a2.close();
      await a1.close();
    }
  });
  it.skipIf(!redisUrl)(
    'a busy account is decided from a lease: far fewer Redis round trips than requests, the shared count ends exactly at the requests served',
    async () => {
      const prefix = `chasqui-test-lease-${process.pid}-${Date.now()}`;
      const a = await startTestApp({ env: { REDIS_KEY_PREFIX: prefix } });
      const monitor = await new Redis(redisUrl!).monitor();
      let roundTrips = 0;
      monitor.on('monitor', (_time: string, args: string[]) => {
        // EVALSHA sha numkeys key…: the admission script touches the account's request counter first.
        if (String(args[0]).toLowerCase() === 'evalsha' && String(args[3] ?? '').startsWith(`${prefix}:req:`)) roundTrips += 1;
      });
      const direct = new Redis(redisUrl!);
      try {
        a.clock.set(MINUTE);
        const acc = await a.createAccount({ plan: 'enterprise', limits: { requestsPerMinute: 100_000 } });
        let served = 0;
        for (let batch = 0; batch < 20; batch++) {
          const answers = await Promise.all(Array.from({ length: 20 }, () => acc.call('GET', '/templates')));
          served += answers.filter((r) => r.status === 200).length;
        }
        expect(served).toBe(400);
        console.log(`lease test: ${roundTrips} admission round trips for 400 requests`);
        expect(roundTrips).toBeGreaterThan(0);
        expect(roundTrips).toBeLessThan(100);
        const reqKey = `${prefix}:req:${acc.id}:${MINUTE}`;
        // Tokens held by the lease are counted until it ends; closing gives them back.
        expect(Number(await direct.get(reqKey))).toBeGreaterThanOrEqual(400);
        await a.close();
        expect(Number(await direct.get(reqKey))).toBe(400);
      } finally {
        await a.close();
        monitor.disconnect();
        direct.disconnect();
      }
    },
  );

  it.skipIf(!redisUrl)(
    '"overrides apply at once" with a lease held: lowering the cap mid-minute leaves exactly the difference (unused tokens go back first)',
    async () => {
      const a = await startTestApp();
      try {
        a.clock.set(MINUTE);
        const acc = await a.createAccount({ plan: 'enterprise', limits: { requestsPerMinute: 100_000 } });
        for (let batch = 0; batch < 10; batch++) {
          const answers = await Promise.all(Array.from({ length: 20 }, () => acc.call('GET', '/templates')));
          expect(answers.every((r) => r.status === 200)).toBe(true);
        }
        expect((await a.admin('PATCH', `/accounts/${acc.id}`, { limits: { requestsPerMinute: 250 } })).status).toBe(200);
        const answers = await Promise.all(Array.from({ length: 80 }, () => acc.call('GET', '/templates')));
        expect(answers.filter((r) => r.status === 200)).toHaveLength(50);
        expect(answers.filter((r) => r.status === 429).every((r) => r.headers.get('x-ratelimit-limit') === '250')).toBe(true);
      } finally {
        await a.close();
      }
    },
  );

  it.skipIf(!redisUrl)(
    'near the cap every request is decided in Redis: a cap of 50 admits exactly 50 of 80 concurrent requests, Remaining counts down 49…0 without a gap',
    async () => {
      const a = await startTestApp();
      try {
        a.clock.set(MINUTE);
        const acc = await a.createAccount({ plan: 'enterprise', limits: { requestsPerMinute: 50 } });
        const answers = await Promise.all(Array.from({ length: 80 }, () => acc.call('GET', '/templates')));
        const ok = answers.filter((r) => r.status === 200);
        expect(ok).toHaveLength(50);
        expect(answers.filter((r) => r.status === 429)).toHaveLength(30);
        const remaining = ok.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((x, y) => x - y);
        expect(remaining).toEqual(Array.from({ length: 50 }, (_, i) => i));
      } finally {
        await a.close();
      }
    },
  );
});
