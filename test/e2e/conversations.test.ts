// Conversations (decisions.md "Conversations"): GET /conversations, /conversations/{id},
// /conversations/{id}/messages; the team reply and the notes of the operator API (operator.md
// "Conversations"); sending with an origin (the case's handledBy, the conversation's handling,
// cancelling a running automation execution).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAccount } from '../../src/accounts/service.js';
import { addNote } from '../../src/conversations/service.js';
import { newId } from '../../src/lib/ids.js';
import { sendMessage } from '../../src/messages/send.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const HOUR = 60 * 60 * 1000;
const db = () => app.rt.services.db;

let seq = 0;
async function template(acc: TestAccount) {
  seq += 1;
  const res = await app.admin('POST', `/accounts/${acc.id}/templates`, {
    name: `conv_tpl_${seq}_${Date.now()}`,
    category: 'UTILITY',
    body: 'Hola {{nombre}}, te escribimos por tu consulta.',
    variables: [{ name: 'nombre', label: 'Nombre', example: 'Ana' }],
    status: 'APPROVED',
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; name: string };
}

/** A customer writes; returns the inbound answer ({messageId, contactId, conversationId}). */
async function customerWrites(acc: TestAccount, from: string, extra: Record<string, unknown> = {}) {
  const res = await app.inbound({ accountId: acc.id, from, text: 'Hola, ¿tienen envío?', name: 'Ana Pérez', ...extra });
  expect(res.status).toBe(201);
  return res.body as { messageId: string; contactId: string; conversationId: string };
}

const openCaseOf = async (conversationId: string) =>
  (
    await db()
      .selectFrom('cases')
      .select('id')
      .where('conversation_id', '=', conversationId)
      .where('status', '=', 'open')
      .executeTakeFirst()
  )?.id ?? null;

const teamReply = (acc: TestAccount, conversationId: string, body: Record<string, unknown>) =>
  app.admin('POST', `/accounts/${acc.id}/conversations/${conversationId}/messages`, body);

describe('GET /api/v1/conversations (decisions.md "Conversations")', () => {
  it('"ordered by id, cursor `after` as GET /contacts": pages of `limit` with hasMore and nextCursor; contactId and channel filter', async () => {
    const acc = await app.createAccount();
    const a = await customerWrites(acc, freshPhone());
    const b = await customerWrites(acc, freshPhone());
    const c = await customerWrites(acc, freshPhone());
    const social = await app.inbound({ accountId: acc.id, socialchat: `ig-${newId()}`, text: 'Hola desde Instagram' });
    expect(social.status).toBe(201);

    const all = await acc.call('GET', '/conversations');
    expect(all.status).toBe(200);
    const ids = [a.conversationId, b.conversationId, c.conversationId, social.body.conversationId];
    expect(all.body.data.map((x: { id: string }) => x.id)).toEqual([...ids].sort());
    expect(all.body.hasMore).toBe(false);
    expect(all.body.nextCursor).toBeNull();

    const first = await acc.call('GET', '/conversations?limit=2');
    expect(first.body.data).toHaveLength(2);
    expect(first.body.hasMore).toBe(true);
    expect(first.body.nextCursor).toBe(first.body.data[1].id);
    const second = await acc.call('GET', `/conversations?limit=2&after=${first.body.nextCursor}`);
    expect(second.body.data).toHaveLength(2);
    expect(second.body.hasMore).toBe(false);
    expect([...first.body.data, ...second.body.data].map((x: { id: string }) => x.id)).toEqual([...ids].sort());

    const byContact = await acc.call('GET', `/conversations?contactId=${b.contactId}`);
    expect(byContact.body.data.map((x: { id: string }) => x.id)).toEqual([b.conversationId]);
    const socialOnly = await acc.call('GET', '/conversations?channel=socialchat');
    expect(socialOnly.body.data).toHaveLength(1);
    expect(socialOnly.body.data[0]).toMatchObject({ id: social.body.conversationId, channel: 'socialchat', socialAccountId: null });
    expect(socialOnly.body.data[0]).not.toHaveProperty('phoneNumberId');
    const whatsapp = await acc.call('GET', '/conversations?channel=whatsapp');
    expect(whatsapp.body.data).toHaveLength(3);

    for (const bad of ['limit=0', 'limit=201', 'after=nope', 'contactId=nope', 'channel=sms']) {
      const r = await acc.call('GET', `/conversations?${bad}`);
      expect(r.status, bad).toBe(400);
    }
  });

  it('"An API key sees only its account": another account lists none of them and gets 404 for their ids', async () => {
    const acc = await app.createAccount();
    const other = await app.createAccount();
    const mine = await customerWrites(acc, freshPhone());
    const list = await other.call('GET', '/conversations');
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([]);
    const one = await other.call('GET', `/conversations/${mine.conversationId}`);
    expect(one.status).toBe(404);
    expect(one.body.error).toBe('No encontramos esa conversación en tu cuenta. Revisá el id.');
    const msgs = await other.call('GET', `/conversations/${mine.conversationId}/messages`);
    expect(msgs.status).toBe(404);
    expect(msgs.body.error).toBe('No encontramos esa conversación en tu cuenta. Revisá el id.');
    const filtered = await other.call('GET', `/conversations?contactId=${mine.contactId}`);
    expect(filtered.body.data).toEqual([]);
    // An id that is not a UUID names nothing in the account: 404, as GET /contacts/{id}.
    const malformed = await acc.call('GET', '/conversations/not-a-uuid');
    expect(malformed.status).toBe(404);
    expect((await acc.call('GET', '/contacts/not-a-uuid')).status).toBe(404);
  });

  it('the Conversation record: "windowOpenUntil (lastInboundAt + 24 h or null)", openCaseId, handling null', async () => {
    const acc = await app.createAccount();
    const to = freshPhone();
    // The business writes first: a conversation with no inbound message and no case.
    const t = await template(acc);
    const sent = await acc.call('POST', '/messages', { to, template: { id: t.id } });
    expect(sent.status).toBe(201);
    const before = await acc.call('GET', `/conversations/${sent.body.conversationId}`);
    expect(before.status).toBe(200);
    expect(before.body).toEqual({
      id: sent.body.conversationId,
      contactId: sent.body.contactId,
      channel: 'whatsapp',
      phoneNumberId: acc.phoneNumberId,
      lastInboundAt: null,
      windowOpenUntil: null,
      handling: { type: null, id: null, name: null },
      openCaseId: null,
      createdAt: expect.any(String),
    });

    const at = new Date(app.clock.ms() - HOUR);
    const w = await customerWrites(acc, to, { timestamp: at.toISOString() });
    expect(w.conversationId).toBe(sent.body.conversationId);
    const after = await acc.call('GET', `/conversations/${w.conversationId}`);
    expect(after.body.lastInboundAt).toBe(at.toISOString());
    expect(after.body.windowOpenUntil).toBe(new Date(at.getTime() + 24 * HOUR).toISOString());
    const caseId = await openCaseOf(w.conversationId);
    expect(caseId).not.toBeNull();
    expect(after.body.openCaseId).toBe(caseId);
    expect(after.body.handling).toEqual({ type: null, id: null, name: null });
  });

  it('"Both count as API calls like every /api/v1 route": GET /me usage.apiCalls moves', async () => {
    const acc = await app.createAccount();
    const w = await customerWrites(acc, freshPhone());
    const before = (await acc.call('GET', '/me')).body.usage.apiCalls as number;
    expect((await acc.call('GET', '/conversations')).status).toBe(200);
    expect((await acc.call('GET', `/conversations/${w.conversationId}`)).status).toBe(200);
    expect((await acc.call('GET', `/conversations/${w.conversationId}/messages`)).status).toBe(200);
    app.clock.advance(2_001); // past GET /me's kept view
    const after = (await acc.call('GET', '/me')).body.usage.apiCalls as number;
    // The three reads and this GET /me.
    expect(after).toBe(before + 4);
  });
});

describe('GET /api/v1/conversations/{id}/messages (decisions.md "Conversations")', () => {
  it('"oldest first, both directions": inbound `from: "contact"`, outbound `from` its source (api, team with `by`)', async () => {
    const acc = await app.createAccount();
    const phone = freshPhone();
    const w = await customerWrites(acc, phone, { type: 'image', text: 'Foto del pedido' });
    const api = await acc.call('POST', '/messages', { to: phone, text: 'Recibido, gracias' });
    expect(api.status).toBe(201);
    const team = await teamReply(acc, w.conversationId, { text: 'Soy Laura, te ayudo', by: { id: 'u-17', name: 'Laura' } });
    expect(team.status).toBe(201);
    const again = await customerWrites(acc, phone, { text: '¡Gracias!' });

    const res = await acc.call('GET', `/conversations/${w.conversationId}/messages`);
    expect(res.status).toBe(200);
    expect(res.body.hasMore).toBe(false);
    const items = res.body.data;
    expect(items.map((m: { id: string }) => m.id)).toEqual([w.messageId, api.body.id, team.body.id, again.messageId]);
    expect(items[0]).toMatchObject({
      direction: 'inbound',
      from: 'contact',
      by: null,
      type: 'image',
      text: 'Foto del pedido',
      status: 'received',
      timestamp: expect.any(String),
    });
    expect(items[1]).toMatchObject({
      direction: 'outbound',
      from: 'api',
      by: null,
      type: 'text',
      text: 'Recibido, gracias',
      to: api.body.to,
    });
    expect(items[2]).toMatchObject({ direction: 'outbound', from: 'team', by: { id: 'u-17', name: 'Laura' }, text: 'Soy Laura, te ayudo' });
    expect(items[3]).toMatchObject({ from: 'contact', text: '¡Gracias!' });
    // Apart from `from` and `by`, an item is the Message record of GET /messages/{id}.
    const record = await acc.call('GET', `/messages/${api.body.id}`);
    const { from: _f, by: _b, ...rest } = items[1];
    expect(rest).toEqual(record.body);
    // GET /messages/{id} keeps the customer's phone in `from` for inbound messages.
    expect((await acc.call('GET', `/messages/${w.messageId}`)).body.from).toBe(phone.replace(/\D/g, ''));

    const page1 = await acc.call('GET', `/conversations/${w.conversationId}/messages?limit=3`);
    expect(page1.body.data).toHaveLength(3);
    expect(page1.body.hasMore).toBe(true);
    const page2 = await acc.call('GET', `/conversations/${w.conversationId}/messages?limit=3&after=${page1.body.nextCursor}`);
    expect(page2.body.data.map((m: { id: string }) => m.id)).toEqual([again.messageId]);
    expect(page2.body.hasMore).toBe(false);
    expect((await acc.call('GET', `/conversations/${w.conversationId}/messages?limit=500`)).status).toBe(400);
  });
});

describe('POST /admin/v1/accounts/{id}/conversations/{cid}/messages (a team reply)', () => {
  it('→ 201 Message record sent from the conversation number; "free text only within 24 h" → 409 like POST /messages; a template outside the window works', async () => {
    const acc = await app.createAccount();
    const phone = freshPhone();
    const w = await customerWrites(acc, phone, { timestamp: new Date(app.clock.ms() - 25 * HOUR).toISOString() });
    const closed = await teamReply(acc, w.conversationId, { text: 'Hola', by: { name: 'Laura' } });
    const viaApi = await acc.call('POST', '/messages', { to: phone, text: 'Hola' });
    expect(closed.status).toBe(409);
    expect(viaApi.status).toBe(409);
    expect(closed.body).toEqual(viaApi.body);
    // Nothing was stored nor taken over by the refused reply.
    expect((await acc.call('GET', `/conversations/${w.conversationId}`)).body.handling.type).toBeNull();

    const t = await template(acc);
    const ok = await teamReply(acc, w.conversationId, { template: { id: t.id }, by: { name: 'Laura' } });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({
      status: 'sent',
      direction: 'outbound',
      type: 'template',
      conversationId: w.conversationId,
      contactId: w.contactId,
      phoneNumberId: acc.phoneNumberId,
      template: { id: t.id, name: t.name, variables: { nombre: 'Ana' } },
    });
    const listed = (await acc.call('GET', `/conversations/${w.conversationId}/messages`)).body.data;
    expect(listed.at(-1)).toMatchObject({ id: ok.body.id, from: 'team', by: { id: null, name: 'Laura' } });
  });

  it('"strict" body, unknown account or conversation → 404, a socialchat conversation without a social account → 409', async () => {
    const acc = await app.createAccount();
    const other = await app.createAccount();
    const w = await customerWrites(acc, freshPhone());
    const by = { id: 'u-1', name: 'Laura' };
    expect((await teamReply(acc, w.conversationId, { text: 'Hola', by, extra: 1 })).status).toBe(400);
    expect((await teamReply(acc, w.conversationId, { text: 'Hola' })).status).toBe(400);
    expect((await teamReply(acc, w.conversationId, { text: 'Hola', by: { name: '' } })).status).toBe(400);
    expect((await teamReply(acc, w.conversationId, { text: 'Hola', by: { id: 'x'.repeat(201), name: 'L' } })).status).toBe(400);
    expect((await teamReply(acc, w.conversationId, { by })).status).toBe(400);
    expect((await teamReply(other, w.conversationId, { text: 'Hola', by })).status).toBe(404);
    expect((await app.admin('POST', `/accounts/${newId()}/conversations/${w.conversationId}/messages`, { text: 'Hola', by })).status).toBe(
      404,
    );
    expect((await teamReply(acc, newId(), { text: 'Hola', by })).status).toBe(404);

    const social = await app.inbound({ accountId: acc.id, socialchat: `ig-${newId()}`, text: 'Hola' });
    const r = await teamReply(acc, social.body.conversationId, { text: 'Hola', by });
    expect(r.status).toBe(409);
    // A social conversation simulated without a social account has nothing to answer through.
    expect(r.body.error).toMatch(/^Esta conversación de Instagram no tiene una cuenta social conectada/);
  });

  it('the open case\'s handledBy becomes "human"; the conversation\'s handling becomes team and lapses when its case closes', async () => {
    const acc = await app.createAccount();
    const phone = freshPhone();
    const w = await customerWrites(acc, phone);
    const caseId = await openCaseOf(w.conversationId);
    expect((await acc.call('GET', `/cases/${caseId}`)).body.handledBy).toBe('none');
    // An API send does not say who answered.
    expect((await acc.call('POST', '/messages', { to: phone, text: 'Hola' })).status).toBe(201);
    expect((await acc.call('GET', `/cases/${caseId}`)).body.handledBy).toBe('none');

    const r = await teamReply(acc, w.conversationId, { text: 'Te ayudo yo', by: { id: 'u-17', name: 'Laura' } });
    expect(r.status).toBe(201);
    expect((await acc.call('GET', `/cases/${caseId}`)).body.handledBy).toBe('human');
    const conv = await acc.call('GET', `/conversations/${w.conversationId}`);
    expect(conv.body.handling).toEqual({ type: 'team', id: 'u-17', name: 'Laura' });
    expect(conv.body.openCaseId).toBe(caseId);
    // No event says who handles it.
    expect((await app.events(acc.id)).map((e) => e.kind)).not.toContain('case.updated');

    const close = await app.admin('POST', `/accounts/${acc.id}/cases/${caseId}/close`, { by: { id: 'u-17', name: 'Laura' } });
    expect(close.status).toBe(200);
    const lapsed = await acc.call('GET', `/conversations/${w.conversationId}`);
    expect(lapsed.body.handling).toEqual({ type: null, id: null, name: null });
    expect(lapsed.body.openCaseId).toBeNull();
    const listed = await acc.call('GET', `/conversations?contactId=${w.contactId}`);
    expect(listed.body.data[0].handling).toEqual({ type: null, id: null, name: null });
  });

  it('"when handling_case_id is null, team stays": a team reply with no open case keeps showing the team', async () => {
    const acc = await app.createAccount();
    const phone = freshPhone();
    const w = await customerWrites(acc, phone);
    const caseId = await openCaseOf(w.conversationId);
    expect((await app.admin('POST', `/accounts/${acc.id}/cases/${caseId}/close`)).status).toBe(200);
    const r = await teamReply(acc, w.conversationId, { text: 'Seguimos acá', by: { name: 'Pablo' } });
    expect(r.status).toBe(201);
    const conv = await acc.call('GET', `/conversations/${w.conversationId}`);
    expect(conv.body.openCaseId).toBeNull();
    expect(conv.body.handling).toEqual({ type: 'team', id: null, name: 'Pablo' });
    // The closed case does not move.
    expect((await acc.call('GET', `/cases/${caseId}`)).body.handledBy).toBe('none');
  });

  it('"a team member sends in the conversation" cancels its running execution: status cancelled, ended_at set, no automation.* event', async () => {
    const acc = await app.createAccount();
    const w = await customerWrites(acc, freshPhone());
    const now = app.clock.now();
    const automationId = newId();
    const executionId = newId();
    await db()
      .insertInto('automations')
      .values({
        id: automationId,
        account_id: acc.id,
        name: 'Bienvenida',
        status: 'active',
        trigger: JSON.stringify({ type: 'first_message' }),
        steps: JSON.stringify([]),
        created_at: now,
        updated_at: now,
      })
      .execute();
    await db()
      .insertInto('automation_executions')
      .values({
        id: executionId,
        account_id: acc.id,
        automation_id: automationId,
        conversation_id: w.conversationId,
        contact_id: w.contactId,
        status: 'running',
        state: 'asked',
        trigger: 'first_message',
        run_at: new Date(now.getTime() + HOUR),
        started_at: now,
        updated_at: now,
      })
      .execute();
    await db()
      .updateTable('conversations')
      .set({ handling_type: 'automation', handling_id: automationId, handling_name: 'Bienvenida' })
      .where('id', '=', w.conversationId)
      .execute();
    expect((await acc.call('GET', `/conversations/${w.conversationId}`)).body.handling).toEqual({
      type: 'automation',
      id: automationId,
      name: 'Bienvenida',
    });

    app.clock.advance(5_000);
    const r = await teamReply(acc, w.conversationId, { text: 'Sigo yo', by: { id: 'u-9', name: 'Laura' } });
    expect(r.status).toBe(201);
    const ex = await db().selectFrom('automation_executions').selectAll().where('id', '=', executionId).executeTakeFirstOrThrow();
    expect(ex.status).toBe('cancelled');
    expect(ex.ended_at?.toISOString()).toBe(app.clock.now().toISOString());
    expect(ex.run_at).toBeNull();
    expect((await app.events(acc.id)).filter((e) => e.kind.startsWith('automation.'))).toEqual([]);
    expect((await acc.call('GET', `/conversations/${w.conversationId}`)).body.handling).toEqual({ type: 'team', id: 'u-9', name: 'Laura' });
  });
});

describe('sending with an origin (messages/send.ts)', () => {
  it('"outbound `from`: automation, agent": the message keeps its source; handledBy none→automation, automation+ai→ai, ai+human→mixed; only a team reply takes the handling', async () => {
    const acc = await app.createAccount();
    const phone = freshPhone();
    const w = await customerWrites(acc, phone);
    const caseId = await openCaseOf(w.conversationId);
    const account = await getAccount(db(), acc.id);
    const handledBy = async () => (await acc.call('GET', `/cases/${caseId}`)).body.handledBy;

    const auto = await sendMessage(app.rt.services, account, {
      to: phone,
      text: 'Hola, soy el asistente',
      origin: { source: 'automation', by: { id: newId(), name: 'Bienvenida' } },
    });
    expect(await handledBy()).toBe('automation');
    const agent = await sendMessage(app.rt.services, account, { to: phone, text: '¿En qué te ayudo?', origin: { source: 'agent' } });
    expect(await handledBy()).toBe('ai');
    // Neither takes the conversation's handling (the engine sets it for its executions).
    expect((await acc.call('GET', `/conversations/${w.conversationId}`)).body.handling.type).toBeNull();
    const team = await teamReply(acc, w.conversationId, { text: 'Sigo yo', by: { name: 'Laura' } });
    expect(team.status).toBe(201);
    expect(await handledBy()).toBe('mixed');

    const items = (await acc.call('GET', `/conversations/${w.conversationId}/messages`)).body.data;
    expect(items.map((m: { from: string; by: unknown }) => [m.from, m.by])).toEqual([
      ['contact', null],
      ['automation', null],
      ['agent', null],
      ['team', { id: null, name: 'Laura' }],
    ]);
    expect(items.map((m: { id: string }) => m.id)).toEqual([w.messageId, auto.id, agent.id, team.body.id]);
    const stored = await db().selectFrom('messages').select(['source', 'sent_by']).where('id', '=', auto.id).executeTakeFirstOrThrow();
    expect(stored).toEqual({ source: 'automation', sent_by: { id: expect.any(String), name: 'Bienvenida' } });
  });
});

describe('GET /admin/v1/accounts/{id}/conversations/{cid}/notes', () => {
  it("the conversation's notes, oldest first, {id, text, by, caseId, createdAt}; unknown → 404", async () => {
    const acc = await app.createAccount();
    const other = await app.createAccount();
    const w = await customerWrites(acc, freshPhone());
    const caseId = await openCaseOf(w.conversationId);
    const empty = await app.admin('GET', `/accounts/${acc.id}/conversations/${w.conversationId}/notes`);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ data: [] });

    const by = { type: 'automation' as const, id: newId(), name: 'Bienvenida' };
    const first = await addNote(
      db(),
      { accountId: acc.id, conversationId: w.conversationId, caseId, text: 'Quiere hablar con una persona', by },
      app.clock.now(),
    );
    const second = await addNote(
      db(),
      {
        accountId: acc.id,
        conversationId: w.conversationId,
        caseId: null,
        text: 'Segunda nota',
        by: { type: 'team', id: null, name: 'Laura' },
      },
      app.clock.now(),
    );
    const res = await app.admin('GET', `/accounts/${acc.id}/conversations/${w.conversationId}/notes`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      { id: first.id, text: 'Quiere hablar con una persona', by, caseId, createdAt: app.clock.now().toISOString() },
      {
        id: second.id,
        text: 'Segunda nota',
        by: { type: 'team', id: null, name: 'Laura' },
        caseId: null,
        createdAt: app.clock.now().toISOString(),
      },
    ]);
    expect((await app.admin('GET', `/accounts/${other.id}/conversations/${w.conversationId}/notes`)).status).toBe(404);
    expect((await app.admin('GET', `/accounts/${acc.id}/conversations/${newId()}/notes`)).status).toBe(404);
    expect((await app.admin('GET', `/accounts/${newId()}/conversations/${w.conversationId}/notes`)).status).toBe(404);
  });
});
