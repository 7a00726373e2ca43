// The inbound path (a customer writes), through the sandbox inbound route (operator.md
// "Sandbox channel"): contacts, conversation window, message.received, opt-out (api.md §3, §6;
// decisions.md "Event data keys", "Channel").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPhone, startTestApp, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const digits = (p: string) => p.replace(/\D/g, '');

const events = (accountId: string, kind?: string) => app.events(accountId, kind);

describe('inbound messages (operator.md "Sandbox channel")', () => {
  it('→ 201 {messageId, contactId, conversationId}; contact.created source "inbound" once, message.received with the decisions.md keys', async () => {
    const acc = await app.createAccount();
    const from = freshPhone();
    const ts = new Date(app.clock.now().getTime() - 60_000).toISOString();
    const first = await app.inbound({ accountId: acc.id, from, text: 'Hola, ¿tienen stock?', name: 'Ana Pérez', timestamp: ts });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ messageId: expect.any(String), contactId: expect.any(String), conversationId: expect.any(String) });
    const second = await app.inbound({ accountId: acc.id, from, text: 'y en azul?', name: 'Otro Nombre' });
    expect(second.body.contactId).toBe(first.body.contactId);
    expect(second.body.conversationId).toBe(first.body.conversationId);

    const created = await events(acc.id, 'contact.created');
    expect(created).toHaveLength(1);
    expect(created[0]!.data).toMatchObject({
      source: 'inbound',
      contact: { id: first.body.contactId, phone: digits(from), name: 'Ana Pérez', optedOut: false },
    });

    const received = await events(acc.id, 'message.received');
    expect(received).toHaveLength(2);
    expect(received[0]!.data).toEqual({
      id: first.body.messageId,
      wamid: expect.stringMatching(/^wamid\./),
      conversationId: first.body.conversationId,
      to: acc.phone,
      contact: { id: first.body.contactId, name: 'Ana Pérez', phone: digits(from) },
      type: 'text',
      text: 'Hola, ¿tienen stock?',
      timestamp: ts,
    });
    expect(received[0]!.data.source).toBeUndefined();
    // "profile name fills an empty name": the second profile name does not replace it.
    expect((await acc.call('GET', `/contacts/${first.body.contactId}`)).body.name).toBe('Ana Pérez');
  });

  it('an unknown account → 404 "No existe esa cuenta." whatever else the body says (a phone, a social chat, a future timestamp); nothing is stored', async () => {
    const accountId = '0190a000-0000-7000-8000-000000000000';
    const future = new Date(app.clock.now().getTime() + 3_600_000).toISOString();
    for (const body of [
      { accountId, from: freshPhone(), text: 'hola' },
      { accountId, socialchat: 'ig-123', text: 'hola' },
      { accountId, from: freshPhone(), text: 'hola', timestamp: future },
    ]) {
      const r = await app.inbound(body);
      expect(r.status, JSON.stringify(body)).toBe(404);
      expect(r.body.error).toBe('No existe esa cuenta.');
    }
    const stored = await app.rt.services.db.selectFrom('contacts').select('id').where('account_id', '=', accountId).execute();
    expect(stored).toEqual([]);
  });

  it('"process idempotently (dedupe on the provider message id)": the same wamid twice is stored and announced once', async () => {
    const acc = await app.createAccount();
    const from = freshPhone();
    const wamid = `wamid.IN${Date.now()}`;
    const a = await app.inbound({ accountId: acc.id, from, text: 'hola', wamid });
    const b = await app.inbound({ accountId: acc.id, from, text: 'hola', wamid });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body).toMatchObject({ messageId: a.body.messageId, duplicate: true });
    expect(await events(acc.id, 'message.received')).toHaveLength(1);
    expect(await events(acc.id, 'contact.created')).toHaveLength(1);
    const stored = await app.rt.services.db.selectFrom('messages').select('id').where('account_id', '=', acc.id).execute();
    expect(stored).toHaveLength(1);
    // Concurrent re-deliveries too.
    const wamid2 = `wamid.IN2${Date.now()}`;
    const many = await Promise.all([1, 2, 3].map(() => app.inbound({ accountId: acc.id, from, text: 'otra', wamid: wamid2 })));
    expect(new Set(many.map((r) => r.body.messageId)).size).toBe(1);
    expect(await events(acc.id, 'message.received')).toHaveLength(2);
  });

  it('"Reactions do not trigger" message.received', async () => {
    const acc = await app.createAccount();
    const res = await app.inbound({ accountId: acc.id, from: freshPhone(), type: 'reaction', text: '👍' });
    expect(res.status).toBe(201);
    expect(await events(acc.id, 'message.received')).toHaveLength(0);
  });

  it('the social channel: contact.created source "socialchat" with the user instead of phone; message.received has source and no wamid', async () => {
    const acc = await app.createAccount();
    const res = await app.inbound({ accountId: acc.id, socialchat: 'ig_user_123', text: 'Hola desde Instagram', name: 'Caro' });
    expect(res.status).toBe(201);
    const created = await events(acc.id, 'contact.created');
    expect(created[0]!.data).toMatchObject({
      source: 'socialchat',
      contact: { phone: null, socialchat: { id: 'ig_user_123', username: null }, name: 'Caro' },
    });
    const [msg] = await events(acc.id, 'message.received');
    expect(msg!.data).toMatchObject({
      source: 'socialchat',
      contact: { id: res.body.contactId, name: 'Caro', socialchat: { id: 'ig_user_123', username: null } },
    });
    expect(msg!.data).not.toHaveProperty('wamid');
    expect(msg!.data.contact).not.toHaveProperty('phone');
  });

  it('validation: from or socialchat (one), text for type text, no future timestamp, unknown account → 404', async () => {
    const acc = await app.createAccount();
    expect((await app.inbound({ accountId: acc.id, text: 'hola' })).status).toBe(400);
    expect((await app.inbound({ accountId: acc.id, from: freshPhone(), socialchat: 'x', text: 'hola' })).status).toBe(400);
    expect((await app.inbound({ accountId: acc.id, from: freshPhone() })).status).toBe(400);
    expect((await app.inbound({ accountId: acc.id, from: '12', text: 'hola' })).status).toBe(400);
    const future = new Date(app.clock.now().getTime() + 3600_000).toISOString();
    expect((await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'hola', timestamp: future })).status).toBe(400);
    expect((await app.inbound({ accountId: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e', from: freshPhone(), text: 'hola' })).status).toBe(404);
  });

  it('the window is opened: free text is allowed after the customer writes (api.md §3 "Conversation window")', async () => {
    const acc = await app.createAccount();
    const from = freshPhone();
    expect((await acc.call('POST', '/messages', { to: from, text: 'hola' })).status).toBe(409);
    const wrote = await app.inbound({ accountId: acc.id, from, text: 'hola' });
    const reply = await acc.call('POST', '/messages', { to: from, text: '¡Hola! ¿En qué te ayudo?' });
    expect(reply.status).toBe(201);
    expect(reply.body.conversationId).toBe(wrote.body.conversationId);
  });

  it('a second number of the account is a separate conversation with its own window', async () => {
    const acc = await app.createAccount();
    const ours = freshPhone();
    const second = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone: ours });
    const from = freshPhone();
    const a = await app.inbound({ accountId: acc.id, from, text: 'hola' });
    const b = await app.inbound({ accountId: acc.id, from, text: 'hola', phoneNumberId: second.body.id });
    expect(b.body.conversationId).not.toBe(a.body.conversationId);
    const [, msg] = await events(acc.id, 'message.received');
    expect(msg!.data.to).toBe(digits(ours));
  });
});

