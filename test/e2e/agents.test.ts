// Issue 15: the Agent resource (docs/agents.md "Agent (operator API)"): the operator's CRUD under
// /admin/v1/accounts/{id}/agents, `version` ("1" at creation, +1 on every change of what the agent
// does), activation only with a language model, and the public `GET /agents` → {data: [{id, name,
// status, version}]}.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LlmClient } from '../../src/llm/types.js';
import { startTestApp, type TestAccount, type TestApp } from '../harness.js';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

const base = (acct: TestAccount) => `/accounts/${acct.id}/agents`;
const problemsOf = (body: { error: { message: string } }) =>
  JSON.parse(body.error.message) as { path: (string | number)[]; message: string }[];

async function create(acct: TestAccount, body: Record<string, unknown>) {
  const r = await app.admin('POST', base(acct), body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

/** A stand-in language model: only its presence matters here (the engine is not built yet). */
const standIn = { defaultModel: 'x', chat: async () => ({ text: null, toolCalls: [] }), json: async () => ({}) } as unknown as LlmClient;

async function withModel<T>(fn: () => Promise<T>): Promise<T> {
  const before = app.rt.services.llm;
  app.rt.services.llm = standIn;
  try {
    return await fn();
  } finally {
    app.rt.services.llm = before;
  }
}

describe('"Operator: POST/GET /accounts/{id}/agents, GET/PATCH/DELETE …/agents/{agentId}"', () => {
  it('create with only a name: version "1", status paused, the default handoff phrases, maxTurns 30, no goal, review or model', async () => {
    const acct = await app.createAccount();
    const a = await create(acct, { name: 'Vendedora' });
    expect(a).toEqual({
      id: expect.any(String),
      name: 'Vendedora',
      status: 'paused',
      version: '1',
      instructions: '',
      goal: null,
      handoff: { rules: [], phrases: ['hablar con una persona', 'humano', 'asesor', 'operador'] },
      review: null,
      model: null,
      maxTurns: 30,
      createdAt: app.clock.now().toISOString(),
      updatedAt: app.clock.now().toISOString(),
    });
    const got = await app.admin('GET', `${base(acct)}/${a.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(a);
  });

  it('create with everything: goal fields default required false, handoff phrases given replace the defaults, review kept', async () => {
    const acct = await app.createAccount();
    const a = await create(acct, {
      name: 'Ventas',
      instructions: 'Sos la vendedora de la tienda. No prometas envíos gratis.',
      goal: {
        description: 'Una intención de compra',
        fields: [
          { name: 'producto', description: 'Qué quiere', required: true },
          { name: 'cantidad', description: 'Cuántos' },
          { name: 'direccion' },
        ],
      },
      handoff: { rules: ['Si pide un descuento mayor al 10%'], phrases: ['quiero un humano'] },
      review: {
        criteria: [
          { name: 'cortesia', description: 'Fue amable', kind: 'pass_fail' },
          { name: 'claridad', description: 'Explicó bien', kind: 'score' },
        ],
        extract: [{ name: 'presupuesto', description: 'Cuánto quiere gastar' }],
      },
      model: 'llama3.1',
      maxTurns: 12,
    });
    expect(a).toMatchObject({
      status: 'paused',
      version: '1',
      goal: {
        description: 'Una intención de compra',
        fields: [
          { name: 'producto', description: 'Qué quiere', required: true },
          { name: 'cantidad', description: 'Cuántos', required: false },
          { name: 'direccion', description: '', required: false },
        ],
      },
      handoff: { rules: ['Si pide un descuento mayor al 10%'], phrases: ['quiero un humano'] },
      review: {
        criteria: [
          { name: 'cortesia', description: 'Fue amable', kind: 'pass_fail' },
          { name: 'claridad', description: 'Explicó bien', kind: 'score' },
        ],
        extract: [{ name: 'presupuesto', description: 'Cuánto quiere gastar' }],
      },
      model: 'llama3.1',
      maxTurns: 12,
    });
    // rules only: the phrases are the defaults
    const b = await create(acct, { name: 'Soporte', handoff: { rules: ['Si se enoja'] } });
    expect(b.handoff).toEqual({ rules: ['Si se enoja'], phrases: ['hablar con una persona', 'humano', 'asesor', 'operador'] });
    // an empty list is kept: no phrase hands off
    const c = await create(acct, { name: 'Sin frases', handoff: { rules: [], phrases: [] } });
    expect(c.handoff).toEqual({ rules: [], phrases: [] });
  });

  it('validation → 400 and nothing saved: unknown field, bad goal field name, duplicate goal field names, maxTurns 0 and 101, name and instructions too long', async () => {
    const acct = await app.createAccount();
    const bad = async (body: Record<string, unknown>) => {
      const r = await app.admin('POST', base(acct), body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      return problemsOf(r.body);
    };
    expect((await bad({ name: 'A', color: 'rojo' }))[0]?.message).toMatch(/no existe/i);
    const badName = await bad({ name: 'A', goal: { description: 'x', fields: [{ name: '1producto' }] } });
    expect(badName).toEqual([{ path: ['goal', 'fields', 0, 'name'], message: expect.stringContaining('empieza con una letra o _') }]);
    await bad({ name: 'A', goal: { description: 'x', fields: [{ name: 'dirección' }] } });
    const dup = await bad({
      name: 'A',
      goal: { description: 'x', fields: [{ name: 'producto' }, { name: 'cantidad' }, { name: 'producto' }] },
    });
    expect(dup).toEqual([{ path: ['goal', 'fields', 2, 'name'], message: expect.stringContaining('"producto"') }]);
    await bad({ name: 'A', maxTurns: 0 });
    await bad({ name: 'A', maxTurns: 101 });
    await bad({ name: 'A', maxTurns: 2.5 });
    await bad({ name: '' });
    await bad({ name: 'x'.repeat(121) });
    await bad({ name: 'A', instructions: 'x'.repeat(20_001) });
    await bad({ name: 'A', status: 'draft' });
    await bad({ name: 'A', goal: { description: 'x', fields: Array.from({ length: 21 }, (_, i) => ({ name: `f${i}` })) } });
    await bad({ name: 'A', handoff: { rules: [], phrases: ['x'.repeat(101)] } });
    await bad({ name: 'A', review: { criteria: [{ name: 'c', description: 'd', kind: 'stars' }], extract: [] } });
    await bad({ name: 'A', goal: { description: 'x', fields: [{ name: 'a', extra: 1 }] } });
    expect((await app.admin('GET', base(acct))).body.data).toEqual([]);

    const a = await create(acct, { name: 'Bien' });
    expect((await app.admin('PATCH', `${base(acct)}/${a.id}`, { color: 'rojo' })).status).toBe(400);
    expect((await app.admin('PATCH', `${base(acct)}/${a.id}`, { maxTurns: 101 })).status).toBe(400);
    expect((await app.admin('GET', `${base(acct)}/${a.id}`)).body).toEqual(a);
  });

  it('"version: +1 on every change of what follows": instructions, goal, handoff, review, model and maxTurns each add one; name and status alone do not', async () => {
    const acct = await app.createAccount();
    const a = await create(acct, { name: 'Versiones' });
    const url = `${base(acct)}/${a.id}`;
    const patch = async (body: Record<string, unknown>) => {
      app.clock.advance(1_000);
      const r = await app.admin('PATCH', url, body);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.updatedAt).toBe(app.clock.now().toISOString());
      return r.body;
    };
    expect((await patch({ instructions: 'Hablá de vos.' })).version).toBe('2');
    expect((await patch({ goal: { description: 'Un turno', fields: [{ name: 'dia', required: true }] } })).version).toBe('3');
    expect((await patch({ handoff: { rules: ['Si pide factura A'] } })).version).toBe('4');
    expect((await patch({ review: { criteria: [{ name: 'ok', description: '', kind: 'pass_fail' }], extract: [] } })).version).toBe('5');
    expect((await patch({ model: 'qwen2.5' })).version).toBe('6');
    const last = await patch({ maxTurns: 10 });
    expect(last).toMatchObject({
      version: '7',
      instructions: 'Hablá de vos.',
      goal: { description: 'Un turno', fields: [{ name: 'dia', description: '', required: true }] },
      handoff: { rules: ['Si pide factura A'], phrases: ['hablar con una persona', 'humano', 'asesor', 'operador'] },
      review: { criteria: [{ name: 'ok', description: '', kind: 'pass_fail' }], extract: [] },
      model: 'qwen2.5',
      maxTurns: 10,
    });
    // name and status alone keep the version
    expect(await patch({ name: 'Otro nombre' })).toMatchObject({ name: 'Otro nombre', version: '7' });
    expect(await patch({ status: 'paused' })).toMatchObject({ status: 'paused', version: '7' });
    // repeating the current values is no change
    expect((await patch({ maxTurns: 10, model: 'qwen2.5' })).version).toBe('7');
    // several changes in one PATCH: one step; null removes goal, review and model
    expect(await patch({ goal: null, review: null, model: null, name: 'Tercero' })).toMatchObject({
      version: '8',
      goal: null,
      review: null,
      model: null,
      name: 'Tercero',
    });
    expect((await app.admin('GET', url)).body.version).toBe('8');
  });

  it('two concurrent PATCHes of the instructions each count: version goes from "1" to "3"', async () => {
    const acct = await app.createAccount();
    const a = await create(acct, { name: 'Concurrente' });
    const url = `${base(acct)}/${a.id}`;
    const [x, y] = await Promise.all([app.admin('PATCH', url, { instructions: 'uno' }), app.admin('PATCH', url, { instructions: 'dos' })]);
    expect([x.status, y.status]).toEqual([200, 200]);
    expect([x.body.version, y.body.version].sort()).toEqual(['2', '3']);
    expect((await app.admin('GET', url)).body.version).toBe('3');
  });

  it('activating without a language model configured (LLM_BASE_URL unset) → 409 with the Spanish text, nothing changed; with one → 201/200', async () => {
    expect(app.rt.services.llm).toBeNull();
    const acct = await app.createAccount();
    const refused = await app.admin('POST', base(acct), { name: 'Activa', status: 'active' });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatch(/^No hay un modelo de lenguaje configurado/);
    expect(refused.body.error).toContain('LLM_BASE_URL');
    expect((await app.admin('GET', base(acct))).body.data).toEqual([]);

    const a = await create(acct, { name: 'Pausada' });
    const url = `${base(acct)}/${a.id}`;
    const patchRefused = await app.admin('PATCH', url, { status: 'active', instructions: 'Nuevas' });
    expect(patchRefused.status).toBe(409);
    expect(patchRefused.body.error).toMatch(/^No hay un modelo de lenguaje configurado/);
    expect((await app.admin('GET', url)).body).toEqual(a);

    await withModel(async () => {
      const created = await app.admin('POST', base(acct), { name: 'Con modelo', status: 'active' });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ status: 'active', version: '1' });
      const activated = await app.admin('PATCH', url, { status: 'active' });
      expect(activated.status).toBe(200);
      expect(activated.body).toMatchObject({ status: 'active', version: '1' });
    });
    // pausing never needs a model
    expect((await app.admin('PATCH', url, { status: 'paused' })).body.status).toBe('paused');
  });

  it("list newest first; accounts isolated (another account's agent → 404 for GET, PATCH and DELETE); unknown account → 404", async () => {
    const acct = await app.createAccount();
    const other = await app.createAccount();
    const first = await create(acct, { name: 'Primero' });
    app.clock.advance(1_000);
    const second = await create(acct, { name: 'Segundo' });
    const theirs = await create(other, { name: 'Ajeno' });
    const list = await app.admin('GET', base(acct));
    expect(list.status).toBe(200);
    expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([second.id, first.id]);
    expect(list.body.data[0]).toEqual(second);
    expect((await app.admin('GET', base(other))).body.data.map((x: { id: string }) => x.id)).toEqual([theirs.id]);

    const foreign = `${base(acct)}/${theirs.id}`;
    for (const [method, body] of [['GET'], ['PATCH', { name: 'Mío' }], ['DELETE']] as const) {
      const r = await app.admin(method, foreign, body);
      expect(r.status, method).toBe(404);
      expect(r.body.error).toBe('No encontramos ese agente de IA en tu cuenta. Revisá el id.');
    }
    expect((await app.admin('GET', `${base(other)}/${theirs.id}`)).body).toEqual(theirs);
    expect((await app.admin('GET', `/accounts/${crypto.randomUUID()}/agents`)).status).toBe(404);
    expect((await app.admin('POST', `/accounts/${crypto.randomUUID()}/agents`, { name: 'X' })).status).toBe(404);
  });

  it('DELETE → 204, then 404 everywhere and gone from the lists; the numbers it answered no longer name it', async () => {
    const acct = await app.createAccount();
    const a = await create(acct, { name: 'Efímero' });
    const keep = await create(acct, { name: 'Queda' });
    const db = app.rt.services.db;
    // No route assigns an agent to a number yet: the column is set directly to prove DELETE clears it.
    await db.updateTable('phone_numbers').set({ agent_id: a.id }).where('id', '=', acct.phoneNumberId).execute();
    const url = `${base(acct)}/${a.id}`;
    const del = await app.admin('DELETE', url);
    expect(del.status).toBe(204);
    expect((await app.admin('GET', url)).status).toBe(404);
    expect((await app.admin('PATCH', url, { name: 'Vuelve' })).status).toBe(404);
    expect((await app.admin('DELETE', url)).status).toBe(404);
    expect((await app.admin('GET', base(acct))).body.data.map((x: { id: string }) => x.id)).toEqual([keep.id]);
    expect((await acct.call('GET', '/agents')).body.data.map((x: { id: string }) => x.id)).toEqual([keep.id]);
    const number = await db.selectFrom('phone_numbers').select('agent_id').where('id', '=', acct.phoneNumberId).executeTakeFirstOrThrow();
    expect(number.agent_id).toBeNull();
    const row = await db.selectFrom('agents').select(['deleted_at']).where('id', '=', a.id).executeTakeFirstOrThrow();
    expect(row.deleted_at).not.toBeNull();
  });
});

describe('"Public: GET /agents → {data: [{id, name, status, version}]}"', () => {
  it("the account's agents, newest first, only those four keys; another account sees its own; counted as API calls", async () => {
    const acct = await app.createAccount();
    const other = await app.createAccount();
    const usage = async (id: string) => (await app.admin('GET', `/accounts/${id}`)).body.usage.apiCalls as number;
    const a = await create(acct, { name: 'Uno', instructions: 'secreto', goal: { description: 'x', fields: [] } });
    app.clock.advance(1_000);
    const b = await create(acct, { name: 'Dos' });
    await app.admin('PATCH', `${base(acct)}/${b.id}`, { instructions: 'cambio' });
    await create(other, { name: 'De otro' });

    const before = await usage(acct.id);
    const beforeOther = await usage(other.id);
    const r = await acct.call('GET', '/agents');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      data: [
        { id: b.id, name: 'Dos', status: 'paused', version: '2' },
        { id: a.id, name: 'Uno', status: 'paused', version: '1' },
      ],
    });
    const theirs = await other.call('GET', '/agents');
    expect(theirs.body.data.map((x: { name: string }) => x.name)).toEqual(['De otro']);
    expect((await app.api(null, 'GET', '/agents')).status).toBe(401);
    expect(await usage(acct.id)).toBe(before + 1);
    expect(await usage(other.id)).toBe(beforeOther + 1);
  });
});
