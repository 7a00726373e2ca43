// Templates: public GET /templates, GET /templates/{id} (api.md §4, decisions.md "Resources") and
// the operator's POST/PATCH/DELETE /admin/v1/accounts/{id}/templates (operator.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

const problems = (body: { error: { message: string } }) =>
  JSON.parse(body.error.message) as { path: (string | number)[]; message: string }[];

const confirmation = {
  name: 'confirmacion_pedido',
  category: 'UTILITY',
  body: 'Hola {{nombre}}, tu pedido {{ pedido }} está listo.',
  variables: [
    { name: 'nombre', label: 'Nombre', example: 'Ana' },
    { name: 'pedido', label: 'Número de pedido', example: '1234' },
  ],
};

const createTemplate = (acc: TestAccount, body: Record<string, unknown>) => app.admin('POST', `/accounts/${acc.id}/templates`, body);

describe('operator templates (operator.md "Channel numbers")', () => {
  it('POST …/templates → 201 Template; language defaults to es_AR and status to PENDING', async () => {
    const acc = await app.createAccount();
    const res = await createTemplate(acc, confirmation);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'confirmacion_pedido',
      category: 'UTILITY',
      language: 'es_AR',
      status: 'PENDING',
      body: confirmation.body,
      variables: confirmation.variables,
      createdAt: expect.stringMatching(/\.\d{3}Z$/),
      updatedAt: expect.any(String),
    });
    const approved = await createTemplate(acc, {
      name: 'promo',
      category: 'MARKETING',
      language: 'en_US',
      body: 'Sale today!',
      variables: [],
      status: 'APPROVED',
    });
    expect(approved.status).toBe(201);
    expect(approved.body).toMatchObject({ language: 'en_US', status: 'APPROVED', category: 'MARKETING', variables: [] });
  });

  it('"Categories: MARKETING, UTILITY, AUTHENTICATION"; statuses APPROVED, PENDING, REJECTED, PAUSED, DISABLED: others → 400', async () => {
    const acc = await app.createAccount();
    const badCategory = await createTemplate(acc, { ...confirmation, category: 'PROMO' });
    expect(badCategory.status).toBe(400);
    expect(problems(badCategory.body)[0]?.path).toEqual(['category']);
    const badStatus = await createTemplate(acc, { ...confirmation, status: 'LIVE' });
    expect(badStatus.status).toBe(400);
    expect(problems(badStatus.body)[0]?.path).toEqual(['status']);
    const missing = await createTemplate(acc, { category: 'UTILITY' });
    expect(problems(missing.body).map((p) => p.path)).toEqual(expect.arrayContaining([['name'], ['body']]));
  });

  it("the body's {{placeholders}} and the variables must be the same names (400 otherwise)", async () => {
    const acc = await app.createAccount();
    const undeclared = await createTemplate(acc, { ...confirmation, variables: [confirmation.variables[0]] });
    expect(undeclared.status).toBe(400);
    expect(problems(undeclared.body)[0]).toEqual({ path: ['variables'], message: expect.stringContaining('pedido') });
    const unused = await createTemplate(acc, { ...confirmation, body: 'Hola {{nombre}}' });
    expect(unused.status).toBe(400);
    expect(problems(unused.body)[0]?.message).toContain('pedido');
    const twice = await createTemplate(acc, { ...confirmation, variables: [...confirmation.variables, confirmation.variables[0]] });
    expect(twice.status).toBe(400);
    expect(problems(twice.body).map((p) => p.path)).toContainEqual(['variables', 2, 'name']);
    const positional = await createTemplate(acc, {
      name: 'posicional',
      category: 'UTILITY',
      body: 'Hola {{1}}, tu código es {{2}}',
      variables: [
        { name: '1', label: 'Nombre', example: 'Ana' },
        { name: '2', label: 'Código', example: '999' },
      ],
    });
    expect(positional.status).toBe(201);
  });

  it('one live template per name and language: a repeat → 409, reusable after DELETE', async () => {
    const acc = await app.createAccount();
    expect((await createTemplate(acc, confirmation)).status).toBe(201);
    const again = await createTemplate(acc, confirmation);
    expect(again.status).toBe(409);
    expect(again.body.cause).toBeNull();
    expect((await createTemplate(acc, { ...confirmation, language: 'es' })).status).toBe(201);
    const list = await acc.call('GET', '/templates');
    const first = list.body.data.find((t: { language: string }) => t.language === 'es_AR');
    expect((await app.admin('DELETE', `/accounts/${acc.id}/templates/${first.id}`)).status).toBe(204);
    expect((await createTemplate(acc, confirmation)).status).toBe(201);
  });

  it('unknown account → 404; a template of another account → 404', async () => {
    const acc = await app.createAccount();
    const other = await app.createAccount();
    const t = await createTemplate(other, confirmation);
    expect((await app.admin('POST', '/accounts/00000000-0000-4000-8000-000000000000/templates', confirmation)).status).toBe(404);
    expect((await app.admin('PATCH', `/accounts/${acc.id}/templates/${t.body.id}`, { status: 'APPROVED' })).status).toBe(404);
    expect((await app.admin('DELETE', `/accounts/${acc.id}/templates/${t.body.id}`)).status).toBe(404);
    expect((await other.call('GET', `/templates/${t.body.id}`)).body.status).toBe('PENDING');
  });

  it("PATCH …/templates/{tid} {status} moves the status (the channel's approval)", async () => {
    const acc = await app.createAccount();
    const t = await createTemplate(acc, confirmation);
    const res = await app.admin('PATCH', `/accounts/${acc.id}/templates/${t.body.id}`, { status: 'APPROVED' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: t.body.id, status: 'APPROVED' });
    expect((await acc.call('GET', `/templates/${t.body.id}`)).body.status).toBe('APPROVED');
    expect((await app.admin('PATCH', `/accounts/${acc.id}/templates/${t.body.id}`, { status: 'BORRADOR' })).status).toBe(400);
  });
});

