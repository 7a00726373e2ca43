// Agentes de IA in the console (console.md "Pages": "an agent's test chat and reviews"; issue 27:
// "configuration (instructions, goal, handoff rules, model), the test chat, reviews; the numbers
// that use each agent"), in Debian's chromium against the real server and the fake language model
// (test/fakes/llm.ts). Elements are found by role and accessible name only.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { haveBrowser, launchBrowser, loginAs, openPage, SHOTS } from '../console.js';
import { addMember } from '../console-session.js';
import { type FakeLlm, type FakeLlmAnswer, type FakeLlmRequest, startFakeLlm } from '../fakes/llm.js';
import { freshPhone, type TestAccount, type TestApp } from '../harness.js';
import { startAppWithModel } from '../model-app.js';
import { until } from '../poll.js';

declare const document: {
  activeElement: { id: string } | null;
  documentElement: { scrollWidth: number; clientWidth: number };
};

let llm: FakeLlm;
let app: TestApp;
let browser: Browser;
/** The model's answers by kind of request: an agent's turn (tools) or a review (json_schema "review"). */
const turns: FakeLlmAnswer[] = [];
const reviews: FakeLlmAnswer[] = [];
const isReview = (r: FakeLlmRequest) => r.responseFormat?.json_schema?.name === 'review';

beforeAll(async () => {
  llm = await startFakeLlm();
  app = await startAppWithModel(llm);
  llm.otherwise = (req) =>
    isReview(req)
      ? (reviews.shift() ?? { json: { summary: null, criteria: [], extracted: [] } })
      : (turns.shift() ?? { text: null, toolCalls: [] });
  if (haveBrowser) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await llm?.close();
});
beforeEach(() => {
  llm.requests.length = 0;
  turns.length = 0;
  reviews.length = 0;
});

const AGENT = {
  name: 'Ventas',
  instructions: 'Sos la vendedora de la tienda de yerba.',
  goal: { description: 'Una intención de compra', fields: [{ name: 'producto', description: 'Qué quiere', required: true }] },
  handoff: { rules: ['Si pide un descuento'] },
  review: {
    criteria: [{ name: 'saludo', description: 'Saludó al empezar', kind: 'pass_fail' }],
    extract: [{ name: 'producto', description: 'Qué quiere comprar' }],
  },
};

