// Bad input never reaches PostgreSQL (decisions.md "Naming and shapes" and "Endpoints"): text
// PostgreSQL cannot store, JSON nested too deep, bodies that are not JSON and fields that do not
// exist are answered 400/415 before any query; a database error never writes its query
// parameters to the log; the WhatsApp Cloud receiver keeps a customer's text it cannot store as sent.
import { createHmac, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textFor } from '../../src/http/messages.es-AR.js';
import { ADMIN_TOKEN, freshPhone, request, startTestApp, type TestAccount, type TestApp } from '../harness.js';

/** Every line the runtime's logger writes (pino writes one JSON line per call). */
const logLines: string[] = [];
const logStream = new Writable({
  write(chunk, _encoding, done) {
    logLines.push(String(chunk));
    done();
  },
});

let app: TestApp;
let acc: TestAccount;
beforeAll(async () => {
  app = await startTestApp({ env: { LOG_LEVEL: 'info' }, logDestination: logStream });
  acc = await app.createAccount();
});
afterAll(async () => {
  await app?.close();
});

const problems = (body: { error: { message: string } }) =>
  JSON.parse(body.error.message) as { path: (string | number)[]; message: string }[];
const UNSTORABLE = textFor('text_unstorable');
const UNKNOWN = textFor('unknown_field');
const TOO_DEEP = textFor('json_too_deep', { max: 32 });

