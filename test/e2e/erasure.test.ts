// docs/privacy.md "Erasure and export of one person" (spec: privacy-security.md "Erasure and export
// on request"): a person with a full history is exported, then erased, and a copy of the database
// is searched for every trace of them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { automationsOf } from '../automations.js';
import { found, logicalDump } from '../dump.js';
import { type FakeLlm, startFakeLlm } from '../fakes/llm.js';
import { type Receiver, startReceiver } from '../fakes/receiver.js';
import { freshPhone, type TestAccount, type TestApp } from '../harness.js';
import { startAppWithModel } from '../model-app.js';
import { until } from '../poll.js';

let llm: FakeLlm;
let app: TestApp;
let hook: Receiver;
let down: Receiver;
const { writes, createFlow, runDue, lastExecution } = automationsOf(() => app);

beforeAll(async () => {
  llm = await startFakeLlm();
  hook = await startReceiver();
  down = await startReceiver({ status: 503, body: 'mantenimiento' });
  app = await startAppWithModel(llm);
});
afterAll(async () => {
  await app?.close();
  await llm?.close();
  await hook?.close();
  await down?.close();
});

const reply = (text: string) => ({ name: 'reply', args: { text } });
const runAgents = async () => expect((await app.admin('POST', '/jobs/agents/run')).status).toBeLessThan(300);
const usage = async (acct: TestAccount) => (await acct.call('GET', '/me')).body.usage;

/** Every case of the account's pipelines (the boards' counts). */
async function caseCount(acct: TestAccount): Promise<number> {
  let n = 0;
  for (const p of (await acct.call('GET', '/pipelines')).body.data) {
    n += (await acct.call('GET', `/pipelines/${p.id}/cases?limit=100`)).body.data.length;
  }
  return n;
}

/**
 * A customer with attributes, inbound and outbound messages, a flow that saved their answer (ask),
 * an agent stretch still running, and webhook deliveries of their messages.
 */