async function agentOn(acct: TestAccount, body: Record<string, unknown> = {}) {
  const r = await app.admin('POST', `/accounts/${acct.id}/agents`, { ...AGENT, ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as { id: string; version: string };
}

const noHorizontalScroll = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

async function openAgent(page: Page, name: string) {
  await page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Agentes de IA' }).click();
  await page.getByRole('heading', { level: 1, name: 'Agentes de IA' }).waitFor();
  await page.getByRole('list', { name: 'Agentes de IA' }).getByRole('link', { name }).click();
  await page.getByRole('heading', { level: 1, name }).waitFor();
}

describe.skipIf(!haveBrowser)('Agentes de IA, in chromium', () => {
  it("the configuration: instructions, goal data, handoff rules and model saved through the page and read back through the operator API; the server's 400 next to its field, focused", async () => {
    const acc = await app.createAccount({ name: 'Yerbatería Norte' });
    const agent = await agentOn(acc);
    const admin = await addMember(app, acc.id, 'admin');
    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, admin);
    await openAgent(page, 'Ventas');
    await page.getByText('Versión 1').waitFor();

    const instructions = page.getByRole('textbox', { name: 'Instrucciones' });
    expect(await instructions.inputValue()).toBe(AGENT.instructions);
    await instructions.fill('Sos la vendedora de la yerbatería. Tuteá con voseo y nunca prometas descuentos.');
    await page.getByRole('button', { name: 'Agregar dato' }).click();
    await page.getByRole('textbox', { name: 'Nombre del dato 2' }).fill('cantidad');
    await page.getByRole('textbox', { name: 'Descripción del dato 2' }).fill('Cuántos kilos');
    await page.getByRole('checkbox', { name: 'Obligatorio' }).nth(1).check();
    await page.getByRole('textbox', { name: 'Reglas para pasar a una persona' }).fill('Si pide un descuento\nSi se queja de un envío');
    await page.getByRole('textbox', { name: 'Modelo' }).fill('qwen2.5:7b');
    // A slow machine's reads: a read of the agent from here on is held until the next edits are
    // typed. The page must not reread it after the save: a late reread remounted the form over
    // what was typed after "Guardamos…" showed (CI, stop 35).
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    await page.route(`**/agents/${agent.id}`, async (route) => {
      if (route.request().method() === 'GET') await held;
      await route.continue();
    });
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Guardamos la configuración (versión 2).').waitFor();

    const read = (await app.admin('GET', `/accounts/${acc.id}/agents/${agent.id}`)).body;
    expect(read).toMatchObject({
      version: '2',
      instructions: 'Sos la vendedora de la yerbatería. Tuteá con voseo y nunca prometas descuentos.',
      goal: {
        description: 'Una intención de compra',
        fields: [
          { name: 'producto', description: 'Qué quiere', required: true },
          { name: 'cantidad', description: 'Cuántos kilos', required: true },
        ],
      },
      handoff: { rules: ['Si pide un descuento', 'Si se queja de un envío'] },
      model: 'qwen2.5:7b',
      maxTurns: 30,
    });
    // The review configuration, which the page does not edit, is untouched.
    expect(read.review).toEqual(AGENT.review);

    // A data name with a space and 0 turns: the server's problems, each next to its field; the first invalid one focused.
    await page.getByRole('textbox', { name: 'Nombre del dato 2' }).fill('cantidad pedida');
    await page.getByRole('spinbutton', { name: 'Máximo de turnos' }).fill('0');
    release();
    await page.waitForTimeout(300); // what a held read would do to the form, it has done by now
    await page.getByRole('button', { name: 'Guardar' }).click();
    const name2 = page.getByRole('textbox', { name: 'Nombre del dato 2' });
    await until(async () => (await name2.getAttribute('aria-invalid')) === 'true', { what: 'the field name error' });
    expect(await page.getByRole('spinbutton', { name: 'Máximo de turnos' }).getAttribute('aria-invalid')).toBe('true');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('goal-field-1-name');
    expect((await app.admin('GET', `/accounts/${acc.id}/agents/${agent.id}`)).body.version).toBe('2');
    await page
      .getByRole('group', { name: 'Datos a obtener' })
      .evaluate((el) => (el as unknown as { scrollIntoView(): void }).scrollIntoView());
    await page.screenshot({ path: `${SHOTS}/agents-config-1280.png` });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('Crear agente: a blank name is refused next to the field by the server; a name creates it paused and opens it', async () => {
    const acc = await app.createAccount({ name: 'Yerbatería Oeste' });
    const admin = await addMember(app, acc.id, 'admin');
    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, admin);
    await page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Agentes de IA' }).click();
    await page.getByText('Todavía no hay agentes.', { exact: false }).waitFor();
    const name = page.getByRole('textbox', { name: 'Nombre del agente' });
    await name.fill('   ');
    await page.getByRole('button', { name: 'Crear agente' }).click();
    await until(async () => (await name.getAttribute('aria-invalid')) === 'true', { what: 'the name error' });
    expect((await app.admin('GET', `/accounts/${acc.id}/agents`)).body.data).toEqual([]);
    await name.fill('Postventa');
    await name.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Postventa' }).waitFor();
    await page.getByText('Creamos el agente, pausado.', { exact: false }).waitFor();
    const [made] = (await app.admin('GET', `/accounts/${acc.id}/agents`)).body.data;
    expect(made).toMatchObject({ name: 'Postventa', status: 'paused', version: '1' });
    await page.getByText(/^Ningún número usa este agente/).waitFor();
    // Activar, then Pausar: the state line follows the server's answer, read back through the API.
    await page.getByRole('button', { name: 'Activar' }).click();
    await page.getByText('El agente está activo: contesta en los números que lo usan.').waitFor();
    await page.getByRole('button', { name: 'Pausar' }).waitFor();
    expect((await app.admin('GET', `/accounts/${acc.id}/agents/${made.id}`)).body.status).toBe('active');
    await page.getByRole('button', { name: 'Pausar' }).click();
    await page.getByText('El agente está pausado: no contesta hasta que lo actives.').waitFor();
    await page.getByRole('button', { name: 'Activar' }).waitFor();
    expect((await app.admin('GET', `/accounts/${acc.id}/agents/${made.id}`)).body.status).toBe('paused');
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it("the test chat: `Mensaje de prueba` and `Enviar` show the fake model's reply and its decision; the conversation goes on with its earlier turns", async () => {
    const acc = await app.createAccount({ name: 'Yerbatería Sur' });
    await agentOn(acc);
    const admin = await addMember(app, acc.id, 'owner');
    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, admin);
    await openAgent(page, 'Ventas');

    turns.push({ text: null, toolCalls: [{ name: 'reply', args: { text: '¡Hola! ¿Qué yerba buscás?' } }] });
    await page.getByRole('textbox', { name: 'Mensaje de prueba' }).fill('Hola, quiero yerba');
    await page.getByRole('button', { name: 'Enviar' }).click();
    const log = page.getByRole('log', { name: 'Chat de prueba' });
    await log.getByText('¡Hola! ¿Qué yerba buscás?').waitFor();
    expect(llm.requests[0]?.lastUser).toBe('Hola, quiero yerba');

    turns.push({
      text: null,
      toolCalls: [
        { name: 'reply', args: { text: 'Listo, te anoto 2 kg de yerba.' } },
        { name: 'goal_reached', args: { data: { producto: 'yerba' }, summary: 'Quiere yerba' } },
      ],
    });
    await page.getByRole('textbox', { name: 'Mensaje de prueba' }).fill('Dos kilos de la suave');
    await page.keyboard.press('Enter');
    await log.getByText('Decisión: objetivo cumplido — producto: yerba').waitFor();
    expect(await log.getByRole('listitem').allInnerTexts()).toEqual([
      'Vos: Hola, quiero yerba',
      'Agente: ¡Hola! ¿Qué yerba buscás?',
      'Vos: Dos kilos de la suave',
      'Agente: Listo, te anoto 2 kg de yerba.',
      'Decisión: objetivo cumplido — producto: yerba',
    ]);
    // The second turn carried the first one.
    expect(llm.requests[1]?.messages.slice(1).map((m: { content: string }) => m.content)).toEqual([
      'Hola, quiero yerba',
      '¡Hola! ¿Qué yerba buscás?',
      'Dos kilos de la suave',
    ]);
    // A handoff phrase passes to a person without asking the model.
    await page.getByRole('textbox', { name: 'Mensaje de prueba' }).fill('Quiero hablar con una persona');
    await page.getByRole('button', { name: 'Enviar' }).click();
    await log.getByText('Decisión: pasar a una persona', { exact: false }).waitFor();
    expect(llm.requests).toHaveLength(2);
    await page
      .getByRole('heading', { level: 2, name: 'Chat de prueba' })
      .evaluate((el) => (el as unknown as { scrollIntoView(): void }).scrollIntoView());
    await page.screenshot({ path: `${SHOTS}/agents-chat-1280.png` });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('reviews listed (the stretch a customer had on the sandbox, reviewed by the fake model), rerun from the page; the numbers that use the agent; at 360 px', async () => {
    const acc = await app.createAccount({ name: 'Yerbatería Este' });
    const agent = await agentOn(acc, { status: 'active' });
    const p = await app.admin('PATCH', `/accounts/${acc.id}/phone-numbers/${acc.phoneNumberId}`, { agentId: agent.id });
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    turns.push({
      text: null,
      toolCalls: [
        { name: 'reply', args: { text: '¡Hola! Te anoto la yerba.' } },
        { name: 'goal_reached', args: { data: { producto: 'yerba' }, summary: 'Quiere yerba' } },
      ],
    });
    reviews.push({
      json: {
        summary: 'La clienta quiere 2 kg de yerba.',
        criteria: [{ name: 'saludo', result: 'success', score: null }],
        extracted: [{ name: 'producto', value: 'yerba' }],
      },
    });
    expect((await app.inbound({ accountId: acc.id, from: freshPhone(), text: 'Hola, quiero 2 kg de yerba' })).status).toBe(201);
    expect((await app.admin('POST', '/jobs/agents/run')).status).toBe(200);
    expect((await app.admin('POST', '/jobs/agent-reviews/run')).status).toBe(200);
    const listed = (await app.admin('GET', `/accounts/${acc.id}/agents/${agent.id}/reviews`)).body.data;
    expect(listed, JSON.stringify(listed)).toMatchObject([{ status: 'done', summary: 'La clienta quiere 2 kg de yerba.' }]);

    const admin = await addMember(app, acc.id, 'admin');
    for (const width of [360, 1280]) {
      const { page, errors } = await openPage(browser, width);
      await loginAs(page, app.url, admin);
      await page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Agentes de IA' }).click();
      const item = page.getByRole('list', { name: 'Agentes de IA' }).getByRole('listitem').filter({ hasText: 'Ventas' });
      await item.getByText(`Números: +${acc.phone.replace(/^\+/, '')}`, { exact: false }).waitFor();
      await page.screenshot({ path: `${SHOTS}/agents-list-${width}.png` });
      expect(await noHorizontalScroll(page)).toBe(true);
      await item.getByRole('link', { name: 'Ventas' }).click();
      await page.getByRole('heading', { level: 2, name: 'Números' }).waitFor();
      const table = page.getByRole('table', { name: 'Revisiones' });
      await table.waitFor();
      const row = table.getByRole('row').filter({ hasText: 'La clienta quiere 2 kg de yerba.' });
      expect(await row.getByRole('cell').allInnerTexts()).toEqual([
        expect.any(String),
        'objetivo',
        'hecha',
        'La clienta quiere 2 kg de yerba.',
        'saludo: cumple',
        'producto: yerba',
        'Volver a revisar',
      ]);
      expect(await noHorizontalScroll(page)).toBe(true);
      if (width === 1280) {
        reviews.push({ json: { summary: 'Quiere yerba suave.', criteria: [], extracted: [] } });
        await row.getByRole('button', { name: 'Volver a revisar' }).click();
        await page.getByText('Revisamos la conversación de nuevo.').waitFor();
        await table.getByRole('row').filter({ hasText: 'Quiere yerba suave.' }).waitFor();
        const again = (await app.admin('GET', `/accounts/${acc.id}/agents/${agent.id}/reviews`)).body.data;
        expect(again[0]).toMatchObject({ summary: 'Quiere yerba suave.', runs: 2 });
        await page
          .getByRole('heading', { level: 2, name: 'Revisiones' })
          .evaluate((el) => (el as unknown as { scrollIntoView(): void }).scrollIntoView());
        await page.screenshot({ path: `${SHOTS}/agents-reviews-1280.png` });
      } else {
        await page.screenshot({ path: `${SHOTS}/agents-detail-360.png` });
      }
      expect(errors).toEqual([]);
      await page.close();
    }
  }, 90_000);
});
