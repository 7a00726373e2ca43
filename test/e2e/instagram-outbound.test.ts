// The social channel's outbound side (spec social.md "Outbound"; docs/instagram.md): a team
// member, an AI agent or an automation answers an Instagram conversation on its own channel —
// POST {INSTAGRAM_API_URL}/{igUserId}/messages {recipient: {id}, message: {text}} with the
// account's token, against a fake Instagram Graph server — within Instagram's 24-hour window, with
// Meta's errors mapped to Spanish reasons; templates do not exist there.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { automationsOf } from '../automations.js';
import { type FakeInstagram, igErrors, startFakeInstagram } from '../fakes/instagram.js';
import { type FakeLlm, startFakeLlm } from '../fakes/llm.js';
import { startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
let ig: FakeInstagram;
let llm: FakeLlm;
const { createFlow, runDue } = automationsOf(() => app);

beforeAll(async () => {
  ig = await startFakeInstagram();
  llm = await startFakeLlm();
  app = await startTestApp({ env: { INSTAGRAM_API_URL: ig.url, LLM_BASE_URL: llm.url, LLM_MODEL: 'llama3.1' } });
});
afterAll(async () => {
  await app?.close();
  await ig?.close();
  await llm?.close();
});

const digits = (n: number) => Array.from(randomBytes(n), (b) => String(b % 10)).join('');

/** An account with an Instagram social account, and a customer who wrote to it (sandbox social inbound). */
async function instagramConversation(): Promise<{
  acc: TestAccount;
  igUserId: string;
  token: string;
  customer: string;
  conversationId: string;
}> {
  const acc = await app.createAccount();
  const igUserId = `1784${digits(13)}`;
  const token = `IGAA${randomBytes(24).toString('base64url')}`;
  const social = await app.admin('POST', `/accounts/${acc.id}/social-accounts`, {
    name: 'Instagram de la tienda',
    provider: 'instagram',
    instagram: { igUserId, accessToken: token, appSecret: randomBytes(16).toString('hex'), verifyToken: `vt-${digits(8)}` },
  });
  expect(social.status, JSON.stringify(social.body)).toBe(201);
  ig.tokens.set(igUserId, token);
  const customer = digits(16);
  const inbound = await app.admin('POST', '/sandbox/social-inbound', {
    socialAccountId: social.body.id,
    userId: customer,
    username: 'ana.mate',
    text: 'Hola, ¿tienen yerba Amanda?',
  });
  expect(inbound.status, JSON.stringify(inbound.body)).toBe(201);
  return { acc, igUserId, token, customer, conversationId: inbound.body.conversationId };
}

const teamReply = (acc: TestAccount, conversationId: string, body: Record<string, unknown>) =>
  app.admin('POST', `/accounts/${acc.id}/conversations/${conversationId}/messages`, { by: { name: 'Laura' }, ...body });

describe('"Automations, AI agents and team replies answer on the conversation\'s own channel: for socialchat, POST {INSTAGRAM_API_URL}/{igUserId}/messages {recipient: {id}, message: {text}} with the access token"', () => {
  it("a team reply reaches the fake Graph in Instagram's shape; the message keeps its mid and shows from team", async () => {
    const { acc, igUserId, token, customer, conversationId } = await instagramConversation();
    const before = ig.sends().length;
    const r = await teamReply(acc, conversationId, { text: 'Sí, tenemos Amanda de 1 kg.' });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const sent = ig.sends().slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      method: 'POST',
      path: expect.stringMatching(new RegExp(`/${igUserId}/messages$`)),
      token,
      body: { recipient: { id: customer }, message: { text: 'Sí, tenemos Amanda de 1 kg.' } },
    });
    const msgs = await acc.call('GET', `/conversations/${conversationId}/messages`);
    const out = msgs.body.data.filter((m: any) => m.direction === 'outbound');
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ from: 'team', text: 'Sí, tenemos Amanda de 1 kg.', status: 'sent' });
    const row = await app.rt.services.db
      .selectFrom('messages')
      .select(['wamid', 'to_phone'])
      .where('id', '=', out[0].id)
      .executeTakeFirstOrThrow();
    // The mid Instagram answered (its message_id), where a WhatsApp message keeps its wamid.
    expect(row.wamid).toEqual(expect.any(String));
    expect(row.wamid).not.toMatch(/^wamid\./);
    expect(row.to_phone).toBeNull();
  });

  it('"templates do not exist there": a template reply on socialchat → 409 with the Spanish reason, nothing sent', async () => {
    const { acc, conversationId } = await instagramConversation();
    const before = ig.sends().length;
    const r = await teamReply(acc, conversationId, { template: { id: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3f' } });
    expect(r.status).toBe(409);
    expect(r.body.error).toMatch(/^Instagram no tiene plantillas/);
    expect(ig.sends().length).toBe(before);
  });

  it('"Instagram\'s 24-hour window applies the same way": a day after the customer wrote → 409, nothing sent', async () => {
    const { acc, conversationId } = await instagramConversation();
    app.clock.advance(24 * 60 * 60 * 1000 + 1000);
    const before = ig.sends().length;
    const r = await teamReply(acc, conversationId, { text: '¿Seguís ahí?' });
    expect(r.status).toBe(409);
    expect(r.body.error).toMatch(/^El contacto no te escribió por Instagram en las últimas 24 horas/);
    expect(ig.sends().length).toBe(before);
  });

  it('"mapping Meta\'s errors to clear Spanish reasons": Meta\'s window error → 409 without a template hint; an expired token → 502; the message is failed with the reason', async () => {
    const { acc, conversationId } = await instagramConversation();
    ig.queue({ error: igErrors.window });
    const w = await teamReply(acc, conversationId, { text: 'Hola' });
    expect(w.status).toBe(409);
    expect(w.body.error).toMatch(/^Pasaron más de 24 horas desde el último mensaje del contacto en Instagram/);
    expect(w.body.error).not.toMatch(/Usá una plantilla/);
    ig.queue({ error: igErrors.tokenExpired });
    const t = await teamReply(acc, conversationId, { text: 'Hola de nuevo' });
    expect(t.status).toBe(502);
    const failed = await app.rt.services.db
      .selectFrom('messages')
      .select(['status', 'error'])
      .where('conversation_id', '=', conversationId)
      .where('direction', '=', 'outbound')
      .orderBy('id')
      .execute();
    expect(failed.map((m) => m.status)).toEqual(['failed', 'failed']);
    expect(failed[1]?.error).toMatch(/token/i);
  });

  it('a keyword automation started by a direct message answers through Instagram', async () => {
    const { acc, customer, conversationId } = await instagramConversation();
    await createFlow(acc, {
      name: 'Precios',
      trigger: { type: 'keyword', keywords: ['precios'], match: 'contains' },
      steps: [{ id: 'p', type: 'send', text: 'Amanda 1 kg: $5.000' }],
    });
    const socialId = (await app.admin('GET', `/accounts/${acc.id}/social-accounts`)).body.data[0].id;
    const before = ig.sends().length;
    const inbound = await app.admin('POST', '/sandbox/social-inbound', {
      socialAccountId: socialId,
      userId: customer,
      text: 'Pasame los precios',
    });
    expect(inbound.body.conversationId).toBe(conversationId);
    await runDue();
    const sent = ig.sends().slice(before);
    expect(sent.map((c) => c.body)).toEqual([{ recipient: { id: customer }, message: { text: 'Amanda 1 kg: $5.000' } }]);
  });
});

describe('"Comment … starts the matching comment automation with variables.comentario; that flow\'s first send is a private reply to the comment (recipient: {comment_id}), after which the conversation is open"', () => {
  it("a signed comment webhook: the comment automation answers privately with the comment's text, then a DM; no message.received for the comment", async () => {
    const { acc, igUserId, customer } = await instagramConversation();
    const flow = await createFlow(acc, {
      name: 'Comentarios',
      trigger: { type: 'comment', keywords: ['precio'] },
      steps: [
        { id: 'privada', type: 'send', text: 'Hola! Sobre "{{comentario}}": te escribo por privado.' },
        { id: 'dm', type: 'send', text: 'Amanda 1 kg: $5.000' },
      ],
    });
    const social = (await app.admin('GET', `/accounts/${acc.id}/social-accounts`)).body.data[0];
    const receivedBefore = (await app.events(acc.id, 'message.received')).length;
    const before = ig.sends().length;
    const commentId = `1789${digits(12)}`;
    const r = await app.admin('POST', '/sandbox/social-comment', {
      socialAccountId: social.id,
      userId: customer,
      username: 'ana.mate',
      text: '¿Qué precio tiene la Amanda?',
      commentId,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({ duplicate: false, executionId: expect.any(String) });
    await runDue();
    const sent = ig.sends().slice(before);
    expect(sent.map((c) => c.body)).toEqual([
      { recipient: { comment_id: commentId }, message: { text: 'Hola! Sobre "¿Qué precio tiene la Amanda?": te escribo por privado.' } },
      { recipient: { id: customer }, message: { text: 'Amanda 1 kg: $5.000' } },
    ]);
    expect(sent[0]?.path).toMatch(new RegExp(`/${igUserId}/messages$`));
    // "no message.received" for a comment; the execution has comentario.
    expect((await app.events(acc.id, 'message.received')).length).toBe(receivedBefore);
    const list = await app.admin('GET', `/accounts/${acc.id}/automations/${flow.id}/executions`);
    expect(list.body.data[0]).toMatchObject({
      status: 'completed',
      variables: { comentario: '¿Qué precio tiene la Amanda?' },
    });
    // Meta re-sends: the same comment changes nothing.
    const again = await app.admin('POST', '/sandbox/social-comment', {
      socialAccountId: social.id,
      userId: customer,
      text: 'x',
      commentId,
    });
    expect(again.body).toMatchObject({ duplicate: true });
  });

  it('a comment without the automation\'s keywords starts nothing; the receiver reads Meta\'s "comments" field', async () => {
    const { acc, customer } = await instagramConversation();
    await createFlow(acc, {
      name: 'Comentarios',
      trigger: { type: 'comment', keywords: ['precio'] },
      steps: [{ id: 'privada', type: 'send', text: 'Te escribo por privado' }],
    });
    const social = (await app.admin('GET', `/accounts/${acc.id}/social-accounts`)).body.data[0];
    const r = await app.admin('POST', '/sandbox/social-comment', { socialAccountId: social.id, userId: customer, text: 'Qué linda foto' });
    expect(r.body).toMatchObject({ duplicate: false, executionId: null });
  });
});

describe('PATCH …/social-accounts/{socialId} {instagram: {accessToken}}: a renewed token', () => {
  it('the next reply goes out with the new token; the conversation stays the same; a sandbox social account refuses secrets (400)', async () => {
    const { acc, igUserId, conversationId } = await instagramConversation();
    const social = (await app.admin('GET', `/accounts/${acc.id}/social-accounts`)).body.data[0];
    const renewed = `IGAA${randomBytes(24).toString('base64url')}`;
    const patch = await app.admin('PATCH', `/accounts/${acc.id}/social-accounts/${social.id}`, { instagram: { accessToken: renewed } });
    expect(patch.status, JSON.stringify(patch.body)).toBe(200);
    expect(JSON.stringify(patch.body)).not.toContain(renewed);
    ig.tokens.set(igUserId, renewed);
    const before = ig.sends().length;
    expect((await teamReply(acc, conversationId, { text: 'Con el token nuevo' })).status).toBe(201);
    expect(
      ig
        .sends()
        .slice(before)
        .map((c) => c.token),
    ).toEqual([renewed]);
    const sandbox = await app.admin('POST', `/accounts/${acc.id}/social-accounts`, { name: 'Sandbox', provider: 'sandbox' });
    const refused = await app.admin('PATCH', `/accounts/${acc.id}/social-accounts/${sandbox.body.id}`, {
      instagram: { accessToken: renewed },
    });
    expect(refused.status).toBe(400);
  });
});

describe('"an agent can be assigned per social account": its replies go out through Instagram', () => {
  it("the social account's agent answers a direct message with a reply that reaches the fake Graph", async () => {
    const { acc, customer } = await instagramConversation();
    const agent = await app.admin('POST', `/accounts/${acc.id}/agents`, { name: 'Ventas', status: 'active', instructions: 'Vendé yerba.' });
    expect(agent.status, JSON.stringify(agent.body)).toBe(201);
    const social = (await app.admin('GET', `/accounts/${acc.id}/social-accounts`)).body.data[0];
    expect((await app.admin('PATCH', `/accounts/${acc.id}/social-accounts/${social.id}`, { agentId: agent.body.id })).status).toBe(200);
    llm.toolCalls([{ name: 'reply', args: { text: '¡Hola! Tenemos Amanda y Playadito.' } }]);
    const before = ig.sends().length;
    const r = await app.admin('POST', '/sandbox/social-inbound', {
      socialAccountId: social.id,
      userId: customer,
      text: '¿Qué yerbas tienen?',
    });
    expect(r.status).toBe(201);
    await app.admin('POST', '/jobs/agents/run');
    expect(
      ig
        .sends()
        .slice(before)
        .map((c) => c.body),
    ).toEqual([{ recipient: { id: customer }, message: { text: '¡Hola! Tenemos Amanda y Playadito.' } }]);
  });
});
