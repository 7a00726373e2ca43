// POST /messages and GET /messages/{id} (api.md §4, decisions.md "Message record"), the delivery
// status machine (api.md §3, decisions.md "Resources") and the sandbox test numbers
// (operator.md "Sandbox channel"). Statuses are moved by the sandbox status endpoint (the
// provider's report) with SANDBOX_AUTO_STATUS=off; with it on, the injected clock moves them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERED_AFTER_MS, FAIL_AFTER_MS, READ_AFTER_MS } from '../../src/channel/sandbox/provider.js';
import { newId } from '../../src/lib/ids.js';
import { sendMessage } from '../../src/messages/send.js';
import { reportStatuses } from '../../src/messages/status.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp, testNumber } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

let seq = 0;
const next = () => {
  seq += 1;
  return seq;
};

async function template(acc: TestAccount, o: { category?: string; status?: string } = {}) {
  const res = await app.admin('POST', `/accounts/${acc.id}/templates`, {
    name: `tpl_${next()}_${Date.now()}`,
    category: o.category ?? 'UTILITY',
    body: 'Hola {{nombre}}, tu pedido {{pedido}} está listo.',
    variables: [
      { name: 'nombre', label: 'Nombre', example: 'Ana' },
      { name: 'pedido', label: 'Pedido', example: 'A-1' },
    ],
    status: o.status ?? 'APPROVED',
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; name: string };
}

const events = (accountId: string, kind?: string) => app.events(accountId, kind);

const status = (wamid: string, st: string, code?: number) =>
  app.admin('POST', '/sandbox/status', { wamid, status: st, ...(code !== undefined ? { code } : {}) });

describe('POST /messages (api.md §4)', () => {
  it('"Exactly one of text and template must be sent; both or neither answers 400"', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const both = await acc.call('POST', '/messages', { to: freshPhone(), text: 'hola', template: { id: t.id } });
    expect(both.status).toBe(400);
    expect(JSON.parse(both.body.error.message)[0].path).toEqual(['template']);
    const neither = await acc.call('POST', '/messages', { to: freshPhone() });
    expect(neither.status).toBe(400);
    const badPhone = await acc.call('POST', '/messages', { to: '123', template: { id: t.id } });
    expect(badPhone.status).toBe(400);
    expect(JSON.parse(badPhone.body.error.message)[0].path).toEqual(['to']);
  });

  it('a template send → 201 Message record with status "sent"; missing variables take the contact attribute, then the example', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const to = freshPhone();
    const c = await acc.call('POST', '/contacts', { phone: to, attributes: { pedido: 'Z-99' } });
    expect(c.status).toBe(201);
    const res = await acc.call('POST', '/messages', { to, template: { id: t.id, variables: { extra: 'x' } } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      wamid: expect.stringMatching(/^wamid\./),
      status: 'sent',
      to: to.replace(/\D/g, ''),
      contactId: c.body.id,
      conversationId: expect.any(String),
      phoneNumberId: acc.phoneNumberId,
      type: 'template',
      template: { id: t.id, name: t.name, variables: { nombre: 'Ana', pedido: 'Z-99' } },
      campaignId: null,
      code: null,
      error: null,
      statusTimes: { sent: expect.any(String), delivered: null, read: null, failed: null },
    });
    expect(res.body.createdAt).toMatch(/Z$/);
    const got = await acc.call('GET', `/messages/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('"Sending to a phone that is not yet a contact creates the contact without emitting contact.created"', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const res = await acc.call('POST', '/messages', { to: freshPhone(), template: { id: t.id } });
    expect(res.status).toBe(201);
    const contact = await acc.call('GET', `/contacts/${res.body.contactId}`);
    expect(contact.status).toBe(200);
    expect(await events(acc.id, 'contact.created')).toHaveLength(0);
  });

  it('"it is subject to the contact limit of the plan (402)" with the upgrade cause; existing contacts still receive', async () => {
    const acc = await app.createAccount({ limits: { contacts: 1 } });
    const t = await template(acc);
    const first = freshPhone();
    expect((await acc.call('POST', '/messages', { to: first, template: { id: t.id } })).status).toBe(201);
    const over = await acc.call('POST', '/messages', { to: freshPhone(), template: { id: t.id } });
    expect(over.status).toBe(402);
    expect(over.body.cause).toMatchObject({ type: 'upgrade', reason: 'limit', resource: 'contacts', limit: 1, used: 1 });
    // The limit is checked before the window: free text to a new phone at the limit is a 402 too.
    expect((await acc.call('POST', '/messages', { to: freshPhone(), text: 'hola' })).status).toBe(402);
    expect((await acc.call('POST', '/messages', { to: first, template: { id: t.id } })).status).toBe(201);
  });

  it('"A blank value counts as missing": a blank variable takes the attribute, a blank attribute the example', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const to = freshPhone();
    // Only JavaScript's whitespace, as String.prototype.trim sees it (a no-break space, a tab, an ideographic space).
    expect((await acc.call('POST', '/contacts', { phone: to, attributes: { nombre: ' \u00a0\t\u3000', pedido: 'Z-7' } })).status).toBe(201);
    const res = await acc.call('POST', '/messages', { to, template: { id: t.id, variables: { pedido: ' \u2003 ' } } });
    expect(res.status).toBe(201);
    expect(res.body.template.variables).toEqual({ nombre: 'Ana', pedido: 'Z-7' });
    // A character trim keeps (U+0085, U+200B) is not blank.
    const kept = freshPhone();
    expect((await acc.call('POST', '/contacts', { phone: kept, attributes: { nombre: '\u200b' } })).status).toBe(201);
    const odd = await acc.call('POST', '/messages', { to: kept, template: { id: t.id, variables: { pedido: '\u0085' } } });
    expect(odd.body.template.variables).toEqual({ nombre: '\u200b', pedido: '\u0085' });
  });

  it('"one per account and canonical phone": concurrent first sends to one new phone store one contact and one conversation', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const to = freshPhone();
    const sent = await Promise.all(Array.from({ length: 8 }, () => acc.call('POST', '/messages', { to, template: { id: t.id } })));
    expect(sent.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect(new Set(sent.map((r) => r.body.contactId)).size).toBe(1);
    expect(new Set(sent.map((r) => r.body.conversationId)).size).toBe(1);
    const db = app.rt.services.db;
    expect(await db.selectFrom('contacts').select('id').where('account_id', '=', acc.id).execute()).toHaveLength(1);
    expect(await db.selectFrom('conversations').select('id').where('account_id', '=', acc.id).execute()).toHaveLength(1);
  });

  it('sends answered in the same turn are marked `sent` together (messages/sent-marks.ts): 30 at once → 30 × 201 `sent`, each row with its own wamid and time; a mark of a message no longer `pending` changes nothing beside the others', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const sent = await Promise.all(
      Array.from({ length: 30 }, () => acc.call('POST', '/messages', { to: freshPhone(), template: { id: t.id } })),
    );
    expect(sent.map((r) => r.status)).toEqual(Array(30).fill(201));
    expect(sent.every((r) => r.body.status === 'sent' && r.body.wamid)).toBe(true);
    expect(new Set(sent.map((r) => r.body.wamid)).size).toBe(30);
    const db = app.rt.services.db;
    const rows = await db.selectFrom('messages').select(['id', 'status', 'wamid', 'sent_at']).where('account_id', '=', acc.id).execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const r of sent) {
      const row = byId.get(r.body.id);
      expect(row).toMatchObject({ status: 'sent', wamid: r.body.wamid });
      expect(row?.sent_at?.toISOString()).toBe(r.body.statusTimes.sent);
    }
    // One statement, three marks: a message already `sent`, one that does not exist, one still `pending`.
    const [first, second] = [sent[0]!.body, sent[1]!.body];
    await db.updateTable('messages').set({ status: 'pending', wamid: null, sent_at: null }).where('id', '=', second.id).execute();
    const at = app.clock.now();
    const mark = (messageId: string, wamid: string) =>
      app.rt.services.sentMarks.mark({ messageId, wamid, at, eventId: newId(), record: JSON.stringify({ id: messageId }) });
    const outcomes = await Promise.all([mark(first.id, 'wamid.other'), mark(newId(), 'wamid.none'), mark(second.id, 'wamid.again')]);
    expect(outcomes).toEqual([
      { updated: false, early: false },
      { updated: false, early: false },
      { updated: true, early: false },
    ]);
    expect(await db.selectFrom('messages').select(['status', 'wamid']).where('id', '=', first.id).executeTakeFirst()).toEqual({
      status: 'sent',
      wamid: first.wamid,
    });
    expect(await db.selectFrom('messages').select(['status', 'wamid']).where('id', '=', second.id).executeTakeFirst()).toEqual({
      status: 'sent',
      wamid: 'wamid.again',
    });
    // A mark the database refuses (a NUL in the provider id) fails alone; the one beside it is written.
    const [third, fourth] = [sent[2]!.body, sent[3]!.body];
    await db
      .updateTable('messages')
      .set({ status: 'pending', wamid: null, sent_at: null })
      .where('id', 'in', [third.id, fourth.id])
      .execute();
    const [bad, good] = await Promise.allSettled([mark(third.id, 'wamid.\u0000'), mark(fourth.id, 'wamid.fourth')]);
    expect(bad.status).toBe('rejected');
    expect(good).toEqual({ status: 'fulfilled', value: { updated: true, early: false } });
    const statusOf = (id: string) => db.selectFrom('messages').select(['status', 'wamid']).where('id', '=', id).executeTakeFirst();
    expect(await statusOf(third.id)).toEqual({ status: 'pending', wamid: null });
    expect(await statusOf(fourth.id)).toEqual({ status: 'sent', wamid: 'wamid.fourth' });
  });

  it('"404 (template no longer exists)" after DELETE; a template "not yet approved" → 409; another account\'s → 404', async () => {
    const acc = await app.createAccount();
    const other = await app.createAccount();
    const t = await template(acc);
    expect((await app.admin('DELETE', `/accounts/${acc.id}/templates/${t.id}`)).status).toBe(204);
    const gone = await acc.call('POST', '/messages', { to: freshPhone(), template: { id: t.id } });
    expect(gone.status).toBe(404);
    expect(gone.body.cause).toBeNull();
    const pending = await template(acc, { status: 'PENDING' });
    const notYet = await acc.call('POST', '/messages', { to: freshPhone(), template: { id: pending.id } });
    expect(notYet.status).toBe(409);
    expect(notYet.body.error).toMatch(/aprobada/);
    const foreign = await template(other);
    expect((await acc.call('POST', '/messages', { to: freshPhone(), template: { id: foreign.id } })).status).toBe(404);
  });

  it('"no connected number with the given phoneNumberId" → 409; an account without numbers → 409', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const unknown = await acc.call('POST', '/messages', { to: freshPhone(), template: { id: t.id }, phoneNumberId: newId() });
    expect(unknown.status).toBe(409);

    const bare = await app.admin('POST', '/accounts', { name: 'Sin número', plan: 'escala' });
    const key = await app.admin('POST', `/accounts/${bare.body.id}/keys`, { name: 'k' });
    const bareTpl = await app.admin('POST', `/accounts/${bare.body.id}/templates`, {
      name: 'hola',
      category: 'UTILITY',
      body: 'Hola',
      variables: [],
      status: 'APPROVED',
    });
    const none = await app.api(key.body.key, 'POST', '/messages', { to: freshPhone(), template: { id: bareTpl.body.id } });
    expect(none.status).toBe(409);
    expect(none.body.error).toMatch(/número conectado/);
  });

  it('GET /messages/{id}: "404 when the message does not exist in the account" (another account\'s id too)', async () => {
    const acc = await app.createAccount();
    const other = await app.createAccount();
    const t = await template(acc);
    const sent = await acc.call('POST', '/messages', { to: freshPhone(), template: { id: t.id } });
    expect((await other.call('GET', `/messages/${sent.body.id}`)).status).toBe(404);
    expect((await acc.call('GET', `/messages/${newId()}`)).status).toBe(404);
    expect((await acc.call('GET', '/messages/not-a-uuid')).status).toBe(404);
  });
});

describe('the 24-hour window (api.md §3, decisions.md "Channel")', () => {
  it('"Free text may be sent only within 24 hours after the contact\'s last inbound message" → 409 otherwise', async () => {
    const acc = await app.createAccount();
    const to = freshPhone();
    const never = await acc.call('POST', '/messages', { to, text: 'hola' });
    expect(never.status).toBe(409);
    expect(never.body.error).toMatch(/24 horas/);
    // A rejected send leaves no contact behind, with a contact limit or without one.
    expect(await app.rt.services.db.selectFrom('contacts').select('id').where('account_id', '=', acc.id).execute()).toHaveLength(0);
    const unlimited = await app.createAccount({ limits: { contacts: null } });
    expect((await unlimited.call('POST', '/messages', { to, text: 'hola' })).status).toBe(409);
    expect(await app.rt.services.db.selectFrom('contacts').select('id').where('account_id', '=', unlimited.id).execute()).toHaveLength(0);

    const now = app.clock.now().getTime();
    const wrote = await app.inbound({ accountId: acc.id, from: to, text: 'hola', timestamp: new Date(now - 23 * 3600_000).toISOString() });
    expect(wrote.status).toBe(201);
    const ok = await acc.call('POST', '/messages', { to, text: 'Hola, ¿en qué te ayudo?' });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({
      type: 'text',
      text: 'Hola, ¿en qué te ayudo?',
      status: 'sent',
      conversationId: wrote.body.conversationId,
    });
    expect(ok.body.template).toBeUndefined();

    app.clock.advance(3600_000 + 1);
    expect((await acc.call('POST', '/messages', { to, text: 'sigo acá' })).status).toBe(409);
    // A template may be sent at any time.
    const t = await template(acc);
    expect((await acc.call('POST', '/messages', { to, template: { id: t.id } })).status).toBe(201);
  });

  it('"measured from the provider timestamp": a message received now but sent 25 h ago opens no window', async () => {
    const acc = await app.createAccount();
    const to = freshPhone();
    const now = app.clock.now().getTime();
    const wrote = await app.inbound({ accountId: acc.id, from: to, text: 'hola', timestamp: new Date(now - 25 * 3600_000).toISOString() });
    expect(wrote.status).toBe(201);
    const res = await acc.call('POST', '/messages', { to, text: 'hola' });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/24 horas/);
  });

  it('an older provider timestamp arriving late never shrinks the window', async () => {
    const acc = await app.createAccount();
    const to = freshPhone();
    const now = app.clock.now().getTime();
    const recent = await app.inbound({ accountId: acc.id, from: to, text: 'hola', timestamp: new Date(now - 3600_000).toISOString() });
    const late = await app.inbound({ accountId: acc.id, from: to, text: 'viejo', timestamp: new Date(now - 30 * 3600_000).toISOString() });
    expect([recent.status, late.status]).toEqual([201, 201]);
    expect(late.body.conversationId).toBe(recent.body.conversationId);
    expect((await acc.call('POST', '/messages', { to, text: 'respuesta' })).status).toBe(201);
    // The window still ends 24 h after the recent message, not the late one.
    app.clock.advance(23 * 3600_000 + 1);
    expect((await acc.call('POST', '/messages', { to, text: 'tarde' })).status).toBe(409);
  });

  it('opted-out contact (our decision): a template → 409; free text inside the window is still allowed', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const to = freshPhone();
    await app.inbound({ accountId: acc.id, from: to, text: 'BAJA' });
    const tpl = await acc.call('POST', '/messages', { to, template: { id: t.id } });
    expect(tpl.status).toBe(409);
    expect(tpl.body.error).toMatch(/no recibir más mensajes/);
    expect((await acc.call('POST', '/messages', { to, text: 'Listo, no te escribimos más.' })).status).toBe(201);
    // A refused send leaves nothing behind: no conversation on another number either.
    const other = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone: freshPhone(), name: 'Otro', provider: 'sandbox' });
    expect(other.status).toBe(201);
    const there = await acc.call('POST', '/messages', { to, template: { id: t.id }, phoneNumberId: other.body.id });
    expect(there.status).toBe(409);
    const convs = await app.rt.services.db.selectFrom('conversations').select('phone_number_id').where('account_id', '=', acc.id).execute();
    expect(convs.map((c) => c.phone_number_id)).toEqual([acc.phoneNumberId]);
  });
});

describe('sandbox test numbers (operator.md "Sandbox channel")', () => {
  it('"0002 rejected at send → 502 with the provider\'s reason"; the message is kept as failed', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const res = await acc.call('POST', '/messages', { to: testNumber('0002'), template: { id: t.id } });
    expect(res.status).toBe(502);
    expect(res.body.error).toMatch(/rechazó el mensaje: .*0002/);
    expect(res.body.cause).toBeNull();
    const kept = await acc.call('GET', `/messages/${res.body.messageId}`);
    expect(kept.body).toMatchObject({ status: 'failed', wamid: null, code: 131030 });
  });

  it('"0001 accepted, then failed with code 131026" (at once with SANDBOX_AUTO_STATUS=off): 201 sent, then failed with the Spanish error', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const res = await acc.call('POST', '/messages', { to: testNumber('0001'), template: { id: t.id } });
    expect(res.status).toBe(201);
    expect(res.body.status).toBe('sent');
    const got = await acc.call('GET', `/messages/${res.body.id}`);
    expect(got.body).toMatchObject({ status: 'failed', code: 131026, error: expect.stringMatching(/No se pudo entregar/) });
    expect(got.body.statusTimes.failed).toEqual(expect.any(String));
    const ev = await events(acc.id, 'message.status');
    expect(ev.map((e) => e.data)).toEqual([
      { id: res.body.id, wamid: res.body.wamid, status: 'failed', campaignId: null, code: 131026, timestamp: expect.any(String) },
    ]);
    // The report came before the send stored its wamid: it was kept, then used once.
    const left = await app.rt.services.db.selectFrom('early_statuses').selectAll().where('wamid', '=', res.body.wamid).execute();
    expect(left).toHaveLength(0);
  });

  it('"0003 marketing blocked: a MARKETING template fails with 131050 and sets marketingOptOut"; a UTILITY one is not blocked', async () => {
    const acc = await app.createAccount();
    const mkt = await template(acc, { category: 'MARKETING' });
    const util = await template(acc);
    const to = testNumber('0003');
    const u = await acc.call('POST', '/messages', { to, template: { id: util.id } });
    expect((await acc.call('GET', `/messages/${u.body.id}`)).body.status).toBe('sent');
    const m = await acc.call('POST', '/messages', { to, template: { id: mkt.id } });
    expect(m.status).toBe(201);
    expect((await acc.call('GET', `/messages/${m.body.id}`)).body).toMatchObject({ status: 'failed', code: 131050 });
    const contact = await acc.call('GET', `/contacts/${m.body.contactId}`);
    expect(contact.body).toMatchObject({ marketingOptOut: true, optedOut: false });
  });
});

describe('delivery status machine (api.md §3, decisions.md "Resources")', () => {
  const sendOne = async (acc: TestAccount) => {
    const t = await template(acc);
    const res = await acc.call('POST', '/messages', { to: freshPhone(), template: { id: t.id } });
    expect(res.status).toBe(201);
    return res.body as { id: string; wamid: string };
  };

  it('"sent < delivered < read"; "A report that would move a status backward, or repeats one, changes nothing and emits nothing"', async () => {
    const acc = await app.createAccount();
    const m = await sendOne(acc);
    expect((await status(m.wamid, 'delivered')).body).toMatchObject({ applied: true, status: 'delivered', messageId: m.id });
    expect((await status(m.wamid, 'delivered')).body).toMatchObject({ applied: false, status: 'delivered' });
    expect((await status(m.wamid, 'sent')).body.applied).toBe(false);
    expect((await status(m.wamid, 'read')).body).toMatchObject({ applied: true, status: 'read' });
    expect((await status(m.wamid, 'delivered')).body.applied).toBe(false);
    // "failed may follow sent or delivered, never read"
    expect((await status(m.wamid, 'failed', 131026)).body).toMatchObject({ applied: false, status: 'read' });
    const got = await acc.call('GET', `/messages/${m.id}`);
    expect(got.body).toMatchObject({ status: 'read', code: null, error: null });
    expect(got.body.statusTimes).toEqual({
      sent: expect.any(String),
      delivered: expect.any(String),
      read: expect.any(String),
      failed: null,
    });
    const ev = await events(acc.id, 'message.status');
    expect(ev.map((e) => (e.data as any).status)).toEqual(['delivered', 'read']);
    expect(ev[0]!.data).toEqual({
      id: m.id,
      wamid: m.wamid,
      status: 'delivered',
      campaignId: null,
      code: null,
      timestamp: expect.any(String),
    });
  });

  it('"failed ... is final" with the provider code: later reports change nothing', async () => {
    const acc = await app.createAccount();
    const m = await sendOne(acc);
    await status(m.wamid, 'delivered');
    expect((await status(m.wamid, 'failed', 131026)).body).toMatchObject({ applied: true, status: 'failed' });
    expect((await status(m.wamid, 'read')).body.applied).toBe(false);
    expect((await status(m.wamid, 'failed', 131000)).body.applied).toBe(false);
    expect((await acc.call('GET', `/messages/${m.id}`)).body).toMatchObject({ status: 'failed', code: 131026 });
    expect((await events(acc.id, 'message.status')).map((e) => (e.data as any).code)).toEqual([null, 131026]);
  });

  it('"several changes reported together → the most advanced one only (may be read without a prior delivered event)", one event', async () => {
    const acc = await app.createAccount();
    const m = await sendOne(acc);
    const at = app.clock.now();
    await reportStatuses(app.rt.services, [
      { wamid: m.wamid, status: 'delivered', at },
      { wamid: m.wamid, status: 'read', at },
      { wamid: m.wamid, status: 'sent', at },
    ]);
    const ev = await events(acc.id, 'message.status');
    expect(ev.map((e) => (e.data as any).status)).toEqual(['read']);
    const got = await acc.call('GET', `/messages/${m.id}`);
    expect(got.body.status).toBe('read');
    expect(got.body.statusTimes.delivered).toEqual(expect.any(String));
  });

  it('"A status report that arrives before the wamid is stored must not be lost" (architecture.md): kept, then applied', async () => {
    const acc = await app.createAccount();
    const wamid = `wamid.EARLY${Date.now()}`;
    const early = await status(wamid, 'delivered');
    expect(early.body).toMatchObject({ applied: false, early: true, messageId: null });
    await status(wamid, 'read');
    // A message that takes this wamid (as a send does when the provider answers) gets the most advanced kept report.
    const m = await sendOne(acc);
    const { applyEarlyStatuses } = await import('../../src/messages/status.js');
    await app.rt.services.db.updateTable('messages').set({ wamid }).where('id', '=', m.id).execute();
    const applied = await applyEarlyStatuses(app.rt.services, wamid);
    expect(applied?.status).toBe('read');
    expect((await acc.call('GET', `/messages/${m.id}`)).body.status).toBe('read');
    expect((await events(acc.id, 'message.status')).map((e) => (e.data as any).status)).toEqual(['read']);
    expect(await applyEarlyStatuses(app.rt.services, wamid)).toBeNull();
  });

  it('"must not be lost": a report kept while the send\'s `sent` statement ran (no message id, not seen by it) is applied by the case-timeouts job', async () => {
    const acc = await app.createAccount();
    const m = await sendOne(acc);
    // As the race leaves it: the message has its wamid and `sent`, the report waits as early.
    const at = app.clock.now();
    await app.rt.services.db
      .insertInto('early_statuses')
      .values({ wamid: m.wamid, status: 'delivered', code: null, reported_at: at, created_at: at })
      .execute();
    const job = await app.admin('POST', '/jobs/case-timeouts/run', {});
    expect(job.status).toBe(200);
    expect((await acc.call('GET', `/messages/${m.id}`)).body.status).toBe('delivered');
    expect((await events(acc.id, 'message.status')).map((e) => (e.data as any).status)).toEqual(['delivered']);
    const left = await app.rt.services.db.selectFrom('early_statuses').selectAll().where('wamid', '=', m.wamid).execute();
    expect(left).toHaveLength(0);
  });

  it('campaign counters follow the status reports of campaign messages (decisions.md "Campaigns")', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const db = app.rt.services.db;
    const campaignId = newId();
    await db
      .insertInto('campaigns')
      .values({ id: campaignId, account_id: acc.id, name: 'c', template_id: t.id, created_at: app.clock.now() })
      .execute();
    const account = await db.selectFrom('accounts').selectAll().where('id', '=', acc.id).executeTakeFirstOrThrow();
    const a = await sendMessage(app.rt.services, account, { to: freshPhone(), template: { id: t.id }, campaignId });
    const b = await sendMessage(app.rt.services, account, { to: freshPhone(), template: { id: t.id }, campaignId });
    const c = await sendMessage(app.rt.services, account, { to: freshPhone(), template: { id: t.id }, campaignId });
    expect(a.campaignId).toBe(campaignId);
    await status(a.wamid!, 'delivered');
    await status(a.wamid!, 'read');
    await status(b.wamid!, 'read'); // jump: counts as delivered too
    await status(b.wamid!, 'delivered'); // backward: nothing
    await status(c.wamid!, 'failed', 131026);
    const row = await db.selectFrom('campaigns').selectAll().where('id', '=', campaignId).executeTakeFirstOrThrow();
    expect({ delivered: row.delivered, read: row.read, failed: row.failed }).toEqual({ delivered: 2, read: 2, failed: 1 });
    const ev = await events(acc.id, 'message.status');
    expect(ev.every((e) => (e.data as any).campaignId === campaignId)).toBe(true);
  });
});

describe('SANDBOX_AUTO_STATUS=on (operator.md "Configuration")', () => {
  /** An approved template and a send to each of `to`, on an app with automatic statuses. */
  async function sendAuto(a: TestApp, to: string[]) {
    const acc = await a.createAccount();
    const t = await a.admin('POST', `/accounts/${acc.id}/templates`, {
      name: 'auto',
      category: 'UTILITY',
      body: 'Hola',
      status: 'APPROVED',
    });
    expect(t.status).toBe(201);
    const sent: { id: string; wamid: string }[] = [];
    for (const phone of to) {
      const res = await acc.call('POST', '/messages', { to: phone, template: { id: t.body.id } });
      expect(res.status).toBe(201);
      sent.push(res.body);
    }
    return { acc, sent };
  }

  /** Runs the sandbox-statuses job now (POST /admin/v1/jobs/{name}/run): every report due by the clock is applied. */
  async function applyDue(a: TestApp): Promise<void> {
    const res = await a.admin('POST', '/jobs/sandbox-statuses/run');
    expect(res.status).toBe(200);
  }

  it('"the sandbox reports delivered after ~1 s and read after ~3 s"; 0001 fails ≈1 s later — by the service clock, through the sandbox-statuses job', async () => {
    const auto = await startTestApp({ env: { SANDBOX_AUTO_STATUS: 'on' } });
    try {
      const t0 = auto.clock.ms();
      const { acc, sent } = await sendAuto(auto, [freshPhone(), testNumber('0001')]);
      const [ok, bad] = sent as [{ id: string; wamid: string }, { id: string; wamid: string }];
      const statusOf = async (id: string) => (await acc.call('GET', `/messages/${id}`)).body;

      auto.clock.advance(DELIVERED_AFTER_MS - 1);
      await applyDue(auto);
      expect([(await statusOf(ok.id)).status, (await statusOf(bad.id)).status]).toEqual(['sent', 'sent']);

      auto.clock.advance(1);
      await applyDue(auto);
      expect((await statusOf(ok.id)).status).toBe('delivered');
      expect(await statusOf(bad.id)).toMatchObject({ status: 'failed', code: 131026 });

      auto.clock.advance(READ_AFTER_MS - DELIVERED_AFTER_MS - 1);
      await applyDue(auto);
      expect((await statusOf(ok.id)).status).toBe('delivered');
      auto.clock.advance(1);
      await applyDue(auto);
      expect((await statusOf(ok.id)).status).toBe('read');

      // Each report carries the time the sandbox says it happened, and is applied once.
      const reported = (await auto.events(acc.id, 'message.status'))
        .map((e) => [e.data.id, e.data.status, e.data.timestamp])
        .sort((x, y) => `${x[2]} ${x[1]}`.localeCompare(`${y[2]} ${y[1]}`));
      expect(reported).toEqual([
        [ok.id, 'delivered', new Date(t0 + DELIVERED_AFTER_MS).toISOString()],
        [bad.id, 'failed', new Date(t0 + FAIL_AFTER_MS).toISOString()],
        [ok.id, 'read', new Date(t0 + READ_AFTER_MS).toISOString()],
      ]);
      expect(await auto.rt.services.db.selectFrom('sandbox_reports').select('id').execute()).toEqual([]);
    } finally {
      await auto.close();
    }
  });

  it.skipIf(!process.env.DATABASE_URL)(
    'scheduled reports are rows with a run_at: a process that stops before they are due loses none (another process applies them)',
    async () => {
      const first = await startTestApp({ env: { SANDBOX_AUTO_STATUS: 'on' } });
      const next = await startTestApp({ env: { SANDBOX_AUTO_STATUS: 'on' }, sameDataAs: first, clock: first.clock });
      try {
        const { acc, sent } = await sendAuto(first, [freshPhone()]);
        await first.close();
        first.clock.advance(READ_AFTER_MS);
        await applyDue(next);
        expect((await next.api(acc.key, 'GET', `/messages/${sent[0]!.id}`)).body.status).toBe('read');
        expect((await next.events(acc.id, 'message.status')).map((e) => e.data.status)).toEqual(['delivered', 'read']);
      } finally {
        await first.close();
        await next.close();
      }
    },
  );
});