describe('GET /templates and GET /templates/{id} (api.md §4, decisions.md "Resources")', () => {
  let acc: TestAccount;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    acc = await app.createAccount();
    for (const [name, category, status] of [
      ['bienvenida', 'MARKETING', 'APPROVED'],
      ['envio', 'UTILITY', 'APPROVED'],
      ['codigo', 'AUTHENTICATION', 'PENDING'],
      ['oferta', 'MARKETING', 'REJECTED'],
    ] as const) {
      const t = await createTemplate(acc, { name, category, status, body: `Texto de ${name}`, variables: [] });
      ids[name] = t.body.id;
    }
    const other = await app.createAccount();
    await createTemplate(other, confirmation);
  });

  it('"GET /templates lists every template of the account" as {data: [Template]}', async () => {
    const res = await acc.call('GET', '/templates');
    expect(res.status).toBe(200);
    expect(res.body.data.map((t: { name: string }) => t.name)).toEqual(['bienvenida', 'envio', 'codigo', 'oferta']);
    expect(res.body.data[0]).toEqual({
      id: ids.bienvenida,
      name: 'bienvenida',
      category: 'MARKETING',
      language: 'es_AR',
      status: 'APPROVED',
      body: 'Texto de bienvenida',
      variables: [],
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
  });

  it('"optional filters status, category" (together they both apply; an unknown value → 400)', async () => {
    const names = async (qs: string) => (await acc.call('GET', `/templates?${qs}`)).body.data.map((t: { name: string }) => t.name);
    expect(await names('status=APPROVED')).toEqual(['bienvenida', 'envio']);
    expect(await names('category=MARKETING')).toEqual(['bienvenida', 'oferta']);
    expect(await names('category=MARKETING&status=REJECTED')).toEqual(['oferta']);
    expect(await names('status=PAUSED')).toEqual([]);
    const bad = await acc.call('GET', '/templates?status=VIVO');
    expect(bad.status).toBe(400);
    expect(problems(bad.body)[0]?.path).toEqual(['status']);
  });

  it("GET /templates/{id}: the Template; another account's id → 404", async () => {
    const one = await acc.call('GET', `/templates/${ids.envio}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: ids.envio, name: 'envio', category: 'UTILITY' });
    const other = await app.createAccount();
    const res = await other.call('GET', `/templates/${ids.envio}`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: expect.any(String), cause: null });
  });

  it('DELETE …/templates/{tid} → 204: it leaves GET /templates, GET /templates/{id} answers 404, and a second DELETE → 404', async () => {
    const own = await app.createAccount();
    const t = await createTemplate(own, { ...confirmation, status: 'APPROVED' });
    expect((await app.admin('DELETE', `/accounts/${own.id}/templates/${t.body.id}`)).status).toBe(204);
    expect((await own.call('GET', '/templates')).body.data).toEqual([]);
    const gone = await own.call('GET', `/templates/${t.body.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error).toMatch(/plantilla/);
    expect((await app.admin('DELETE', `/accounts/${own.id}/templates/${t.body.id}`)).status).toBe(404);
    expect((await app.admin('PATCH', `/accounts/${own.id}/templates/${t.body.id}`, { status: 'APPROVED' })).status).toBe(404);
  });

  it('"404 (template no longer exists)": sending a deleted template answers 404 (operator.md)', async () => {
    const own = await app.createAccount();
    const t = await createTemplate(own, { ...confirmation, status: 'APPROVED' });
    await app.admin('DELETE', `/accounts/${own.id}/templates/${t.body.id}`);
    const res = await own.call('POST', '/messages', {
      to: freshPhone(),
      template: { id: t.body.id, variables: { nombre: 'Ana' } },
    });
    expect(res.status).toBe(404);
    expect(res.body.error).toMatch(/plantilla/);
  });
});
