// The WhatsApp Cloud API channel (issue 5, decisions.md "Channel", operator.md "WhatsApp Cloud
// API receiver") against a local fake Graph server: sends, error mapping, the signed receiver,
// template sync and template status webhooks.
import { createHmac, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cloudCredentials, type FakeGraph, startFakeGraph } from '../fakes/graph.js';
import { freshPhone, request, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
let fake: FakeGraph;

beforeAll(async () => {
  fake = await startFakeGraph();
  app = await startTestApp({ env: { GRAPH_API_URL: fake.url, CHANNEL_PROVIDER: 'cloud', GRAPH_TIMEOUT_MS: '400' } });
});
afterAll(async () => {
  await app?.close();
  await fake?.close();
});
beforeEach(() => fake.reset());

const digits = (n: number) => Array.from(randomBytes(n), (b) => String(b % 10)).join('');

interface CloudNumber {
  acc: TestAccount;
  /** Our phone_numbers.id */
  id: string;
  phone: string;
  graphId: string;
  wabaId: string;
  token: string;
  appSecret: string;
  verifyToken: string;
}

/** An account with a Cloud API number connected through the operator API (operator.md). */
async function cloudAccount(opts: { wabaId?: string; appSecret?: string } = {}): Promise<CloudNumber> {
  const acc = await app.createAccount();
  const c = cloudCredentials({ wabaId: opts.wabaId, appSecret: opts.appSecret });
  const phone = freshPhone({ spelling: 'digits' });
  const res = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone, name: 'WhatsApp', provider: 'cloud', cloud: c });
  expect(res.status).toBe(201);
  expect(JSON.stringify(res.body)).not.toContain(c.accessToken);
  expect(JSON.stringify(res.body)).not.toContain(c.appSecret);
  const listed = JSON.stringify((await app.admin('GET', `/accounts/${acc.id}/phone-numbers`)).body);
  expect(listed).not.toContain(c.accessToken);
  expect(listed).not.toContain(c.appSecret);
  expect((await app.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${res.body.id}`, { default: true })).status).toBe(200);
  fake.tokens.set(c.phoneNumberId, c.accessToken);
  fake.tokens.set(c.wabaId, c.accessToken);
  return {
    acc,
    id: res.body.id,
    phone: res.body.phone,
    graphId: c.phoneNumberId,
    wabaId: c.wabaId,
    token: c.accessToken,
    appSecret: c.appSecret,
    verifyToken: c.verifyToken,
  };
}

// ---- Meta's webhook JSON (entry[].changes[].value), as the Cloud API documents it -------------

const unix = (d: Date = app.clock.now()) => String(Math.floor(d.getTime() / 1000));
let wamidSeq = 0;
const inboundWamid = () => `wamid.HBgN${Date.now().toString(36)}${++wamidSeq}${randomBytes(6).toString('hex')}`;

function messagesChange(n: CloudNumber, value: { contacts?: unknown[]; messages?: unknown[]; statuses?: unknown[] }) {
  return {
    field: 'messages',
    value: { messaging_product: 'whatsapp', metadata: { display_phone_number: n.phone, phone_number_id: n.graphId }, ...value },
  };
}
const entry = (wabaId: string, changes: unknown[]) => ({ id: wabaId, changes });
const envelope = (...entries: unknown[]) => ({ object: 'whatsapp_business_account', entry: entries });
const profile = (waId: string, name: string) => ({ profile: { name }, wa_id: waId });
const textMsg = (from: string, body: string, id = inboundWamid()) => ({ from, id, timestamp: unix(), type: 'text', text: { body } });
const status = (wamid: string, st: string, recipient: string, extra: Record<string, unknown> = {}) => ({
  id: wamid,
  status: st,
  timestamp: unix(),
  recipient_id: recipient,
  ...extra,
});

const sign = (raw: string, secret: string) => `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;

/** POSTs the payload as Meta does: the exact bytes, signed with the app secret. Answered 200 at once. */
function postOnly(payload: unknown, secret: string | null, tamper?: (raw: string) => string) {
  const raw = JSON.stringify(payload);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (secret !== null) headers['x-hub-signature-256'] = sign(raw, secret);
  return request(`${app.url}/channels/whatsapp/webhook`, 'POST', tamper ? tamper(raw) : raw, headers);
}

/** Processes every queued batch through the real inbound worker (POST /admin/v1/jobs/inbound/run). */
async function drain(): Promise<void> {
  expect((await app.admin('POST', '/jobs/inbound/run')).status).toBe(200);
}

/** POSTs the payload and waits until the queued batch is processed. */
async function postWebhook(payload: unknown, secret: string | null, tamper?: (raw: string) => string) {
  const res = await postOnly(payload, secret, tamper);
  if (res.status === 200) await drain();
  return res;
}

const events = (accountId: string, kind?: string) => app.events(accountId, kind);

/** A customer writes first (opens the 24-hour window); returns the customer's phone. */
async function customerWrites(n: CloudNumber, text = 'Hola, ¿tienen stock?'): Promise<string> {
  const from = freshPhone({ spelling: 'digits' });
  const res = await postWebhook(
    envelope(entry(n.wabaId, [messagesChange(n, { contacts: [profile(from, 'Ana')], messages: [textMsg(from, text)] })])),
    n.appSecret,
  );
  expect(res.status).toBe(200);
  return from;
}

/** Imports a template through sync (the Cloud way of getting templates). */
async function syncedTemplate(n: CloudNumber, t: Record<string, unknown>): Promise<{ id: string; [k: string]: any }> {
  fake.templates.set(n.wabaId, [...(fake.templates.get(n.wabaId) ?? []), t]);
  const res = await app.admin('POST', `/accounts/${n.acc.id}/templates/sync`);
  expect(res.status).toBe(200);
  const found = res.body.templates.find((x: any) => x.name === t.name);
  expect(found).toBeDefined();
  return found;
}

const namedTemplate = (name: string, status = 'APPROVED') => ({
  // Meta's template ids are 15–16 digit numbers (webhooks send them as JSON numbers): no leading
  // zero, and below 2^53 so the number keeps every digit.
  id: `1${digits(14)}`,
  name,
  language: 'es_AR',
  status,
  category: 'UTILITY',
  parameter_format: 'NAMED',
  components: [
    {
      type: 'BODY',
      text: 'Hola {{nombre}}, tu pedido {{pedido}} sale {{fecha}}.',
      example: {
        body_text_named_params: [
          { param_name: 'nombre', example: 'Juana' },
          { param_name: 'pedido', example: 'A-1' },
          { param_name: 'fecha', example: 'mañana' },
        ],
      },
    },
    { type: 'FOOTER', text: 'Tienda' },
  ],
});

// ---------------------------------------------------------------------------------------------

describe('GET /channels/whatsapp/webhook: the hub.challenge handshake (operator.md)', () => {
  it('answers hub.challenge as text only for hub.mode=subscribe with the verify token of a connected number', async () => {
    const n = await cloudAccount();
    const q = (mode: string, token: string) =>
      `${app.url}/channels/whatsapp/webhook?hub.mode=${mode}&hub.verify_token=${encodeURIComponent(token)}&hub.challenge=1158201444`;
    const ok = await request(q('subscribe', n.verifyToken), 'GET');
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(ok.body).toBe(1158201444); // the harness parses JSON-looking text: the raw body is the challenge
    const raw = await fetch(q('subscribe', n.verifyToken));
    expect(await raw.text()).toBe('1158201444');

    expect((await request(q('subscribe', 'wrong-token'), 'GET')).status).toBe(403);
    expect((await request(q('unsubscribe', n.verifyToken), 'GET')).status).toBe(403);
    expect((await request(`${app.url}/channels/whatsapp/webhook`, 'GET')).status).toBe(403);
  });
});

describe('POST /channels/whatsapp/webhook: signed with X-Hub-Signature-256 (decisions.md "Channel")', () => {
  it('a tampered, missing or foreign signature is refused with 401 and nothing is stored', async () => {
    const n = await cloudAccount();
    const from = freshPhone({ spelling: 'digits' });
    const payload = envelope(entry(n.wabaId, [messagesChange(n, { contacts: [profile(from, 'Eva')], messages: [textMsg(from, 'hola')] })]));

    const tampered = await postWebhook(payload, n.appSecret, (raw) => raw.replace('hola', 'HOLA'));
    expect(tampered.status).toBe(401);
    expect(tampered.body).toEqual({ error: expect.stringContaining('X-Hub-Signature-256'), cause: null });
    expect((await postWebhook(payload, null)).status).toBe(401);
    expect((await postWebhook(payload, 'not-the-app-secret')).status).toBe(401);
    expect((await postWebhook(payload, n.appSecret, () => 'not json {')).status).toBe(401);

    const contacts = await n.acc.call('GET', '/contacts');
    expect(contacts.body.data).toEqual([]);
    expect(await events(n.acc.id)).toEqual([]);
  });

  it('a batch with 3 messages and 3 statuses in 2 entries processes all of them, and once only when Meta re-sends it (architecture.md "Inbound")', async () => {
    const n = await cloudAccount();
    // Three messages this number sent (templates reach anyone): their wamids come from Graph.
    const tpl = await syncedTemplate(n, namedTemplate(`aviso_${digits(6)}`));
    const sent: { id: string; wamid: string; to: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const to = freshPhone({ spelling: 'digits' });
      const r = await n.acc.call('POST', '/messages', { to, template: { id: tpl.id, variables: { nombre: 'Ana' } } });
      expect(r.status).toBe(201);
      sent.push({ id: r.body.id, wamid: r.body.wamid, to });
    }
    const [a, b, c] = [freshPhone({ spelling: 'digits' }), freshPhone({ spelling: 'digits' }), freshPhone({ spelling: 'digits' })];
    const payload = envelope(
      entry(n.wabaId, [
        messagesChange(n, {
          contacts: [profile(a, 'Ana'), profile(b, 'Beto')],
          messages: [
            textMsg(a, '¿Hacen envíos?'),
            {
              from: b,
              id: inboundWamid(),
              timestamp: unix(),
              type: 'image',
              image: { caption: 'Este modelo', mime_type: 'image/jpeg', id: '1' },
            },
          ],
          statuses: [status(sent[0]!.wamid, 'delivered', sent[0]!.to)],
        }),
      ]),
      entry(n.wabaId, [
        messagesChange(n, {
          contacts: [profile(c, 'Ceci')],
          messages: [
            {
              from: c,
              id: inboundWamid(),
              timestamp: unix(),
              type: 'interactive',
              interactive: { type: 'list_reply', list_reply: { id: 'talle-m', title: 'Talle M', description: 'Mediano' } },
            },
          ],
          statuses: [
            status(sent[1]!.wamid, 'read', sent[1]!.to),
            status(sent[2]!.wamid, 'failed', sent[2]!.to, {
              errors: [{ code: 131026, title: 'Message undeliverable', message: 'Message undeliverable', error_data: { details: 'x' } }],
            }),
          ],
        }),
      ]),
    );

    const first = await postWebhook(payload, n.appSecret);
    expect(first.status).toBe(200);
    // Different customers are processed side by side: compare in phone order.
    const received = (await events(n.acc.id, 'message.received')).sort((x, y) => x.data.contact.phone.localeCompare(y.data.contact.phone));
    expect(received.map((e) => [e.data.contact.phone, e.data.type, e.data.text])).toEqual([
      [a, 'text', '¿Hacen envíos?'],
      [b, 'image', 'Este modelo'],
      [c, 'interactive', 'Talle M'],
    ]);
    expect(received[0]!.data).toMatchObject({ to: n.phone, contact: { name: 'Ana' } });
    const created = await events(n.acc.id, 'contact.created');
    expect(created.filter((e) => e.data.source === 'inbound')).toHaveLength(3);
    const st = await Promise.all(sent.map((m) => n.acc.call('GET', `/messages/${m.id}`)));
    expect(st.map((r) => [r.body.status, r.body.code])).toEqual([
      ['delivered', null],
      ['read', null],
      ['failed', 131026],
    ]);

    const before = (await events(n.acc.id)).length;
    const again = await postWebhook(payload, n.appSecret);
    expect(again.status).toBe(200);
    expect((await events(n.acc.id)).length).toBe(before);
    expect(await events(n.acc.id, 'message.received')).toHaveLength(3);
  });

  it('message types of api.md §6: captions and descriptions as text, button text; reactions and system notices without message.received', async () => {
    const n = await cloudAccount();
    const from = freshPhone({ spelling: 'digits' });
    const m = (type: string, body: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      from,
      id: inboundWamid(),
      timestamp: unix(),
      type,
      [type]: body,
      ...extra,
    });
    const first = inboundWamid();
    const payload = envelope(
      entry(n.wabaId, [
        messagesChange(n, {
          contacts: [profile(from, 'Dani')],
          messages: [
            {
              ...textMsg(from, 'Vi el aviso', first),
              referral: {
                source_url: 'https://fb.me/x',
                source_id: '120',
                source_type: 'ad',
                headline: 'Zapatillas 2x1',
                body: 'b',
                media_type: 'image',
              },
            },
            m('video', { caption: 'mirá', id: '2' }),
            m('audio', { id: '3', voice: true }),
            m('document', { filename: 'factura.pdf', id: '4' }),
            m('sticker', { id: '5', animated: false }),
            m('location', { latitude: -34.6, longitude: -58.4, name: 'Local', address: 'Av. Corrientes 1234' }),
            {
              from,
              id: inboundWamid(),
              timestamp: unix(),
              type: 'contacts',
              contacts: [{ name: { formatted_name: 'Juan Pérez' }, phones: [{ phone: '+54 9 11 5555-1234', type: 'CELL' }] }],
            },
            m('interactive', { type: 'button_reply', button_reply: { id: 'si', title: 'Sí, confirmo' } }),
            m('button', { payload: 'VER_MAS', text: 'Ver más' }, { context: { from: n.phone, id: 'wamid.ctx' } }),
            m('reaction', { message_id: first, emoji: '👍' }),
            m('system', { body: 'Dani changed their phone number', wa_id: '5491100000000', type: 'user_changed_number' }),
          ],
        }),
      ]),
    );
    expect((await postWebhook(payload, n.appSecret)).status).toBe(200);
    const received = await events(n.acc.id, 'message.received');
    expect(received.map((e) => [e.data.type, e.data.text])).toEqual([
      ['text', 'Vi el aviso'],
      ['video', 'mirá'],
      ['audio', null],
      ['document', 'factura.pdf'],
      ['sticker', null],
      ['location', 'Local, Av. Corrientes 1234'],
      ['contacts', 'Juan Pérez +54 9 11 5555-1234'],
      ['interactive', 'Sí, confirmo'],
      ['button', 'Ver más'],
    ]);
    const contact = (await n.acc.call('GET', '/contacts')).body.data[0];
    expect(contact).toMatchObject({ phone: from, name: 'Dani', optedOut: false });
  });

  it('tapping the template opt-out quick reply opts the contact out (api.md §3 "Contact opt-out")', async () => {
    const n = await cloudAccount();
    const from = freshPhone({ spelling: 'digits' });
    const tap = {
      from,
      id: inboundWamid(),
      timestamp: unix(),
      type: 'button',
      button: { payload: 'Detener promociones', text: 'Detener promociones' },
      context: { from: n.phone, id: 'wamid.promo' },
    };
    expect(
      (
        await postWebhook(
          envelope(entry(n.wabaId, [messagesChange(n, { contacts: [profile(from, 'Flor')], messages: [tap] })])),
          n.appSecret,
        )
      ).status,
    ).toBe(200);
    const optedOut = await events(n.acc.id, 'contact.opted_out');
    expect(optedOut).toHaveLength(1);
    expect(optedOut[0]!.data).toMatchObject({ via: 'button', contact: { phone: from, optedOut: true } });
  });

  it('the same message delivered twice at the same time produces one message.received (Meta re-sends)', async () => {
    const n = await cloudAccount();
    const from = freshPhone({ spelling: 'digits' });
    const payload = envelope(
      entry(n.wabaId, [messagesChange(n, { contacts: [profile(from, 'Gabi')], messages: [textMsg(from, 'hola')] })]),
    );
    const res = await Promise.all([
      postWebhook(payload, n.appSecret),
      postWebhook(payload, n.appSecret),
      postWebhook(payload, n.appSecret),
    ]);
    expect(res.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(await events(n.acc.id, 'message.received')).toHaveLength(1);
    expect(await events(n.acc.id, 'contact.created')).toHaveLength(1);
  });

  it('needs no bearer token and takes application/json with a charset (operator.md "WhatsApp Cloud API receiver")', async () => {
    const n = await cloudAccount();
    const from = freshPhone({ spelling: 'digits' });
    const raw = JSON.stringify(envelope(entry(n.wabaId, [messagesChange(n, { messages: [textMsg(from, 'hola')] })])));
    const res = await request(`${app.url}/channels/whatsapp/webhook`, 'POST', raw, {
      'content-type': 'application/json; charset=utf-8',
      'x-hub-signature-256': sign(raw, n.appSecret),
    });
    expect(res.status).toBe(200);
    await drain();
    expect(await events(n.acc.id, 'message.received')).toHaveLength(1);
  });

  it('a body signed by our app that names no number of ours is acknowledged and ignored', async () => {
    const n = await cloudAccount();
    const other = { ...n, graphId: digits(15) };
    const from = freshPhone({ spelling: 'digits' });
    const res = await postWebhook(envelope(entry(n.wabaId, [messagesChange(other, { messages: [textMsg(from, 'hola')] })])), n.appSecret);
    expect(res.status).toBe(200);
    expect(await events(n.acc.id)).toEqual([]);
  });
});

describe('statuses from the Cloud API run the forward-only machine (api.md §3)', () => {
  async function sentTemplate(n: CloudNumber) {
    const tpl = await syncedTemplate(n, namedTemplate(`estado_${digits(6)}`));
    const to = freshPhone({ spelling: 'digits' });
    const r = await n.acc.call('POST', '/messages', { to, template: { id: tpl.id, variables: { nombre: 'Ana' } } });
    expect(r.status).toBe(201);
    return { id: r.body.id as string, wamid: r.body.wamid as string, to };
  }
  const post = (n: CloudNumber, ...statuses: unknown[]) =>
    postWebhook(envelope(entry(n.wabaId, [messagesChange(n, { statuses })])), n.appSecret);

  it('`read` before `delivered` ends at `read` with one message.status event', async () => {
    const n = await cloudAccount();
    const m = await sentTemplate(n);
    expect((await post(n, status(m.wamid, 'read', m.to))).status).toBe(200);
    expect((await post(n, status(m.wamid, 'delivered', m.to))).status).toBe(200);
    const got = await n.acc.call('GET', `/messages/${m.id}`);
    expect(got.body.status).toBe('read');
    const ev = await events(n.acc.id, 'message.status');
    expect(ev.map((e) => e.data.status)).toEqual(['read']);
  });

  it('several reports of one message in one batch give the most advanced one, once', async () => {
    const n = await cloudAccount();
    const m = await sentTemplate(n);
    expect((await post(n, status(m.wamid, 'sent', m.to), status(m.wamid, 'delivered', m.to), status(m.wamid, 'read', m.to))).status).toBe(
      200,
    );
    const ev = await events(n.acc.id, 'message.status');
    expect(ev.map((e) => [e.data.wamid, e.data.status])).toEqual([[m.wamid, 'read']]);
  });

  it('`failed` stores errors[0].code as the message code; 131050 also sets marketingOptOut (decisions.md "Channel")', async () => {
    const n = await cloudAccount();
    const m = await sentTemplate(n);
    const err = { code: 131050, title: 'Unable to deliver the message.', message: 'x', error_data: { details: 'user stopped marketing' } };
    expect((await post(n, status(m.wamid, 'failed', m.to, { errors: [err] }))).status).toBe(200);
    const got = await n.acc.call('GET', `/messages/${m.id}`);
    expect(got.body).toMatchObject({ status: 'failed', code: 131050, error: expect.any(String) });
    const contact = await n.acc.call('GET', `/contacts/${got.body.contactId}`);
    expect(contact.body.marketingOptOut).toBe(true);
    const ev = await events(n.acc.id, 'message.status');
    expect(ev.map((e) => [e.data.status, e.data.code])).toEqual([['failed', 131050]]);
  });
});

describe('sending through Graph (api.md §4 POST /messages)', () => {
  it('free text inside the window: POST /{phone-number-id}/messages with the documented body and the number’s token; 201 carries Graph’s wamid', async () => {
    const n = await cloudAccount();
    const to = await customerWrites(n);
    const r = await n.acc.call('POST', '/messages', { to: `+${to}`, text: '¡Sí! Tenemos stock.' });
    expect(r.status).toBe(201);
    const sends = fake.sends();
    expect(sends).toHaveLength(1);
    expect(sends[0]!.path).toBe(`/v24.0/${n.graphId}/messages`);
    expect(sends[0]!.headers.authorization).toBe(`Bearer ${n.token}`);
    expect(sends[0]!.headers['content-type']).toMatch(/^application\/json/);
    expect(sends[0]!.body).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to,
      biz_opaque_callback_data: r.body.id,
      type: 'text',
      text: { body: '¡Sí! Tenemos stock.' },
    });
    expect(r.body).toMatchObject({ wamid: fake.wamids.at(-1), status: 'sent', type: 'text' });
  });

  it('a template with named variables: value sent, else the contact attribute, else the example (api.md §4)', async () => {
    const n = await cloudAccount();
    const tpl = await syncedTemplate(n, namedTemplate(`pedido_${digits(6)}`));
    const to = freshPhone({ spelling: 'digits' });
    expect((await n.acc.call('POST', '/contacts', { phone: to, attributes: { pedido: 'B-42' } })).status).toBe(201);
    const r = await n.acc.call('POST', '/messages', { to, template: { id: tpl.id, variables: { nombre: 'Lucía' } } });
    expect(r.status).toBe(201);
    expect(fake.sends()[0]!.body).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to,
      biz_opaque_callback_data: r.body.id,
      type: 'template',
      template: {
        name: tpl.name,
        language: { code: 'es_AR' },
        components: [
          {
            type: 'body',
            parameters: [
              { type: 'text', parameter_name: 'nombre', text: 'Lucía' },
              { type: 'text', parameter_name: 'pedido', text: 'B-42' },
              { type: 'text', parameter_name: 'fecha', text: 'mañana' },
            ],
          },
        ],
      },
    });
    expect(r.body.wamid).toBe(fake.wamids.at(-1));
  });

  it('a positional template ({{1}}, {{2}}) sends bare parameters in number order', async () => {
    const n = await cloudAccount();
    const tpl = await syncedTemplate(n, {
      id: digits(16),
      name: `turno_${digits(6)}`,
      language: 'es',
      status: 'APPROVED',
      category: 'UTILITY',
      components: [{ type: 'BODY', text: 'Tu turno es el {{2}} a las {{1}}.', example: { body_text: [['10:00', 'lunes']] } }],
    });
    expect(tpl.variables).toEqual([
      { name: '1', label: expect.any(String), example: '10:00' },
      { name: '2', label: expect.any(String), example: 'lunes' },
    ]);
    const to = freshPhone({ spelling: 'digits' });
    const r = await n.acc.call('POST', '/messages', { to, template: { id: tpl.id, variables: { '1': '15:30' } } });
    expect(r.status).toBe(201);
    expect(fake.sends()[0]!.body.template).toEqual({
      name: tpl.name,
      language: { code: 'es' },
      components: [
        {
          type: 'body',
          parameters: [
            { type: 'text', text: '15:30' },
            { type: 'text', text: 'lunes' },
          ],
        },
      ],
    });
  });
  it('a text header and a URL button with variables: header_1 and button_<n> in `variables`, sent as header, body and button components', async () => {
    const n = await cloudAccount();
    const tpl = await syncedTemplate(n, {
      id: `1${digits(14)}`,
      name: `envio_${digits(6)}`,
      language: 'es_AR',
      status: 'APPROVED',
      category: 'UTILITY',
      components: [
        { type: 'HEADER', format: 'TEXT', text: 'Pedido {{1}}', example: { header_text: ['#1001'] } },
        { type: 'BODY', text: 'Hola {{1}}, tu pedido sale {{2}}.', example: { body_text: [['Ana', 'hoy']] } },
        {
          type: 'BUTTONS',
          buttons: [
            { type: 'QUICK_REPLY', text: 'Gracias' },
            { type: 'URL', text: 'Seguir envío', url: 'https://envios.example/{{1}}', example: ['https://envios.example/AB12'] },
          ],
        },
      ],
    });
    expect(tpl.variables).toEqual([
      { name: 'header_1', label: 'Encabezado 1', example: '#1001' },
      { name: '1', label: expect.any(String), example: 'Ana' },
      { name: '2', label: expect.any(String), example: 'hoy' },
      { name: 'button_2', label: 'Botón 2 (Seguir envío)', example: 'AB12' },
    ]);
    const r = await n.acc.call('POST', '/messages', {
      to: freshPhone({ spelling: 'digits' }),
      template: { id: tpl.id, variables: { header_1: '#2002', '1': 'Bruno', button_2: 'ZX99' } },
    });
    expect(r.status).toBe(201);
    expect(fake.sends()[0]!.body.template.components).toEqual([
      { type: 'header', parameters: [{ type: 'text', text: '#2002' }] },
      {
        type: 'body',
        parameters: [
          { type: 'text', text: 'Bruno' },
          { type: 'text', text: 'hoy' },
        ],
      },
      { type: 'button', sub_type: 'url', index: '1', parameters: [{ type: 'text', text: 'ZX99' }] },
    ]);
  });

  it('a named variable in both header and body is listed once and sent to both, with parameter_name', async () => {
    const n = await cloudAccount();
    const tpl = await syncedTemplate(n, {
      id: `1${digits(14)}`,
      name: `saludo_${digits(6)}`,
      language: 'es_AR',
      status: 'APPROVED',
      category: 'UTILITY',
      parameter_format: 'NAMED',
      components: [
        {
          type: 'HEADER',
          format: 'TEXT',
          text: 'Hola {{first_name}}',
          example: { header_text_named_params: [{ param_name: 'first_name', example: 'Ana' }] },
        },
        {
          type: 'BODY',
          text: '{{first_name}}, tu código es {{code}}.',
          example: {
            body_text_named_params: [
              { param_name: 'first_name', example: 'Ana' },
              { param_name: 'code', example: '1234' },
            ],
          },
        },
      ],
    });
    expect(tpl.variables.map((v: { name: string }) => v.name)).toEqual(['first_name', 'code']);
    const r = await n.acc.call('POST', '/messages', {
      to: freshPhone({ spelling: 'digits' }),
      template: { id: tpl.id, variables: { first_name: 'Bruno', code: '9876' } },
    });
    expect(r.status).toBe(201);
    expect(fake.sends()[0]!.body.template.components).toEqual([
      { type: 'header', parameters: [{ type: 'text', parameter_name: 'first_name', text: 'Bruno' }] },
      {
        type: 'body',
        parameters: [
          { type: 'text', parameter_name: 'first_name', text: 'Bruno' },
          { type: 'text', parameter_name: 'code', text: '9876' },
        ],
      },
    ]);
  });
});

