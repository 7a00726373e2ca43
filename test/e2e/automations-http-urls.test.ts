// Issue 25, item 3: "Customer text pasted raw into http-step URLs". Values inserted into an http
// step's URL are percent-encoded as the component they fall in (path segment, query value,
// fragment); `{{{var}}}` inserts raw, and still cannot change the template's scheme or host; a
// header value with CR or LF is refused with its own reason, and nothing is sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { automationsOf } from '../automations.js';
import { type Receiver, startReceiver } from '../fakes/receiver.js';
import { freshPhone, startTestApp, type TestApp } from '../harness.js';

let app: TestApp;
let r: Receiver;
const { runDue, createFlow, execution, lastExecution, writes } = automationsOf(() => app);

beforeAll(async () => {
  app = await startTestApp();
  r = await startReceiver({ status: 200, body: '{"ok":true}', headers: { 'content-type': 'application/json' } });
});
afterAll(async () => {
  await r?.close();
  await app?.close();
});

/** Runs the flow through the operator's test endpoint with these variables; the execution with its step log. */
async function runWith(acctId: string, automationId: string, variables: Record<string, string>) {
  const t = await app.admin('POST', `/accounts/${acctId}/automations/${automationId}/test`, { to: freshPhone(), variables });
  expect(t.status, JSON.stringify(t.body)).toBe(201);
  return t.body;
}

describe('"values interpolated into an http step URL are percent-encoded as the component they fall in"', () => {
  it('the attack: an ask answered "../../admin/users/all?x=" stays one path segment of DELETE …/api/orders/{{pedido}}/hold', async () => {
    const acct = await app.createAccount();
    const a = await createFlow(acct, {
      name: 'Retener pedido',
      trigger: { type: 'keyword', keywords: ['retener'] },
      steps: [
        { id: 'q', type: 'ask', text: '¿Número de pedido?', save: 'pedido' },
        {
          id: 'h',
          type: 'http',
          method: 'DELETE',
          url: `${r.url}/api/orders/{{pedido}}/hold`,
          headers: { Authorization: 'Bearer token-de-la-tienda' },
        },
        { id: 'fin', type: 'end' },
      ],
    });
    const got = r.received.length;
    const phone = freshPhone();
    await writes(acct, phone, 'retener');
    await runDue();
    await writes(acct, phone, '../../admin/users/all?x=');
    await runDue();
    const [req] = (await r.waitFor(got + 1)).slice(got);
    expect(req.path).toBe('/api/orders/%2E%2E%2F%2E%2E%2Fadmin%2Fusers%2Fall%3Fx%3D/hold');
    expect(r.received.some((x) => x.path.startsWith('/admin'))).toBe(false);
    expect((await lastExecution(acct, a.id)).status).toBe('completed');
  });

  it('a value that is a whole ".." segment is sent as %2E%2E, not resolved away', async () => {
    const acct = await app.createAccount();
    const a = await createFlow(acct, {
      name: 'Punto punto',
      trigger: { type: 'api' },
      steps: [{ id: 'h', type: 'http', method: 'GET', url: `${r.url}/api/orders/{{pedido}}/hold` }],
    });
    const got = r.received.length;
    await runWith(acct.id, a.id, { pedido: '..' });
    const [req] = (await r.waitFor(got + 1)).slice(got);
    expect(req.path).toBe('/api/orders/%2E%2E/hold');
  });

  it('a value in the query is encoded as a query value (& = # + cannot add parameters); in the fragment it is not sent', async () => {
    const acct = await app.createAccount();
    const a = await createFlow(acct, {
      name: 'Consulta',
      trigger: { type: 'api' },
      steps: [{ id: 'h', type: 'http', method: 'GET', url: `${r.url}/api/stock?producto={{producto}}&lado=1#{{producto}}` }],
    });
    const got = r.received.length;
    await runWith(acct.id, a.id, { producto: 'zapa & media=1+2#x /ñ' });
    const [req] = (await r.waitFor(got + 1)).slice(got);
    expect(req.path).toBe('/api/stock?producto=zapa%20%26%20media%3D1%2B2%23x%20%2F%C3%B1&lado=1');
    expect(new URL(req.path, 'http://x').searchParams.get('producto')).toBe('zapa & media=1+2#x /ñ');
  });

  it('triple braces {{{var}}} insert the value raw, after the template host', async () => {
    const acct = await app.createAccount();
    const a = await createFlow(acct, {
      name: 'Crudo',
      trigger: { type: 'api' },
      steps: [{ id: 'h', type: 'http', method: 'GET', url: `${r.url}/api/{{{ruta}}}` }],
    });
    const got = r.received.length;
    await runWith(acct.id, a.id, { ruta: 'orders/A-12?full=1' });
    const [req] = (await r.waitFor(got + 1)).slice(got);
    expect(req.path).toBe('/api/orders/A-12?full=1');
  });

  it('a raw value cannot change the scheme or host of the template: refused, nothing sent; a raw base at the start is allowed', async () => {
    const acct = await app.createAccount();
    const a = await createFlow(acct, {
      name: 'Otro servidor',
      trigger: { type: 'api' },
      steps: [
        { id: 'h', type: 'http', method: 'GET', url: `${r.url}/{{{resto}}}`, onError: 'x' },
        { id: 'ok', type: 'end' },
        { id: 'x', type: 'end' },
      ],
    });
    // After the template's host, "/evil.example/x" is only path: still the receiver.
    const got = r.received.length;
    const t = await runWith(acct.id, a.id, { resto: '/evil.example/x' });
    const full = await execution(acct, a.id, t.id);
    expect(full.steps.map((s: any) => `${s.stepId}:${s.outcome}`)).toEqual(['h:ok', 'ok:ok']);
    const [req] = (await r.waitFor(got + 1)).slice(got);
    expect(req.path).toBe('//evil.example/x');

    // In the host (or right after it, where "@evil" would move it), {{{…}}} is refused at save; at the start it is the whole base URL.
    const bad = await app.admin('POST', `/accounts/${acct.id}/automations`, {
      name: 'Host crudo',
      trigger: { type: 'api' },
      steps: [{ id: 'h', type: 'http', method: 'GET', url: 'https://{{{host}}}/x' }],
    });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('no puede ir en el servidor de la URL');
    const after = await app.admin('POST', `/accounts/${acct.id}/automations`, {
      name: 'Tras el host',
      trigger: { type: 'api' },
      steps: [{ id: 'h', type: 'http', method: 'GET', url: `${r.url}{{{resto}}}` }],
    });
    expect(after.status).toBe(400);
    const base = await createFlow(acct, {
      name: 'Base',
      trigger: { type: 'api' },
      steps: [{ id: 'h', type: 'http', method: 'GET', url: '{{{base}}}/api/{{pedido}}' }],
    });
    const got2 = r.received.length;
    await runWith(acct.id, base.id, { base: r.url, pedido: 'a/b' });
    const [req2] = (await r.waitFor(got2 + 1)).slice(got2);
    expect(req2.path).toBe('/api/a%2Fb');
    // A plain {{var}} at the start is refused at save: it would be encoded.
    const plain = await app.admin('POST', `/accounts/${acct.id}/automations`, {
      name: 'Base sin triple',
      trigger: { type: 'api' },
      steps: [{ id: 'h', type: 'http', method: 'GET', url: '{{base}}/x' }],
    });
    expect(plain.status).toBe(400);
  });
});