describe('opt-out (api.md §3 "Contact opt-out", decisions.md "Channel")', () => {
  const optedOut = async (accountId: string, text: string) => {
    const r = await app.inbound({ accountId, from: freshPhone(), text });
    expect(r.status).toBe(201);
    const c = await app.rt.services.db
      .selectFrom('contacts')
      .select('opted_out')
      .where('id', '=', r.body.contactId)
      .executeTakeFirstOrThrow();
    return c.opted_out;
  };

  it('opt-out phrases, "case- and accent-insensitive, whole message": baja, Bája, STOP, no recibir más, darme de baja, desuscribir, cancelar suscripción', async () => {
    const acc = await app.createAccount();
    for (const t of ['baja', 'Bája', 'STOP', 'no recibir más', 'Darme de baja.', 'desuscribir', 'Cancelar Suscripción', '  baja!  ']) {
      expect(await optedOut(acc.id, t), t).toBe(true);
    }
    for (const t of ['quiero la baja del plan', 'stop por favor no', 'bajar precio']) {
      expect(await optedOut(acc.id, t), t).toBe(false);
    }
  });

  it('contact.opted_out {contact, via: "keyword", text} once: writing it again emits nothing', async () => {
    const acc = await app.createAccount();
    const from = freshPhone();
    const r = await app.inbound({ accountId: acc.id, from, text: 'Baja' });
    await app.inbound({ accountId: acc.id, from, text: 'baja' });
    const ev = await events(acc.id, 'contact.opted_out');
    expect(ev).toHaveLength(1);
    expect(ev[0]!.data).toMatchObject({ via: 'keyword', text: 'Baja', contact: { id: r.body.contactId, optedOut: true } });
    expect((await acc.call('GET', `/contacts/${r.body.contactId}`)).body.optedOut).toBe(true);
    // The message itself is still a message.received.
    expect(await events(acc.id, 'message.received')).toHaveLength(2);
  });

  it('"the template opt-out button" → via "button"', async () => {
    const acc = await app.createAccount();
    const r = await app.inbound({
      accountId: acc.id,
      from: freshPhone(),
      type: 'button',
      button: { text: 'No recibir promociones', payload: 'OPT_OUT', optOut: true },
    });
    expect(r.status).toBe(201);
    const ev = await events(acc.id, 'contact.opted_out');
    expect(ev).toHaveLength(1);
    expect(ev[0]!.data).toMatchObject({ via: 'button', text: 'No recibir promociones', contact: { optedOut: true } });
    const [msg] = await events(acc.id, 'message.received');
    expect(msg!.data).toMatchObject({ type: 'button', text: 'No recibir promociones' });
  });
});