describe('Graph errors map to api.md §7 (409 / 502 with the reason; nothing retried)', () => {
  let n: CloudNumber;
  let tplId: string;
  beforeAll(async () => {
    n = await cloudAccount();
    tplId = (await syncedTemplate(n, namedTemplate(`errores_${digits(6)}`))).id;
  });
  const sendTemplate = () =>
    n.acc.call('POST', '/messages', { to: freshPhone({ spelling: 'digits' }), template: { id: tplId, variables: { nombre: 'Ana' } } });

  const cases: { rule: string; behaviour: any; status: number; text: RegExp; code: number | null }[] = [
    {
      rule: '132001 template does not exist in Meta → 409',
      behaviour: {
        error: { status: 404, code: 132001, message: '(#132001) Template name does not exist in the translation', type: 'OAuthException' },
      },
      status: 409,
      text: /plantilla/i,
      code: 132001,
    },
    {
      rule: '132015 template paused → 409',
      behaviour: { error: { status: 400, code: 132015, message: '(#132015) Template is Paused' } },
      status: 409,
      text: /pausada/i,
      code: 132015,
    },
    {
      rule: '132000 parameter count mismatch → 409',
      behaviour: { error: { status: 400, code: 132000, message: '(#132000) Number of parameters does not match' } },
      status: 409,
      text: /variables/i,
      code: 132000,
    },
    {
      rule: '190 expired token → 502 saying to renew the token',
      behaviour: { error: { status: 401, code: 190, type: 'OAuthException', message: 'Error validating access token' } },
      status: 502,
      text: /token/i,
      code: 190,
    },
    {
      rule: '131031 account locked → 502 saying what to check',
      behaviour: { error: { status: 400, code: 131031, message: 'Business Account locked' } },
      status: 502,
      text: /bloque/i,
      code: 131031,
    },
    {
      rule: '130429 throughput → temporary 502',
      behaviour: { error: { status: 400, code: 130429, message: 'Rate limit hit' } },
      status: 502,
      text: /Probá de nuevo/,
      code: 130429,
    },
    {
      rule: '131056 pair rate limit → temporary 502',
      behaviour: { error: { status: 400, code: 131056, message: '(#131056) (Business Account, Consumer Account) pair rate limit hit' } },
      status: 502,
      text: /Probá de nuevo/,
      code: 131056,
    },
    {
      rule: 'Graph 500 → temporary 502',
      behaviour: { error: { status: 500, code: 2, type: 'OAuthException', message: 'Service temporarily unavailable' } },
      status: 502,
      text: /Probá de nuevo/,
      code: 2,
    },
    { rule: 'timeout → temporary 502', behaviour: { delayMs: 1500 }, status: 502, text: /a tiempo.*Probá de nuevo/, code: null },
    { rule: 'connection dropped → temporary 502', behaviour: { drop: true }, status: 502, text: /Probá de nuevo/, code: null },
    {
      rule: 'anything else → 502 with Graph’s message',
      behaviour: { error: { status: 400, code: 100, message: '(#100) Invalid parameter', details: 'Parameter value is not valid' } },
      status: 502,
      text: /Parameter value is not valid/,
      code: 100,
    },
  ];
  for (const c of cases) {
    it(c.rule, async () => {
      fake.queue(c.behaviour);
      const r = await sendTemplate();
      expect(r.status).toBe(c.status);
      expect(r.body.error).toMatch(c.text);
      expect(r.body.cause).toBeNull();
      expect(fake.sends()).toHaveLength(1); // never retried (POST /messages is not idempotent)
      const m = await n.acc.call('GET', `/messages/${r.body.messageId}`);
      expect(m.body).toMatchObject({ status: 'failed', code: c.code });
    });
  }

  it('131047 re-engagement window → 409, also for text Graph refuses although our window was open', async () => {
    const to = await customerWrites(n);
    fake.queue({ error: { status: 400, code: 131047, message: 'Re-engagement message', details: 'More than 24 hours have passed' } });
    const r = await n.acc.call('POST', '/messages', { to, text: 'hola' });
    expect(r.status).toBe(409);
    expect(r.body.error).toMatch(/plantilla/i);
  });

  it('a token Graph does not accept (wrong token stored) → 502 that says to renew it', async () => {
    fake.tokens.set(n.graphId, 'some-other-token');
    try {
      const r = await sendTemplate();
      expect(r.status).toBe(502);
      expect(r.body.error).toMatch(/token de acceso/);
    } finally {
      fake.tokens.set(n.graphId, n.token);
    }
  });
});