async function contactCount(): Promise<number> {
  const r = await app.rt.services.db
    .selectFrom('contacts')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('account_id', '=', acc.id)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

describe('"Text fields hold no NUL (\\u0000) and no lone surrogate (400)" (decisions.md "Naming and shapes")', () => {
  it('contact name, attribute key and attribute value: 400 with the path of the text, nothing stored', async () => {
    const before = await contactCount();
    const cases: [unknown, (string | number)[]][] = [
      [{ phone: freshPhone(), name: 'Ana\u0000' }, ['name']],
      [{ phone: freshPhone(), name: 'Ana \ud83d' }, ['name']],
      [{ phone: freshPhone(), attributes: { 'ciu\u0000dad': 'Rosario' } }, ['attributes', 'ciu\u0000dad']],
      [{ phone: freshPhone(), attributes: { ciudad: 'Ros\u0000ario' } }, ['attributes', 'ciudad']],
      [{ phone: freshPhone(), attributes: { ciudad: '\udc00Rosario' } }, ['attributes', 'ciudad']],
    ];
    for (const [body, path] of cases) {
      const res = await acc.call('POST', '/contacts', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(problems(res.body)).toEqual([{ path, message: UNSTORABLE }]);
    }
    expect(await contactCount()).toBe(before);
    // A well-formed pair of surrogates is one emoji, not a lone surrogate.
    expect((await acc.call('POST', '/contacts', { phone: freshPhone(), name: 'Ana 🎉' })).status).toBe(201);
  });

  it('message text and template variable: 400 with the path', async () => {
    const text = await acc.call('POST', '/messages', { to: freshPhone(), text: 'Hola\u0000' });
    expect(text.status).toBe(400);
    expect(problems(text.body)).toEqual([{ path: ['text'], message: UNSTORABLE }]);
    const variable = await acc.call('POST', '/messages', {
      to: freshPhone(),
      template: { id: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e', variables: { nombre: 'A\u0000na' } },
    });
    expect(variable.status).toBe(400);
    expect(problems(variable.body)).toEqual([{ path: ['template', 'variables', 'nombre'], message: UNSTORABLE }]);
  });

  it('a query string and a path parameter: 400 naming the parameter', async () => {
    const query = await acc.call('GET', '/contacts?after=%00');
    expect(query.status).toBe(400);
    expect(problems(query.body)).toEqual([{ path: ['after'], message: UNSTORABLE }]);
    const status = await acc.call('GET', '/templates?status=APPROVED%00');
    expect(status.status).toBe(400);
    expect(problems(status.body)).toEqual([{ path: ['status'], message: UNSTORABLE }]);
    const param = await app.admin('POST', '/jobs/campaigns%00/run');
    expect(param.status).toBe(400);
    expect(problems(param.body)).toEqual([{ path: ['name'], message: UNSTORABLE }]);
  });

  it('an operator body: 400 with the path', async () => {
    const account = await app.admin('POST', '/accounts', { name: 'Tienda\u0000', plan: 'escala' });
    expect(account.status).toBe(400);
    expect(problems(account.body)).toEqual([{ path: ['name'], message: UNSTORABLE }]);
    const stages = await app.admin('POST', `/accounts/${acc.id}/pipelines`, {
      name: 'Ventas',
      stages: [
        { name: 'Consulta', kind: 'open' },
        { name: 'Gan\ud800ado', kind: 'won' },
      ],
    });
    expect(stages.status).toBe(400);
    expect(problems(stages.body)).toEqual([{ path: ['stages', 1, 'name'], message: UNSTORABLE }]);
  });
});

describe('"JSON nesting deeper than 32 levels is a 400, whatever the route or headers" (decisions.md "Naming and shapes")', () => {
  const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;

  it('33 levels: 400 at the first container past 32, on public, operator and body-less routes; 32 levels are not refused for depth', async () => {
    const path = Array.from({ length: 32 }, () => 0);
    for (const res of [
      await acc.call('POST', '/contacts', nested(33)),
      await acc.call('POST', '/contacts', nested(5000), { 'idempotency-key': 'deep-1' }),
      await app.admin('POST', '/accounts', nested(33)),
      await app.admin('POST', '/jobs/campaigns/run', nested(33)),
    ]) {
      expect(res.status).toBe(400);
      expect(problems(res.body)).toEqual([{ path, message: TOO_DEEP }]);
    }
    const deepObject = `${'{"a":'.repeat(33)}1${'}'.repeat(33)}`;
    const obj = await acc.call('POST', '/contacts', deepObject);
    expect(problems(obj.body)).toEqual([{ path: Array.from({ length: 32 }, () => 'a'), message: TOO_DEEP }]);
    const flat = await acc.call('POST', '/contacts', nested(32));
    expect(flat.status).toBe(400);
    expect(problems(flat.body)).not.toContainEqual(expect.objectContaining({ message: TOO_DEEP }));
  });
});

describe('"wrong Content-Type → 415" (decisions.md "Endpoints")', () => {
  it('text/plain (even holding JSON), a form and no Content-Type: 415 with the catalogue text, nothing created', async () => {
    const before = await contactCount();
    const json = JSON.stringify({ phone: freshPhone() });
    for (const res of [
      await acc.call('POST', '/contacts', json, { 'content-type': 'text/plain' }),
      await acc.call('POST', '/contacts', 'phone=5491155550000', { 'content-type': 'application/x-www-form-urlencoded' }),
      await request(`${app.url}/admin/v1/accounts`, 'POST', 'Tienda', {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        'content-type': 'text/plain; charset=utf-8',
      }),
    ]) {
      expect(res.status).toBe(415);
      expect(res.body).toEqual({ error: textFor('unsupported_media_type'), cause: null });
    }
    const bare = await fetch(`${app.url}/api/v1/contacts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acc.key}` },
      body: new TextEncoder().encode(json),
    });
    expect(bare.status).toBe(415);
    expect(await contactCount()).toBe(before);
  });
});

describe('"Unknown fields in a request body → the validation 400 naming each one" (as Stripe\'s "unknown parameter")', () => {
  it('public: {"nmae": "Ana"} on POST /contacts is a 400 at ["nmae"], not a contact without a name', async () => {
    const before = await contactCount();
    const res = await acc.call('POST', '/contacts', { phone: freshPhone(), nmae: 'Ana', atributes: {} });
    expect(res.status).toBe(400);
    expect(problems(res.body)).toEqual([
      { path: ['nmae'], message: UNKNOWN },
      { path: ['atributes'], message: UNKNOWN },
    ]);
    expect(await contactCount()).toBe(before);
  });

  it('public, nested: POST /messages names ["template","idd"] beside the other problems', async () => {
    const res = await acc.call('POST', '/messages', { to: freshPhone(), template: { idd: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e' } });
    expect(res.status).toBe(400);
    expect(problems(res.body)).toEqual(
      expect.arrayContaining([
        { path: ['template', 'idd'], message: UNKNOWN },
        { path: ['template', 'id'], message: expect.any(String) },
      ]),
    );
  });

  it('operator, top level and nested: POST /accounts and the cloud object of a phone number', async () => {
    const account = await app.admin('POST', '/accounts', { name: 'Tienda', plan: 'escala', plna: 'pro' });
    expect(account.status).toBe(400);
    expect(problems(account.body)).toEqual([{ path: ['plna'], message: UNKNOWN }]);
    const number = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, {
      phone: freshPhone(),
      provider: 'cloud',
      cloud: { phoneNumberId: '1', wabaId: '2', accessToken: 'EAAGx', appSecret: 'secret', verifyToken: 'vt', verifyTokn: 'vt' },
    });
    expect(number.status).toBe(400);
    expect(problems(number.body)).toEqual([{ path: ['cloud', 'verifyTokn'], message: UNKNOWN }]);
  });

  it('operator actions that take no body (jobs run, campaign cancel, webhook test…): none or {} acts, any field → 400 naming it', async () => {
    const withField = await app.admin('POST', '/jobs/webhooks/run', { force: true });
    expect(withField.status).toBe(400);
    expect(problems(withField.body)).toEqual([{ path: ['force'], message: UNKNOWN }]);
    expect((await app.admin('POST', '/jobs/webhooks/run')).status).toBe(200);
    expect((await app.admin('POST', '/jobs/webhooks/run', {})).status).toBe(200);
  });

  it('records whose keys are data (attributes, variables) take any key', async () => {
    const res = await acc.call('POST', '/contacts', { phone: freshPhone(), attributes: { nmae: 'libre' } });
    expect(res.status).toBe(201);
    expect(res.body.attributes).toEqual({ nmae: 'libre' });
    // Past validation: the template id names no template of the account.
    const send = await acc.call('POST', '/messages', {
      to: freshPhone(),
      template: { id: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e', variables: { nmae: 'libre' } },
    });
    expect(send.status).toBe(404);
    expect(send.body).toEqual({ error: textFor('template_not_found'), cause: null });
  });
});

describe('"No log line carries SQL parameters, query text or row values, whatever the error"', () => {
  it('a database error is logged with its code, message and stack, without the query, its parameters or the row (no phone, no name)', async () => {
    // A real refusal of the database for one value, so the failing INSERT carries a phone and a name.
    await sql`ALTER TABLE contacts ADD CONSTRAINT test_refuses_name CHECK (name <> 'Rosa Secreta')`.execute(app.rt.services.db);
    const phone = freshPhone();
    const from = logLines.length;
    const res = await acc.call('POST', '/contacts', { phone, name: 'Rosa Secreta', attributes: { pedido: 'pedido-7781' } });
    expect(res.status).toBe(500);
    const written = logLines.slice(from).join('');
    const line = JSON.parse(written.split('\n').find((l) => l.includes('"unexpected error"'))!);
    expect(line.err).toEqual({
      type: expect.any(String),
      message: expect.stringContaining('test_refuses_name'),
      stack: expect.any(String),
      code: '23514',
    });
    for (const secret of [phone, 'Rosa Secreta', 'pedido-7781', 'insert into']) expect(written).not.toContain(secret);
  });

  it('a refused NUL never reaches the database: the 400 writes no error line', async () => {
    const from = logLines.length;
    const phone = freshPhone();
    expect((await acc.call('POST', '/contacts', { phone, name: 'Ana\u0000' })).status).toBe(400);
    const written = logLines.slice(from).join('');
    expect(written).not.toContain('"level":50');
    expect(written).not.toContain(phone);
  });
});

describe('"The Cloud receiver keeps a customer\'s text without its NUL (lone surrogates become U+FFFD): 200, never a retry loop"', () => {
  it('a NUL and a lone surrogate in the message text and profile name: 200, the message stored with NUL dropped and U+FFFD', async () => {
    const graphId = String(Date.now()) + randomBytes(3).toString('hex');
    const appSecret = randomBytes(16).toString('hex');
    const pn = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, {
      phone: freshPhone(),
      provider: 'cloud',
      cloud: { phoneNumberId: graphId, wabaId: `waba${graphId}`, accessToken: 'EAAGtoken', appSecret, verifyToken: `vt${graphId}` },
    });
    expect(pn.status).toBe(201);
    const from = freshPhone();
    const wamid = `wamid.${randomBytes(8).toString('hex')}`;
    const payload = {
      object: 'whatsapp_business_account',
      entry: [
        {
          id: `waba${graphId}`,
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: from, phone_number_id: graphId },
                contacts: [{ profile: { name: 'Lu\u0000cía' }, wa_id: from }],
                messages: [
                  {
                    from,
                    id: wamid,
                    timestamp: String(Math.floor(app.clock.now().getTime() / 1000)),
                    type: 'text',
                    text: { body: 'Ho\u0000la \ud800' },
                  },
                ],
              },
            },
          ],
        },
      ],
    };
    const raw = JSON.stringify(payload);
    const signature = `sha256=${createHmac('sha256', appSecret).update(raw).digest('hex')}`;
    const post = () =>
      request(`${app.url}/channels/whatsapp/webhook`, 'POST', raw, {
        'content-type': 'application/json',
        'x-hub-signature-256': signature,
      });
    const res = await post();
    expect(res.status).toBe(200);
    expect((await app.admin('POST', '/jobs/inbound/run')).status).toBe(200);
    const stored = await app.rt.services.db
      .selectFrom('messages')
      .innerJoin('contacts', 'contacts.id', 'messages.contact_id')
      .select(['messages.text', 'contacts.name'])
      .where('messages.wamid', '=', wamid)
      .execute();
    expect(stored).toEqual([{ text: 'Hola \ufffd', name: 'Lucía' }]);
    // Meta sending the batch again is a duplicate, not a second message.
    expect((await post()).status).toBe(200);
    expect(await app.rt.services.db.selectFrom('messages').select('id').where('wamid', '=', wamid).execute()).toHaveLength(1);
  });
});
