// The social channel's accounts and inbound side (spec social.md "Connecting an account",
// "Inbound", "Contact view", "Sandbox"; issue 17 part 1): social accounts through the operator
// API, the signed Instagram receiver, direct messages through the one inbound path, reads moving
// our messages forward, and a social account's AI agent taking the conversation.
import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { type FakeLlm, startFakeLlm } from '../fakes/llm.js';
import { request, type TestAccount, type TestApp } from '../harness.js';
import { startAppWithModel } from '../model-app.js';

let app: TestApp;
let llm: FakeLlm;

beforeAll(async () => {
  llm = await startFakeLlm();
  app = await startAppWithModel(llm);
});
afterAll(async () => {
  await app?.close();
  await llm?.close();
});
beforeEach(() => {
  llm.requests.length = 0;
  llm.queue.length = 0;
});

const digits = (n: number) => Array.from(randomBytes(n), (b) => String(b % 10)).join('');

interface IgAccount {
  acc: TestAccount;
  /** Our social_accounts.id */
  id: string;
  igUserId: string;
  accessToken: string;
  appSecret: string;
  verifyToken: string;
}

/** An account with an Instagram social account connected through the operator API. */
async function instagramAccount(): Promise<IgAccount> {
  const acc = await app.createAccount();
  const instagram = {
    igUserId: `1784${digits(13)}`,
    accessToken: `IGAA${randomBytes(24).toString('base64url')}`,
    appSecret: randomBytes(16).toString('hex'),
    verifyToken: `vt-${randomBytes(8).toString('hex')}`,
  };
  const res = await app.admin('POST', `/accounts/${acc.id}/social-accounts`, {
    name: 'Instagram de la tienda',
    provider: 'instagram',
    instagram,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { acc, id: res.body.id, ...instagram };
}

// ---- Meta's Instagram webhook JSON (object "instagram", entry[].messaging[]) --------------------

let midSeq = 0;
const newMid = () => `aWdfZAG1faXRlbToxOklH${Date.now().toString(36)}${++midSeq}${randomBytes(6).toString('hex')}`;
const ms = () => app.clock.now().getTime();

const dm = (ig: IgAccount, userId: string, text: string, mid = newMid()) => ({
  sender: { id: userId },
  recipient: { id: ig.igUserId },
  timestamp: ms(),
  message: { mid, text },
});
const envelope = (ig: IgAccount, messaging: unknown[]) => ({ object: 'instagram', entry: [{ id: ig.igUserId, time: ms(), messaging }] });

const sign = (raw: string, secret: string) => `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;

/** POSTs the payload as Meta does: the exact bytes, signed with the app secret (null: unsigned). */
function postWebhook(payload: unknown, secret: string | null, tamper?: (raw: string) => string) {
  const raw = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (secret !== null) headers['x-hub-signature-256'] = sign(raw, secret);
  return request(`${app.url}/channels/instagram/webhook`, 'POST', tamper ? tamper(raw) : raw, headers);
}

const userId = () => `${digits(16)}`;

describe('"POST /admin/v1/accounts/{id}/social-accounts … → 201 (secrets never returned); GET list; PATCH …/{socialId} (status, agentId, name); DELETE"', () => {
  it('creates, lists, patches and deletes a social account without ever returning its secrets', async () => {
    const ig = await instagramAccount();
    const list = await app.admin('GET', `/accounts/${ig.acc.id}/social-accounts`);
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([
      expect.objectContaining({
        id: ig.id,
        name: 'Instagram de la tienda',
        provider: 'instagram',
        status: 'connected',
        igUserId: ig.igUserId,
        agentId: null,
      }),
    ]);
    const shown = JSON.stringify(list.body);
    for (const secret of [ig.accessToken, ig.appSecret, ig.verifyToken]) expect(shown).not.toContain(secret);

    const patched = await app.admin('PATCH', `/accounts/${ig.acc.id}/social-accounts/${ig.id}`, { name: 'IG', status: 'disconnected' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'IG', status: 'disconnected' });

    // "same validation as PATCH phone-numbers agentId": an agent of another account is refused.
    const other = await app.createAccount();
    const foreign = await app.admin('POST', `/accounts/${other.id}/agents`, { name: 'Ajeno', instructions: 'x' });
    expect(foreign.status, JSON.stringify(foreign.body)).toBe(201);
    const refused = await app.admin('PATCH', `/accounts/${ig.acc.id}/social-accounts/${ig.id}`, { agentId: foreign.body.id });
    expect(refused.status).toBe(400);
    expect(refused.body.problems?.[0]?.field ?? JSON.stringify(refused.body)).toContain('agentId');

    // The same igUserId cannot be connected twice.
    const again = await app.admin('POST', `/accounts/${other.id}/social-accounts`, {
      name: 'Otra',
      provider: 'instagram',
      instagram: { igUserId: ig.igUserId, accessToken: 'a', appSecret: 'b', verifyToken: 'c' },
    });
    expect(again.status).toBe(400);
    // An instagram one needs its credentials.
    expect((await app.admin('POST', `/accounts/${other.id}/social-accounts`, { name: 'x', provider: 'instagram' })).status).toBe(400);

    expect((await app.admin('DELETE', `/accounts/${ig.acc.id}/social-accounts/${ig.id}`)).status).toBe(204);
    expect((await app.admin('GET', `/accounts/${ig.acc.id}/social-accounts`)).body.data).toEqual([]);
    expect((await app.admin('DELETE', `/accounts/${ig.acc.id}/social-accounts/${ig.id}`)).status).toBe(404);
    expect((await app.admin('PATCH', `/accounts/${ig.acc.id}/social-accounts/${newId()}`, { name: 'x' })).status).toBe(404);
  });
});

describe('"the same hub.challenge handshake … as the WhatsApp receiver"', () => {
  it("echoes hub.challenge for a social account's verify token; another token → 403", async () => {
    const ig = await instagramAccount();
    const ok = await request(
      `${app.url}/channels/instagram/webhook?hub.mode=subscribe&hub.verify_token=${ig.verifyToken}&hub.challenge=1158201444`,
      'GET',
    );
    expect(ok.status).toBe(200);
    expect(ok.body).toBe(1158201444);
    const wrong = await request(`${app.url}/channels/instagram/webhook?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1`, 'GET');
    expect(wrong.status).toBe(403);
    expect(wrong.body.error?.message ?? JSON.stringify(wrong.body)).toContain('verify token');
  });
});

describe('"X-Hub-Signature-256 (HMAC-SHA256 of the raw body with the app secret)"', () => {
  it('a valid signature is processed; a tampered body or a missing or wrong signature → 401 and nothing is stored', async () => {
    const ig = await instagramAccount();
    const customer = userId();
    const payload = envelope(ig, [dm(ig, customer, 'Hola')]);
    const tampered = await postWebhook(payload, ig.appSecret, (raw) => raw.replace('Hola', 'Chau'));
    expect(tampered.status).toBe(401);
    expect((await postWebhook(payload, null)).status).toBe(401);
    expect((await postWebhook(payload, 'otro-secreto')).status).toBe(401);
    expect(await app.events(ig.acc.id, 'message.received')).toEqual([]);

    const ok = await postWebhook(payload, ig.appSecret);
    expect(ok.status).toBe(200);
    expect(await app.events(ig.acc.id, 'message.received')).toHaveLength(1);
  });
});

describe('"Direct message … emits message.received with data {id, source: "socialchat", conversationId, to (the social account id), contact: {id, name, socialchat: {id, username}}, type, text, timestamp} — no wamid"', () => {
  it('a direct message creates the contact (phone null, contact.created source socialchat), opens the window and emits message.received once for a batch posted twice', async () => {
    const ig = await instagramAccount();
    const customer = userId();
    const mid = newMid();
    const sentAt = new Date(ms() - 5_000);
    const payload = envelope(ig, [{ ...dm(ig, customer, 'Hola, ¿tienen yerba?', mid), timestamp: sentAt.getTime() }]);
    expect((await postWebhook(payload, ig.appSecret)).status).toBe(200);
    // "a batch is processed once; a message id (mid) seen before changes nothing"
    expect((await postWebhook(payload, ig.appSecret)).status).toBe(200);

    const received = await app.events(ig.acc.id, 'message.received');
    expect(received).toHaveLength(1);
    const data = received[0]!.data;
    // (jsonb keeps its own key order: compare the set of keys)
    expect(Object.keys(data).sort()).toEqual(['contact', 'conversationId', 'id', 'source', 'text', 'timestamp', 'to', 'type']);
    expect(data).toMatchObject({
      source: 'socialchat',
      to: ig.id,
      contact: { name: 'Instagram', socialchat: { id: customer, username: null } },
      type: 'text',
      text: 'Hola, ¿tienen yerba?',
      timestamp: sentAt.toISOString(),
    });
    expect(data.wamid).toBeUndefined();

    const created = await app.events(ig.acc.id, 'contact.created');
    expect(created).toHaveLength(1);
    expect(created[0]!.data).toMatchObject({
      source: 'socialchat',
      contact: { id: data.contact.id, phone: null, socialchat: { id: customer } },
    });

    const conv = await ig.acc.call('GET', `/conversations/${data.conversationId}`);
    expect(conv.status).toBe(200);
    expect(conv.body).toMatchObject({ channel: 'socialchat', socialAccountId: ig.id, lastInboundAt: sentAt.toISOString() });
    expect(conv.body.windowOpenUntil).toBe(new Date(sentAt.getTime() + 24 * 3600_000).toISOString());
    const msgs = await ig.acc.call('GET', `/conversations/${data.conversationId}/messages`);
    expect(msgs.body.data).toHaveLength(1);
    // A case opens as for a WhatsApp inbound message.
    expect(conv.body.openCaseId).not.toBeNull();
  });

  it("a body with several direct messages is stored as one batch: two customers, a mid repeated, each message once and each customer's in order", async () => {
    const ig = await instagramAccount();
    const [ana, beto] = [userId(), userId()];
    const repeated = newMid();
    const at = ms() - 10_000;
    const messaging = [
      { ...dm(ig, ana, 'uno', repeated), timestamp: at },
      { ...dm(ig, beto, 'hola'), timestamp: at + 1 },
      { ...dm(ig, ana, 'dos'), timestamp: at + 2 },
      { ...dm(ig, ana, 'uno', repeated), timestamp: at },
      { ...dm(ig, ana, 'tres'), timestamp: at + 3 },
    ];
    expect((await postWebhook(envelope(ig, messaging), ig.appSecret)).status).toBe(200);
    const received = (await app.events(ig.acc.id, 'message.received')).map((e) => e.data);
    expect(received.map((d) => d.text)).toEqual(['uno', 'hola', 'dos', 'tres']);
    const conversationOf = (customer: string) =>
      new Set(received.filter((d) => d.contact.socialchat.id === customer).map((d) => d.conversationId));
    expect(conversationOf(ana).size).toBe(1);
    expect(conversationOf(beto).size).toBe(1);
    const [anaConversation] = [...conversationOf(ana)];
    const msgs = await ig.acc.call('GET', `/conversations/${anaConversation}/messages`);
    expect(msgs.body.data.map((m: { text: string }) => m.text).sort()).toEqual(['dos', 'tres', 'uno']);
    expect(await app.events(ig.acc.id, 'contact.created')).toHaveLength(2);
  });

  it('"Echoes (message.is_echo), reads and reactions produce no message.received"; unknown parts are skipped', async () => {
    const ig = await instagramAccount();
    const customer = userId();
    const echo = {
      sender: { id: ig.igUserId },
      recipient: { id: customer },
      timestamp: ms(),
      message: { mid: newMid(), text: 'Nuestra respuesta', is_echo: true },
    };
    const reaction = {
      sender: { id: customer },
      recipient: { id: ig.igUserId },
      timestamp: ms(),
      reaction: { mid: newMid(), action: 'react', emoji: '❤' },
    };
    const read = { sender: { id: customer }, recipient: { id: ig.igUserId }, timestamp: ms(), read: { mid: newMid() } };
    const res = await postWebhook(envelope(ig, [echo, reaction, read, { something: 'new' }]), ig.appSecret);
    expect(res.status).toBe(200);
    expect(await app.events(ig.acc.id, 'message.received')).toEqual([]);
    expect(await app.events(ig.acc.id, 'contact.created')).toEqual([]);
  });
});

describe('"Statuses: Instagram reports read through messaging[].read; the message moves forward as on WhatsApp (message.status)"', () => {
  it('a read moves our outbound message to read with one message.status event', async () => {
    const ig = await instagramAccount();
    const customer = userId();
    expect((await postWebhook(envelope(ig, [dm(ig, customer, 'Hola')]), ig.appSecret)).status).toBe(200);
    const [received] = await app.events(ig.acc.id, 'message.received');
    // No socialchat send path exists yet (the outbound side lands separately): our sent message is
    // inserted through the database as the send would store it.
    const mid = newMid();
    const id = newId();
    await app.rt.services.db
      .insertInto('messages')
      .values({
        id,
        account_id: ig.acc.id,
        conversation_id: received!.data.conversationId,
        contact_id: received!.data.contact.id,
        phone_number_id: null,
        direction: 'outbound',
        type: 'text',
        text: 'Tenemos Amanda',
        wamid: mid,
        status: 'sent',
        source: 'agent',
        sent_at: app.clock.now(),
        created_at: app.clock.now(),
        updated_at: app.clock.now(),
      })
      .execute();
    const read = { sender: { id: customer }, recipient: { id: ig.igUserId }, timestamp: ms(), read: { mid } };
    expect((await postWebhook(envelope(ig, [read]), ig.appSecret)).status).toBe(200);
    expect((await postWebhook(envelope(ig, [read]), ig.appSecret)).status).toBe(200);
    const statuses = await app.events(ig.acc.id, 'message.status');
    expect(statuses).toHaveLength(1);
    expect(statuses[0]!.data).toMatchObject({ id, status: 'read' });
    const msg = await app.rt.services.db
      .selectFrom('messages')
      .select(['status', 'read_at'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(msg.status).toBe('read');
    expect(msg.read_at).not.toBeNull();

    // A read of this message reported through another of our Instagram accounts changes nothing.
    const other = await instagramAccount();
    const foreign = { sender: { id: customer }, recipient: { id: other.igUserId }, timestamp: ms(), read: { mid } };
    expect((await postWebhook(envelope(other, [foreign]), other.appSecret)).status).toBe(200);
    expect(await app.events(ig.acc.id, 'message.status')).toHaveLength(1);
  });
});

describe('"Contacts gain socialchat: {id, username} or null"', () => {
  it('the sandbox social inbound names the contact by its username; GET /contacts/{id} shows socialchat; a WhatsApp contact has socialchat null', async () => {
    const acc = await app.createAccount();
    const sa = await app.admin('POST', `/accounts/${acc.id}/social-accounts`, { name: 'Sandbox IG', provider: 'sandbox' });
    expect(sa.status).toBe(201);
    const customer = userId();
    const res = await app.admin('POST', '/sandbox/social-inbound', {
      socialAccountId: sa.body.id,
      userId: customer,
      username: 'caro.mate',
      text: 'Hola',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const contact = await acc.call('GET', `/contacts/${res.body.contactId}`);
    expect(contact.status).toBe(200);
    expect(contact.body).toMatchObject({ phone: null, name: 'caro.mate', socialchat: { id: customer, username: 'caro.mate' } });
    const [received] = await app.events(acc.id, 'message.received');
    expect(received!.data).toMatchObject({
      source: 'socialchat',
      to: sa.body.id,
      contact: { name: 'caro.mate', socialchat: { id: customer, username: 'caro.mate' } },
    });
    const [created] = await app.events(acc.id, 'contact.created');
    expect(created!.data).toMatchObject({ source: 'socialchat' });

    const wa = await app.inbound({ accountId: acc.id, from: acc.phone.replace(/\d{4}$/, '9876'), text: 'Hola' });
    expect(wa.status).toBe(201);
    expect((await acc.call('GET', `/contacts/${wa.body.contactId}`)).body.socialchat).toBeNull();

    // The same mid twice is stored once.
    const mid = newMid();
    const first = await app.admin('POST', '/sandbox/social-inbound', { socialAccountId: sa.body.id, userId: customer, text: 'Otro', mid });
    const second = await app.admin('POST', '/sandbox/social-inbound', { socialAccountId: sa.body.id, userId: customer, text: 'Otro', mid });
    expect(second.body).toMatchObject({ messageId: first.body.messageId, duplicate: true });
    expect((await app.admin('POST', '/sandbox/social-inbound', { socialAccountId: newId(), userId: customer, text: 'x' })).status).toBe(
      404,
    );
  });
});

describe('"runs the automations/agent/case rules exactly as a WhatsApp inbound does" (the social account\'s agentId plays the number\'s role)', () => {
  it("a social account's agent takes the conversation and runs a turn (here the model hands off: no send needed)", async () => {
    const ig = await instagramAccount();
    const agent = await app.admin('POST', `/accounts/${ig.acc.id}/agents`, {
      name: 'Ventas IG',
      status: 'active',
      instructions: 'Sos la vendedora de la tienda.',
    });
    expect(agent.status, JSON.stringify(agent.body)).toBe(201);
    const patched = await app.admin('PATCH', `/accounts/${ig.acc.id}/social-accounts/${ig.id}`, { agentId: agent.body.id });
    expect(patched.status).toBe(200);
    expect(patched.body.agentId).toBe(agent.body.id);

    llm.toolCalls([{ name: 'hand_off', args: { reason: 'Pide hablar con una persona', summary: 'Quiere una persona' } }]);
    expect((await postWebhook(envelope(ig, [dm(ig, userId(), 'Quiero hablar con alguien')]), ig.appSecret)).status).toBe(200);
    const [received] = await app.events(ig.acc.id, 'message.received');
    const conv = await ig.acc.call('GET', `/conversations/${received!.data.conversationId}`);
    expect(conv.body.handling).toMatchObject({ type: 'agent', id: agent.body.id });

    const run = await app.admin('POST', '/jobs/agents/run');
    expect(run.status, JSON.stringify(run.body)).toBeLessThan(300);
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]!.messages.at(-1)).toMatchObject({ role: 'user', content: 'Quiero hablar con alguien' });
    const [handedOff] = await app.events(ig.acc.id, 'agent.handed_off');
    expect(handedOff!.data).toMatchObject({ agentId: agent.body.id, conversationId: received!.data.conversationId });

    // A deleted agent answers no social account: the list names none.
    expect((await app.admin('DELETE', `/accounts/${ig.acc.id}/agents/${agent.body.id}`)).status).toBe(204);
    const listed = await app.admin('GET', `/accounts/${ig.acc.id}/social-accounts`);
    expect(listed.body.data[0].agentId).toBeNull();
  });
});

describe('"runs the automations/agent/case rules exactly as a WhatsApp inbound does" (automations)', () => {
  it('a keyword automation that names no number starts on a direct message; one that names a number does not', async () => {
    const ig = await instagramAccount();
    const anyChannel = await app.admin('POST', `/accounts/${ig.acc.id}/automations`, {
      name: 'Precios',
      status: 'active',
      trigger: { type: 'keyword', keywords: ['precio'], match: 'contains' },
      steps: [{ id: 'w', type: 'wait', minutes: 30 }],
    });
    expect(anyChannel.status, JSON.stringify(anyChannel.body)).toBe(201);
    const numberOnly = await app.admin('POST', `/accounts/${ig.acc.id}/automations`, {
      name: 'Precios WhatsApp',
      status: 'active',
      phoneNumberId: ig.acc.phoneNumberId,
      trigger: { type: 'keyword', keywords: ['precio'], match: 'contains' },
      steps: [{ id: 'w', type: 'wait', minutes: 30 }],
    });
    expect(numberOnly.status, JSON.stringify(numberOnly.body)).toBe(201);

    expect((await postWebhook(envelope(ig, [dm(ig, userId(), '¿Qué precio tiene la yerba?')]), ig.appSecret)).status).toBe(200);
    const [received] = await app.events(ig.acc.id, 'message.received');
    const conv = await ig.acc.call('GET', `/conversations/${received!.data.conversationId}`);
    expect(conv.body.handling).toMatchObject({ type: 'automation', id: anyChannel.body.id });
    const started = await app.admin('GET', `/accounts/${ig.acc.id}/automations/${anyChannel.body.id}/executions`);
    expect(started.body.data).toHaveLength(1);
    expect(started.body.data[0]).toMatchObject({ conversationId: received!.data.conversationId, status: 'running' });
    const none = await app.admin('GET', `/accounts/${ig.acc.id}/automations/${numberOnly.body.id}/executions`);
    expect(none.body.data).toEqual([]);
  });
});

describe('"anything unknown logged and skipped, never a 500" (signed but malformed payloads)', () => {
  it('"Comment (entry[].changes[] with field: "comments")": no message.received; it starts the comment automation with comentario (once for a re-sent batch)', async () => {
    const ig = await instagramAccount();
    const flow = await app.admin('POST', `/accounts/${ig.acc.id}/automations`, {
      name: 'Comentarios',
      status: 'active',
      trigger: { type: 'comment' },
      steps: [{ id: 'w', type: 'wait', minutes: 10 }],
    });
    expect(flow.status, JSON.stringify(flow.body)).toBe(201);
    const commentId = `1789${digits(12)}`;
    const payload = {
      object: 'instagram',
      entry: [
        {
          id: ig.igUserId,
          time: ms(),
          changes: [
            {
              field: 'comments',
              value: { id: commentId, text: 'Precio?', from: { id: userId(), username: 'ana.mate' }, media: { id: '1790' } },
            },
          ],
        },
      ],
    };
    expect((await postWebhook(payload, ig.appSecret)).status).toBe(200);
    expect((await postWebhook(payload, ig.appSecret)).status).toBe(200);
    expect(await app.events(ig.acc.id, 'message.received')).toEqual([]);
    const list = await app.admin('GET', `/accounts/${ig.acc.id}/automations/${flow.body.id}/executions`);
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0]).toMatchObject({ variables: { comentario: 'Precio?' } });
  });

  it('signed payloads of every odd shape answer 200 (or 400 for a body that is not JSON), never 5xx', async () => {
    const ig = await instagramAccount();
    const bodies: unknown[] = [
      {},
      [],
      'null',
      { object: 'instagram' },
      { object: 'instagram', entry: 'x' },
      { object: 'instagram', entry: [null, 1, 'x', { id: ig.igUserId, messaging: 'x' }] },
      { object: 'instagram', entry: [{ id: ig.igUserId, messaging: [null, {}, { message: 'x' }, { message: { text: 'sin mid' } }] }] },
      envelope(ig, [
        {
          sender: { id: 5 },
          recipient: { id: ig.igUserId },
          timestamp: 'ayer',
          message: { mid: newMid(), attachments: [{ type: 'image' }] },
        },
      ]),
      envelope(ig, [
        { sender: { id: userId() }, recipient: { id: ig.igUserId }, message: { mid: newMid(), text: { body: 'x' }, attachments: 'x' } },
      ]),
      { object: 'instagram', entry: [{ id: ig.igUserId, changes: [{ field: 'comments', value: { id: '1', text: 'Precio?' } }, null] }] },
      '{"object":"instagram","entry":[{"id":"1","messaging":[{"message":{"mid":"\\u0000","text":"\\ud800"}}]}]}',
    ];
    for (const b of bodies) {
      const res = await postWebhook(b, ig.appSecret);
      expect(res.status, JSON.stringify(b)).toBe(200);
    }
    const notJson = await postWebhook('{"object":', ig.appSecret);
    expect(notJson.status).toBe(400);
    // An attachment without text is stored as its type (api.md: image, video, …).
    const received = await app.events(ig.acc.id, 'message.received');
    expect(received.map((e) => e.data.type)).toContain('image');
  });
});