describe('templates from the WhatsApp Business Account (issue 5 point 5)', () => {
  it('POST /admin/v1/accounts/{id}/templates/sync imports every page with status and category, and re-sync updates by Meta id', async () => {
    const n = await cloudAccount();
    fake.pageSize = 2;
    try {
      const list = [
        namedTemplate('confirmacion'),
        { ...namedTemplate('promo_verano', 'PENDING'), category: 'MARKETING' },
        { ...namedTemplate('rechazada', 'REJECTED'), category: 'MARKETING' },
        {
          id: digits(16),
          name: 'codigo',
          language: 'es',
          status: 'APPROVED',
          category: 'AUTHENTICATION',
          components: [{ type: 'BODY', text: '{{1}} es tu código.', example: { body_text: [['123456']] } }],
        },
        { ...namedTemplate('pausada', 'PAUSED'), language: 'en_US' },
      ];
      fake.templates.set(n.wabaId, list);
      const res = await app.admin('POST', `/accounts/${n.acc.id}/templates/sync`);
      expect(res.status).toBe(200);
      expect(res.body.imported).toBe(5);
      const gets = fake.calls.filter((c) => c.path === `/v24.0/${n.wabaId}/message_templates`);
      expect(gets).toHaveLength(3);
      expect(gets.every((g) => g.headers.authorization === `Bearer ${n.token}`)).toBe(true);

      const pub = await n.acc.call('GET', '/templates');
      const byName = Object.fromEntries(pub.body.data.map((t: any) => [t.name, t]));
      expect(Object.keys(byName).sort()).toEqual(['codigo', 'confirmacion', 'pausada', 'promo_verano', 'rechazada']);
      expect(byName.confirmacion).toMatchObject({
        status: 'APPROVED',
        category: 'UTILITY',
        language: 'es_AR',
        body: 'Hola {{nombre}}, tu pedido {{pedido}} sale {{fecha}}.',
        variables: [
          { name: 'nombre', example: 'Juana' },
          { name: 'pedido', example: 'A-1' },
          { name: 'fecha', example: 'mañana' },
        ],
      });
      expect(byName.promo_verano).toMatchObject({ status: 'PENDING', category: 'MARKETING' });
      expect(byName.rechazada.status).toBe('REJECTED');
      expect(byName.codigo).toMatchObject({ category: 'AUTHENTICATION', variables: [{ name: '1', example: '123456' }] });
      expect(byName.pausada.status).toBe('PAUSED');

      // Meta approved one and renamed nothing: a second sync updates the same rows.
      list[1] = { ...list[1]!, status: 'APPROVED' };
      const again = await app.admin('POST', `/accounts/${n.acc.id}/templates/sync`);
      expect(again.body).toMatchObject({ imported: 0, updated: 5 });
      const pub2 = await n.acc.call('GET', '/templates');
      expect(pub2.body.data.map((t: any) => t.id).sort()).toEqual(pub.body.data.map((t: any) => t.id).sort());
      expect(pub2.body.data.find((t: any) => t.name === 'promo_verano').status).toBe('APPROVED');
    } finally {
      fake.pageSize = 1000;
    }
  });

  it('sync of an account without Cloud numbers → 409; Graph refusing the token → 502 with the reason', async () => {
    const acc = await app.createAccount();
    expect((await app.admin('POST', `/accounts/${acc.id}/templates/sync`)).status).toBe(409);
    const n = await cloudAccount();
    fake.tokens.set(n.wabaId, 'rotated');
    const res = await app.admin('POST', `/accounts/${n.acc.id}/templates/sync`);
    expect(res.status).toBe(502);
    expect(res.body.error).toMatch(/token/);
  });

  it("a template created on an account with a Cloud number is submitted to Meta (named parameters, their examples), stored with Meta's id and PENDING; its approval arrives by webhook; Meta refusing it → 502 and nothing stored", async () => {
    const n = await cloudAccount();
    const name = `envio_${digits(6)}`;
    const res = await app.admin('POST', `/accounts/${n.acc.id}/templates`, {
      name,
      category: 'UTILITY',
      language: 'es_AR',
      body: 'Hola {{nombre}}, tu pedido {{pedido}} ya salió.',
      variables: [
        { name: 'nombre', label: 'Nombre', example: 'Ana' },
        { name: 'pedido', label: 'Número de pedido', example: '1234' },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ name, status: 'PENDING', externalId: expect.stringMatching(/^\d+$/) });
    const submitted = fake.calls.filter((c) => c.method === 'POST' && c.path.endsWith(`/${n.wabaId}/message_templates`));
    expect(submitted).toHaveLength(1);
    expect(submitted[0]!.headers.authorization).toBe(`Bearer ${n.token}`);
    expect(submitted[0]!.body).toEqual({
      name,
      language: 'es_AR',
      category: 'UTILITY',
      parameter_format: 'named',
      components: [
        {
          type: 'BODY',
          text: 'Hola {{nombre}}, tu pedido {{pedido}} ya salió.',
          example: {
            body_text_named_params: [
              { param_name: 'nombre', example: 'Ana' },
              { param_name: 'pedido', example: '1234' },
            ],
          },
        },
      ],
    });
    // Meta approves it: the status webhook names Meta's id.
    await postWebhook(
      envelope({
        id: n.wabaId,
        time: Number(unix()),
        changes: [
          { field: 'message_template_status_update', value: { event: 'APPROVED', message_template_id: Number(res.body.externalId) } },
        ],
      }),
      n.appSecret,
    );
    const listed = await n.acc.call('GET', `/templates/${res.body.id}`);
    expect(listed.body.status).toBe('APPROVED');

    // The same name and language again: Meta refuses; nothing is stored.
    const again = await app.admin('DELETE', `/accounts/${n.acc.id}/templates/${res.body.id}`);
    expect(again.status).toBe(204);
    const refused = await app.admin('POST', `/accounts/${n.acc.id}/templates`, {
      name,
      category: 'UTILITY',
      language: 'es_AR',
      body: 'Hola de nuevo.',
      variables: [],
    });
    expect(refused.status).toBe(502);
    expect(refused.body.error).toMatch(/^WhatsApp no aceptó la plantilla para revisión/);
    const all = await app.admin('GET', `/accounts/${n.acc.id}/templates`);
    expect(all.body.data.filter((t: { name: string }) => t.name === name)).toEqual([]);
  });

  it('message_template_status_update webhooks move a template through APPROVED, PAUSED, REJECTED and DISABLED', async () => {
    const n = await cloudAccount();
    const meta = namedTemplate(`estado_${digits(6)}`, 'PENDING');
    const tpl = await syncedTemplate(n, meta);
    expect(tpl.status).toBe('PENDING');
    const update = (event: string, reason = 'NONE') =>
      postWebhook(
        envelope({
          id: n.wabaId,
          time: Number(unix()),
          changes: [
            {
              field: 'message_template_status_update',
              value: {
                event,
                message_template_id: Number(meta.id),
                message_template_name: meta.name,
                message_template_language: 'es_AR',
                reason,
                message_template_category: 'UTILITY',
              },
            },
          ],
        }),
        n.appSecret,
      );
    const current = async () => (await n.acc.call('GET', `/templates/${tpl.id}`)).body.status;
    expect((await update('APPROVED')).status).toBe(200);
    expect(await current()).toBe('APPROVED');
    expect((await n.acc.call('POST', '/messages', { to: freshPhone({ spelling: 'digits' }), template: { id: tpl.id } })).status).toBe(201);
    await update('PAUSED');
    expect(await current()).toBe('PAUSED');
    expect((await n.acc.call('POST', '/messages', { to: freshPhone({ spelling: 'digits' }), template: { id: tpl.id } })).status).toBe(409);
    await update('REJECTED', 'INVALID_FORMAT');
    expect(await current()).toBe('REJECTED');
    await update('DISABLED');
    expect(await current()).toBe('DISABLED');
    // Signed by another app: refused, status unchanged.
    const forged = await postWebhook(
      envelope({
        id: n.wabaId,
        changes: [{ field: 'message_template_status_update', value: { event: 'APPROVED', message_template_id: Number(meta.id) } }],
      }),
      'forged-secret',
    );
    expect(forged.status).toBe(401);
    expect(await current()).toBe('DISABLED');
  });
});

describe('campaigns on the Cloud API: a temporary refusal is tried again (docs/decisions.md "Campaigns")', () => {
  const campaignFor = async (n: CloudNumber) => {
    const tpl = await syncedTemplate(n, namedTemplate(`aviso_${digits(8)}`));
    expect((await n.acc.call('POST', '/contacts', { phone: `+${freshPhone({ spelling: 'digits' })}`, name: 'Ana' })).status).toBe(201);
    const c = await app.admin('POST', `/accounts/${n.acc.id}/campaigns`, { name: 'Aviso', templateId: tpl.id, phoneNumberId: n.id });
    expect(c.status).toBe(201);
    return c.body.id as string;
  };
  const run = async () => expect((await app.admin('POST', '/jobs/campaigns/run')).status).toBe(200);
  const campaign = async (n: CloudNumber, id: string) => (await n.acc.call('GET', '/campaigns')).body.data.find((c: any) => c.id === id);
  const transient = { error: { status: 503, code: 1, message: 'Service temporarily unavailable' } };

  it('Meta answers 503 once: the recipient is tried again 60 s later with a new message and counts once, as sent', async () => {
    const n = await cloudAccount();
    const id = await campaignFor(n);
    fake.queue(transient);
    await run();
    expect(await campaign(n, id)).toMatchObject({ status: 'sending', sent: 0, failed: 0 });
    await run(); // not yet: the next try waits 60 s
    expect(fake.sends()).toHaveLength(1);
    app.clock.advance(61_000);
    await run();
    expect(fake.sends()).toHaveLength(2);
    expect(await campaign(n, id)).toMatchObject({ status: 'completed', recipients: 1, sent: 1, failed: 0 });
    const messages = await app.rt.services.db
      .selectFrom('messages')
      .select(['status', 'code'])
      .where('campaign_id', '=', id)
      .orderBy('created_at')
      .execute();
    expect(messages.map((m) => m.status)).toEqual(['failed', 'sent']);
  });

  it('"a 130429 from Graph slows the number down instead of failing recipients": tried again a second later, never counted as a try', async () => {
    const n = await cloudAccount();
    const id = await campaignFor(n);
    const throttled = { error: { status: 400, code: 130429, message: '(#130429) Rate limit hit' } };
    fake.queue(throttled, throttled, throttled, throttled, throttled);
    for (let i = 0; i < 5; i++) {
      await run();
      app.clock.advance(1_001);
    }
    expect(fake.sends()).toHaveLength(5);
    const recipient = await app.rt.services.db
      .selectFrom('campaign_recipients')
      .select(['status', 'attempts'])
      .where('campaign_id', '=', id)
      .executeTakeFirstOrThrow();
    // Five refusals, more than CAMPAIGN_RETRY_SCHEDULE allows, and still not a failed recipient.
    expect(recipient).toEqual({ status: 'pending', attempts: 0 });
    await run();
    expect(await campaign(n, id)).toMatchObject({ status: 'completed', recipients: 1, sent: 1, failed: 0 });
  });

  it('still refused after the last try of CAMPAIGN_RETRY_SCHEDULE (60, 300, 900 s): counted as failed, the campaign completes', async () => {
    const n = await cloudAccount();
    const id = await campaignFor(n);
    fake.queue(transient, transient, transient, transient);
    await run();
    for (const wait of [60, 300, 900]) {
      app.clock.advance(wait * 1000 + 1000);
      await run();
    }
    expect(fake.sends()).toHaveLength(4);
    expect(await campaign(n, id)).toMatchObject({ status: 'completed', recipients: 1, sent: 0, failed: 1 });
  });
});