async function personWithHistory(acct: TestAccount) {
  const digits = freshPhone({ spelling: 'digits' });
  const phone = `+${digits}`;
  const created = await acct.call('POST', '/contacts', { phone, name: 'Zoraida Quintanilla', attributes: { barrio: 'Villaurquiza77' } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const agent = await app.admin('POST', `/accounts/${acct.id}/agents`, {
    name: 'Ventas',
    status: 'active',
    instructions: 'Sos la vendedora de la tienda.',
  });
  expect(agent.status, JSON.stringify(agent.body)).toBe(201);
  const flow = await createFlow(acct, {
    name: 'Pedidos',
    trigger: { type: 'keyword', keywords: ['pedido'], match: 'contains' },
    steps: [
      { id: 'q', type: 'ask', text: '¿A qué dirección lo mandamos?', save: 'direccion' },
      { id: 'ag', type: 'agent', agentId: agent.body.id },
    ],
  });

  await writes(acct, digits, 'Hola, soy Zoraida');
  const sent = await acct.call('POST', '/messages', { to: phone, text: 'Hola Zoraida, gracias por escribir a Pergaminoso' });
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
  const { conversationId, contactId } = await writes(acct, digits, 'Quiero hacer un pedido');
  expect(contactId).toBe(created.body.id);
  await runDue();
  await writes(acct, digits, 'Calle Xilofonista 4821');
  llm.toolCalls([reply('Anotado, Zoraida. ¿Algo más para Xilofonista?')]);
  await runDue();
  await runAgents();
  llm.toolCalls([reply('Qué lindo nombre, Brontosaurio')]);
  await writes(acct, digits, 'Mi perro se llama Brontosaurio');
  await runAgents();

  const execution = await lastExecution(acct, flow.id);
  expect(execution.variables).toMatchObject({ direccion: 'Calle Xilofonista 4821' });
  expect((await acct.call('GET', `/conversations/${conversationId}`)).body.handling).toMatchObject({ type: 'agent' });
  // The receiver got the customer's words (message.received) before the erasure.
  await until(() => hook.received.some((r) => r.body.includes('Brontosaurio')), { what: 'the delivery of the last message' });
  return {
    contactId,
    conversationId,
    // Every form of the phone (+E.164, digits only, Meta's wa_id without Argentina's 9), the name, their words.
    needles: [
      phone,
      digits,
      `54${digits.slice(3)}`,
      'Zoraida',
      'Quintanilla',
      'Villaurquiza77',
      'Xilofonista',
      'Brontosaurio',
      'Pergaminoso',
    ],
  };
}

describe('"DELETE …/contacts/{contactId}: the contact, their attributes, the text of their messages … are erased"', () => {
  it('the export before holds all of it; after DELETE a dump of the database holds none of their name, phone or words; counts still add up; a new message makes a new contact', async () => {
    const acct = await app.createAccount();
    const webhook = await app.admin('POST', `/accounts/${acct.id}/webhooks`, { url: hook.url });
    expect(webhook.status).toBe(201);
    // A second URL that is down: its deliveries of their events wait for a retry.
    const waiting = await app.admin('POST', `/accounts/${acct.id}/webhooks`, { url: down.url });
    expect(waiting.status).toBe(201);
    const p = await personWithHistory(acct);
    const digits = p.needles[1] as string;
    await until(() => down.received.some((r) => r.body.includes('Brontosaurio')), { what: 'a failed first attempt' });
    // A status report of a message to them: its event names the message and its Meta id, not them.
    const toThem = (await acct.call('GET', `/conversations/${p.conversationId}/messages?limit=100`)).body.data.find(
      (m: any) => m.direction === 'outbound' && m.wamid,
    );
    const wamid = toThem.wamid as string;
    expect((await app.admin('POST', '/sandbox/status', { wamid, status: 'delivered' })).status).toBe(200);
    await until(() => down.received.some((r) => r.body.includes(wamid)), { what: 'the status event tried once' });
    // A Meta batch parked in the inbound queue with one message of theirs and one of someone else.
    const other = freshPhone({ spelling: 'digits' });
    const parked = {
      object: 'whatsapp_business_account',
      entry: [
        {
          id: 'waba-1',
          changes: [
            {
              field: 'messages',
              value: {
                contacts: [
                  { wa_id: `54${digits.slice(3)}`, profile: { name: 'Zoraida Q' } },
                  { wa_id: other, profile: { name: 'Otra' } },
                ],
                messages: [
                  { from: `54${digits.slice(3)}`, id: 'wamid.erasure-1', type: 'text', text: { body: 'Brontosaurio otra vez' } },
                  { from: other, id: 'wamid.erasure-2', type: 'text', text: { body: 'Hola, soy otra persona' } },
                ],
              },
            },
          ],
        },
      ],
    };
    const now = app.clock.now();
    const queued = await app.rt.services.db
      .insertInto('inbound_queue')
      .values({
        channel: 'whatsapp',
        body: JSON.stringify(parked),
        numbers: [],
        wabas: [],
        keys: [],
        received_at: now,
        run_at: now,
        failed_at: now,
        dead_at: now,
        last_error: 'prueba',
      })
      .returning('id')
      .executeTakeFirstOrThrow();

    // "GET …/export: everything we hold about the person as one JSON document"
    const exported = await app.admin('GET', `/accounts/${acct.id}/contacts/${p.contactId}/export`);
    expect(exported.status).toBe(200);
    expect(exported.headers.get('content-disposition')).toContain(`contacto-${p.contactId}.json`);
    const doc = exported.body;
    expect(doc).toMatchObject({
      object: 'contact_export',
      contact: { id: p.contactId, name: 'Zoraida Quintanilla', attributes: { barrio: 'Villaurquiza77' } },
      consent: { optedOut: false, marketingOptOut: false },
    });
    expect(doc.conversations[0].messages.map((m: any) => m.text)).toEqual(
      expect.arrayContaining([
        'Hola, soy Zoraida',
        'Calle Xilofonista 4821',
        'Mi perro se llama Brontosaurio',
        'Qué lindo nombre, Brontosaurio',
      ]),
    );
    expect(doc.automationExecutions[0]).toMatchObject({ automationName: 'Pedidos', variables: { direccion: 'Calle Xilofonista 4821' } });
    expect(doc.agentStretches[0].turns.length).toBeGreaterThan(0);
    expect(doc.cases.length).toBeGreaterThan(0);
    // Every part spelled as the API spells it: a case as GET /cases/{id} shows it, no column names.
    expect(doc.cases[0]).toEqual((await acct.call('GET', `/cases/${doc.cases[0].id}`)).body);
    const snake = (o: object) => Object.keys(o).filter((k) => k.includes('_'));
    expect([doc.agentStretches[0], doc.automationExecutions[0], doc.conversations[0]].flatMap(snake)).toEqual([]);
    const held = [p.needles[1] as string, ...p.needles.slice(3)];
    expect(found(JSON.stringify(doc), held)).toEqual(held);

    const before = { usage: await usage(acct), cases: await caseCount(acct) };
    const messagesBefore = (await acct.call('GET', `/conversations/${p.conversationId}/messages?limit=100`)).body.data;

    // The search finds them before (so that finding nothing after means something).
    expect(found(await logicalDump(app), held)).toEqual(held);

    const erased = await app.admin('DELETE', `/accounts/${acct.id}/contacts/${p.contactId}`);
    expect(erased.status, JSON.stringify(erased.body)).toBe(204);

    // "webhook payloads still queued … are scrubbed": the down URL's retries are skipped, never sent.
    const sentBefore = down.received.length;
    const log = (await app.admin('GET', `/accounts/${acct.id}/webhooks/${waiting.body.id}/deliveries?limit=100`)).body.data;
    expect(log.length).toBeGreaterThan(0);
    expect(log.map((d: any) => [d.status, d.skipReason])).toEqual(log.map(() => ['skipped', 'erased']));
    // The parked Meta batch keeps the other person's message only.
    const batch = JSON.parse(
      (await app.rt.services.db.selectFrom('inbound_queue').select('body').where('id', '=', queued.id).executeTakeFirstOrThrow()).body,
    );
    expect(batch.entry[0].changes[0].value.messages.map((m: any) => m.text.body)).toEqual(['Hola, soy otra persona']);
    expect(batch.entry[0].changes[0].value.contacts).toEqual([{ wa_id: other, profile: { name: 'Otra' } }]);

    // "their conversation stops any running execution or agent stretch"
    expect((await acct.call('GET', `/conversations/${p.conversationId}`)).body.handling).toMatchObject({ type: null });
    const dump = await logicalDump(app);
    expect(found(dump, [...p.needles, wamid])).toEqual([]);

    // "messages, cases and campaign recipients keep only what counts need"
    const after = { usage: await usage(acct), cases: await caseCount(acct) };
    expect(after.cases).toBe(before.cases);
    expect(after.usage.contacts).toBe(before.usage.contacts - 1);
    expect(after.usage.webhookDeliveries).toBe(before.usage.webhookDeliveries);
    const messagesAfter = (await acct.call('GET', `/conversations/${p.conversationId}/messages?limit=100`)).body.data;
    expect(messagesAfter.map((m: any) => [m.id, m.direction, m.status])).toEqual(
      messagesBefore.map((m: any) => [m.id, m.direction, m.status]),
    );
    expect(messagesAfter.every((m: any) => m.text === null)).toBe(true);

    // Gone for every read; a second DELETE → 404.
    expect((await app.admin('GET', `/accounts/${acct.id}/contacts/${p.contactId}`)).status).toBe(404);
    expect((await app.admin('GET', `/accounts/${acct.id}/contacts/${p.contactId}/export`)).status).toBe(404);
    const again = await app.admin('DELETE', `/accounts/${acct.id}/contacts/${p.contactId}`);
    expect(again.status).toBe(404);
    expect(again.body.error).toBe('No encontramos ese contacto en tu cuenta.');
    const listed = (await app.admin('GET', `/accounts/${acct.id}/contacts?limit=100`)).body.data;
    expect(listed.map((c: any) => c.id)).not.toContain(p.contactId);

    // "A new message from the same phone creates a new contact."
    const fresh = await writes(acct, p.needles[1] as string, 'Hola de nuevo');
    expect(fresh.contactId).not.toBe(p.contactId);
    expect((await app.admin('GET', `/accounts/${acct.id}/contacts/${fresh.contactId}`)).body).toMatchObject({
      phone: p.needles[1],
      name: '',
      attributes: {},
      optedOut: false,
    });
    expect((await usage(acct)).contacts).toBe(before.usage.contacts);

    // The retries' time comes (after the counts above: it may cross into the next quota month): none
    // of their old events is sent (what reaches the URL now is about the new contact only).
    app.clock.advance(24 * 60 * 60 * 1000);
    expect((await app.admin('POST', '/jobs/webhooks/run')).status).toBe(200);
    const since = down.received.slice(sentBefore).map((r) => r.body);
    expect(since.some((b) => b.includes('Hola de nuevo'))).toBe(true);
    expect(found(since.join('\n'), [p.contactId, wamid, ...p.needles.slice(3)])).toEqual([]);

    // "Both are written to the audit trail", with no personal data in `changes`.
    const trail = await app.admin('GET', `/accounts/${acct.id}/audit?limit=100`);
    expect(trail.status).toBe(200);
    const lines = (trail.body.data as { action: string; actor: { type: string }; target: { type: string; id: string } | null }[])
      .filter((l) => l.target?.id === p.contactId)
      .reverse();
    expect(lines.map((l) => [l.action, l.target!.type, l.actor.type])).toEqual([
      ['contact.exported', 'contact', 'operator'],
      ['contact.erased', 'contact', 'operator'],
    ]);
    expect(found(JSON.stringify(lines), p.needles)).toEqual([]);
  });

  it('an opt-out outlives the erasure: a new contact with the same phone starts opted out, and the dump holds only a hash of the phone', async () => {
    const acct = await app.createAccount();
    const digits = freshPhone({ spelling: 'digits' });
    const { contactId } = await writes(acct, digits, 'BAJA');
    const before = await app.admin('GET', `/accounts/${acct.id}/contacts/${contactId}`);
    expect(before.body.optedOut).toBe(true);
    expect((await app.admin('GET', `/accounts/${acct.id}/contacts/${contactId}/export`)).body.consent).toEqual({
      optedOut: true,
      marketingOptOut: false,
    });
    expect((await app.admin('DELETE', `/accounts/${acct.id}/contacts/${contactId}`)).status).toBe(204);
    expect(found(await logicalDump(app), [digits, `54${digits.slice(3)}`])).toEqual([]);

    const again = await writes(acct, digits, 'Hola');
    expect(again.contactId).not.toBe(contactId);
    expect((await app.admin('GET', `/accounts/${acct.id}/contacts/${again.contactId}`)).body).toMatchObject({ optedOut: true });
    // Another account's contact with that phone is not affected.
    const other = await app.createAccount();
    const theirs = await writes(other, digits, 'Hola');
    expect((await app.admin('GET', `/accounts/${other.id}/contacts/${theirs.contactId}`)).body.optedOut).toBe(false);
  });

  it('"unknown → 404": a contact of another account, or no contact at all', async () => {
    const acct = await app.createAccount();
    const other = await app.createAccount();
    const theirs = await other.call('POST', '/contacts', { phone: freshPhone(), name: 'Otra persona' });
    expect(theirs.status).toBe(201);
    for (const path of [`/contacts/${theirs.body.id}`, `/contacts/${theirs.body.id}/export`]) {
      const method = path.endsWith('export') ? 'GET' : 'DELETE';
      const r = await app.admin(method, `/accounts/${acct.id}${path}`);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body.error).toBe('No encontramos ese contacto en tu cuenta.');
    }
    expect((await app.admin('DELETE', `/accounts/${acct.id}/contacts/0193a1e2-0000-7000-8000-000000000000`)).status).toBe(404);
    expect((await app.admin('GET', `/accounts/${other.id}/contacts/${theirs.body.id}`)).body.name).toBe('Otra persona');
  });
});