describe('"a header value with CR or LF is refused with its own reason; nothing is sent"', () => {
  it('onError gets the reason in the step log; without onError the execution fails', async () => {
    const acct = await app.createAccount();
    const a = await createFlow(acct, {
      name: 'Encabezado',
      trigger: { type: 'api' },
      steps: [
        { id: 'h', type: 'http', method: 'POST', url: `${r.url}/crlf`, headers: { 'X-Pedido': '{{pedido}}' }, onError: 'x' },
        { id: 'ok', type: 'end' },
        { id: 'x', type: 'end' },
      ],
    });
    const got = r.received.length;
    const t = await runWith(acct.id, a.id, { pedido: 'A-12\r\nX-Admin: si' });
    const full = await execution(acct, a.id, t.id);
    expect(full.steps.map((s: any) => `${s.stepId}:${s.outcome}`)).toEqual(['h:error', 'x:ok']);
    expect(full.steps[0].detail).toMatchObject({ reason: 'el valor del encabezado x-pedido tiene un salto de línea y no se mandó' });

    const b = await createFlow(acct, {
      name: 'Encabezado sin onError',
      trigger: { type: 'api' },
      steps: [{ id: 'h', type: 'http', method: 'GET', url: `${r.url}/crlf`, headers: { 'X-Pedido': '{{pedido}}' } }],
    });
    const u = await runWith(acct.id, b.id, { pedido: 'A-12\nX' });
    expect(u).toMatchObject({
      status: 'failed',
      error:
        'El pedido HTTP del paso "h" falló (el valor del encabezado x-pedido tiene un salto de línea y no se mandó) y el paso no tiene onError.',
    });
    await new Promise((ok) => setTimeout(ok, 200));
    expect(r.received.slice(got).filter((x) => x.path === '/crlf')).toEqual([]);

    const badName = await app.admin('POST', `/accounts/${acct.id}/automations`, {
      name: 'Nombre malo',
      trigger: { type: 'api' },
      steps: [{ id: 'h', type: 'http', method: 'GET', url: `${r.url}/x`, headers: { 'X-Mal\r\nY': '1' } }],
    });
    expect(badName.status).toBe(400);
  });
});
