// Automatizaciones in the console (console.md "Pages": "an automation's executions with their step
// log … Editing flows stays JSON (with the validation errors of the operator API shown next to the
// field)"), in Debian's chromium against the real server. Elements are found by role and name.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveBrowser, launchBrowser, loginAs, openPage, SHOTS } from '../console.js';
import { addMember, signIn } from '../console-session.js';
import { freshPhone, startTestApp, type TestApp } from '../harness.js';
import { until } from '../poll.js';

declare const document: {
  activeElement: { textContent: string | null } | null;
  documentElement: { scrollWidth: number; clientWidth: number };
};

let app: TestApp;
let browser: Browser;
beforeAll(async () => {
  app = await startTestApp();
  if (haveBrowser) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const runDue = () => app.admin('POST', '/jobs/automations/run');
const noHorizontalScroll = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

/** The flow typed into the editor: a keyword, a greeting, a question that waits, a handoff. */
const flow = (steps: unknown[]) =>
  JSON.stringify({ name: 'Precios', trigger: { type: 'keyword', keywords: ['precio'], match: 'contains' }, steps }, null, 2);
const GOOD_STEPS = [
  { id: 'saludo', type: 'send', text: '¡Hola {{contact.name}}! Ya te pasamos los precios.' },
  { id: 'producto', type: 'ask', text: '¿Qué producto te interesa?', save: 'producto' },
  { id: 'pase', type: 'handoff', note: 'Consulta por {{producto}}' },
];

async function openSection(page: Page) {
  await page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Automatizaciones' }).click();
  await page.getByRole('heading', { level: 1, name: 'Automatizaciones' }).waitFor();
}

describe.skipIf(!haveBrowser)('Automatizaciones, in chromium', () => {
  it('a keyword flow created from JSON (a validation error shown under the editor with its path, focused), activated, run by a sandbox inbound, its execution and step log shown, cancelled, paused', async () => {
    const acc = await app.createAccount({ name: 'Zapatería Paso' });
    const admin = await addMember(app, acc.id, 'admin');
    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, admin);
    await openSection(page);
    await page.getByText('Todavía no hay automatizaciones.', { exact: false }).waitFor();

    await page.getByRole('link', { name: 'Crear automatización' }).click();
    const editor = page.getByRole('textbox', { name: 'Flujo (JSON)' });
    await editor.waitFor();
    // A step with a misspelt field and a wait of 0 minutes: the server's 400, each problem under the editor.
    await editor.fill(flow([{ ...GOOD_STEPS[0], nxt: 'pase' }, { id: 'espera', type: 'wait', minutes: 0 }, ...GOOD_STEPS.slice(1)]));
    await page.getByRole('button', { name: 'Crear', exact: true }).click();
    await page.getByText('El flujo tiene 2 problemas:').waitFor();
    const first = page.getByRole('button', { name: /^steps\.0\.nxt Este campo no existe/ });
    await first.waitFor();
    expect(await page.getByRole('button', { name: /^steps\.1\.minutes Tiene que ser mayor o igual a 1/ }).count()).toBe(1);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toMatch(/^steps\.0\.nxt/);
    expect(await editor.getAttribute('aria-invalid')).toBe('true');
    // The problem selects its place in the text.
    await first.press('Enter');
    expect(
      await editor.evaluate((el) => {
        const t = el as unknown as { value: string; selectionStart: number; selectionEnd: number };
        return t.value.slice(t.selectionStart, t.selectionEnd);
      }),
    ).toBe('"pase"');
    expect((await app.admin('GET', `/accounts/${acc.id}/automations`)).body.data).toEqual([]);
    await page.screenshot({ path: `${SHOTS}/automations-errors-1280.png` });

    // Broken JSON never reaches the server: the place is named.
    await editor.fill('{"name": "Precios",, }');
    await page.getByRole('button', { name: 'Crear', exact: true }).click();
    await page.getByRole('button', { name: /El JSON no se puede leer cerca de la línea 1, columna \d+/ }).waitFor();

    await editor.fill(flow(GOOD_STEPS));
    await page.getByRole('button', { name: 'Crear', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Precios' }).waitFor();
    await page.getByText('Creamos la automatización.', { exact: false }).waitFor();
    const [created] = (await app.admin('GET', `/accounts/${acc.id}/automations`)).body.data;
    expect(created).toMatchObject({ name: 'Precios', status: 'draft', trigger: { type: 'keyword', keywords: ['precio'] } });
    expect(created.steps.map((s: { id: string }) => s.id)).toEqual(['saludo', 'producto', 'pase']);

    // Its page keeps the flow in the editor (type and id first); Guardar sends it with PATCH.
    const saved = page.getByRole('textbox', { name: 'Flujo (JSON)' });
    const shown = JSON.parse(await saved.inputValue());
    expect(Object.keys(shown.steps[0]).slice(0, 2)).toEqual(['id', 'type']);
    shown.steps[0].text = '¡Hola {{contact.name}}! Te cuento los precios.';
    await saved.fill(JSON.stringify(shown, null, 2));
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Guardamos el flujo.').waitFor();
    expect((await app.admin('GET', `/accounts/${acc.id}/automations/${created.id}`)).body.steps[0].text).toBe(
      '¡Hola {{contact.name}}! Te cuento los precios.',
    );

    await page.getByRole('button', { name: 'Activar' }).click();
    await page.getByText('La automatización está activa', { exact: false }).waitFor();
    expect((await app.admin('GET', `/accounts/${acc.id}/automations/${created.id}`)).body.status).toBe('active');

    // A customer writes the keyword on the sandbox: the flow greets and asks.
    const inbound = await app.inbound({ accountId: acc.id, from: freshPhone(), text: '¿Precio de las zapatillas?', name: 'Ana' });
    expect(inbound.status).toBe(201);
    await runDue();
    // Live: the stream's events read the executions again, without Actualizar nor a reload.
    const table = page.getByRole('table', { name: 'Ejecuciones' });
    const row = table.getByRole('row').filter({ hasText: 'En curso' }).filter({ hasText: 'producto' });
    await row.waitFor({ timeout: 10_000 });
    await row.getByRole('button', { name: 'Ver pasos' }).click();
    const log = page.getByRole('table', { name: 'Pasos de la ejecución' });
    await log.waitFor();
    await until(async () => (await log.getByRole('row').count()) === 3, { what: 'two steps in the log' });
    const cells = async (n: number) => (await log.getByRole('row').nth(n).getByRole('cell').allInnerTexts()).slice(0, 3);
    expect(await cells(1)).toEqual(['saludo', 'send', 'ok']);
    expect(await cells(2)).toEqual(['producto', 'ask', 'asked']);
    await page
      .getByRole('heading', { level: 2, name: 'Ejecuciones' })
      .evaluate((el) => (el as unknown as { scrollIntoView(): void }).scrollIntoView());
    await page.screenshot({ path: `${SHOTS}/automations-detail-1280.png` });

    await row.getByRole('button', { name: 'Cancelar' }).click();
    await page.getByText('Cancelamos la ejecución.').waitFor();
    await table.getByRole('row').filter({ hasText: 'Cancelada' }).waitFor();
    const [ex] = (await app.admin('GET', `/accounts/${acc.id}/automations/${created.id}/executions`)).body.data;
    expect(ex.status).toBe('cancelled');

    await page.getByRole('button', { name: 'Pausar' }).click();
    await page.getByText('La automatización está pausada', { exact: false }).waitFor();
    expect((await app.admin('GET', `/accounts/${acc.id}/automations/${created.id}`)).body.status).toBe('paused');

    // The list: state and counters of GET …/automations.
    await page.getByRole('link', { name: 'Volver a Automatizaciones' }).click();
    const item = page.getByRole('list', { name: 'Automatizaciones' }).getByRole('listitem').filter({ hasText: 'Precios' });
    await item.waitFor();
    await item.getByText('Pausada').waitFor();
    // The counters, as GET …/automations gives them.
    expect(await item.getByRole('definition').allInnerTexts()).toEqual(['0', '0', '0', '0', '1']);
    const list = (await app.admin('GET', `/accounts/${acc.id}/automations`)).body.data;
    expect(list[0].executions).toEqual({ running: 0, completed: 0, handed_off: 0, failed: 0, cancelled: 1 });
    await page.screenshot({ path: `${SHOTS}/automations-list-1280.png` });
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it('Activar and Pausar from the keyboard; a test run on the sandbox from the page (a paused flow, for a customer who wrote): the execution is a test and runs to its end; the list at 360 px', async () => {
    const acc = await app.createAccount({ name: 'Kiosco Prueba' });
    const admin = await addMember(app, acc.id, 'owner');
    const phone = freshPhone();
    // The customer wrote first (the window is open); nothing starts.
    expect((await app.inbound({ accountId: acc.id, from: phone, text: 'Buenas tardes', name: 'Eva' })).status).toBe(201);
    const a = await app.admin('POST', `/accounts/${acc.id}/automations`, {
      name: 'Saludo',
      trigger: { type: 'api' },
      steps: [
        { id: 'hola', type: 'send', text: 'Hola {{contact.name}}' },
        { id: 'fin', type: 'end' },
      ],
    });
    expect(a.status).toBe(201);
    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, admin);
    await openSection(page);
    await page.getByRole('link', { name: 'Saludo' }).click();
    await page.getByRole('heading', { level: 1, name: 'Saludo' }).waitFor();
    // From the keyboard: the route change focused the h1; Tab reaches Activar, Enter activates, then Pausar.
    await page.getByRole('button', { name: 'Activar' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Activar');
    await page.keyboard.press('Enter');
    await page.getByText('La automatización está activa', { exact: false }).waitFor();
    await page.getByRole('button', { name: 'Pausar' }).press('Enter');
    await page.getByText('La automatización está pausada', { exact: false }).waitFor();
    expect((await app.admin('GET', `/accounts/${acc.id}/automations/${a.body.id}`)).body.status).toBe('paused');
    await page.getByRole('textbox', { name: 'Teléfono de prueba' }).fill(phone);
    await page.getByRole('button', { name: 'Probar' }).click();
    await page.getByText('La prueba arrancó: Completada.', { exact: false }).waitFor();
    const table = page.getByRole('table', { name: 'Ejecuciones' });
    await table.getByRole('row').filter({ hasText: 'Completada (prueba)' }).waitFor();
    const [ex] = (await app.admin('GET', `/accounts/${acc.id}/automations/${a.body.id}/executions`)).body.data;
    expect(ex).toMatchObject({ status: 'completed', test: true });
    // A number that is not a phone: the server's own 400, next to the field.
    await page.getByRole('textbox', { name: 'Teléfono de prueba' }).fill('abc');
    await page.getByRole('button', { name: 'Probar' }).click();
    await until(async () => (await page.getByRole('textbox', { name: 'Teléfono de prueba' }).getAttribute('aria-invalid')) === 'true', {
      what: 'the phone error',
    });
    expect(errors).toEqual([]);
    await page.close();

    const small = await openPage(browser, 360);
    await loginAs(small.page, app.url, admin);
    await small.page.goto(`${app.url}/console/automatizaciones`);
    await small.page.getByRole('list', { name: 'Automatizaciones' }).getByRole('listitem').filter({ hasText: 'Saludo' }).waitFor();
    expect(await noHorizontalScroll(small.page)).toBe(true);
    await small.page.screenshot({ path: `${SHOTS}/automations-list-360.png` });
    await small.page.getByRole('link', { name: 'Saludo' }).click();
    await small.page.getByRole('table', { name: 'Ejecuciones' }).waitFor();
    expect(await noHorizontalScroll(small.page)).toBe(true);
    await small.page.screenshot({ path: `${SHOTS}/automations-detail-360.png` });
    expect(small.errors).toEqual([]);
    await small.page.close();
  }, 90_000);

  it('an agent member does not reach it: the page says so and the route answers 403', async () => {
    const acc = await app.createAccount();
    const agent = await addMember(app, acc.id, 'agent');
    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, agent);
    expect(await page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Automatizaciones' }).count()).toBe(0);
    await page.goto(`${app.url}/console/automatizaciones`);
    await page.getByText('No tenés permiso para ver esta sección.', { exact: false }).waitFor();
    const session = await signIn(app, agent);
    expect((await session.call('GET', `/accounts/${acc.id}/automations`)).status).toBe(403);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});

describe('"GET …/automations: each automation with its execution counts" (docs/operator.md), which the list shows', () => {
  it('one of each status counted; the ended ones only for 30 days, by startedAt', async () => {
    const acc = await app.createAccount();
    const a = await app.admin('POST', `/accounts/${acc.id}/automations`, {
      name: 'Cuenta',
      trigger: { type: 'api' },
      steps: [
        { id: 'pasar', type: 'condition', if: { var: 'modo', op: 'not_equals', value: 'pasar' }, else: 'pase' },
        { id: 'terminar', type: 'condition', if: { var: 'modo', op: 'not_equals', value: 'fin' }, else: 'fin' },
        { id: 'q', type: 'ask', text: '¿Algo más?', save: 'x', timeoutMinutes: 10080 },
        { id: 'pase', type: 'handoff' },
        { id: 'fin', type: 'end' },
      ],
    });
    expect(a.status, JSON.stringify(a.body)).toBe(201);
    const counts = async () => {
      const list = (await app.admin('GET', `/accounts/${acc.id}/automations`)).body.data;
      return list.find((x: { id: string }) => x.id === a.body.id).executions;
    };
    expect(await counts()).toEqual({ running: 0, completed: 0, handed_off: 0, failed: 0, cancelled: 0 });

    const test = async (to: string, variables?: Record<string, string>) => {
      const r = await app.admin('POST', `/accounts/${acc.id}/automations/${a.body.id}/test`, { to, ...(variables ? { variables } : {}) });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body;
    };
    const wrote = async () => {
      const phone = freshPhone();
      expect((await app.inbound({ accountId: acc.id, from: phone, text: 'Hola' })).status).toBe(201);
      return phone;
    };
    expect((await test(await wrote(), { modo: 'fin' })).status).toBe('completed');
    expect((await test(await wrote(), { modo: 'pasar' })).status).toBe('handed_off');
    const running = await test(await wrote());
    expect(running.status).toBe('running');
    // Never wrote: the question cannot go out (the 24-hour window).
    expect((await test(freshPhone())).status).toBe('failed');
    expect(await counts()).toEqual({ running: 1, completed: 1, handed_off: 1, failed: 1, cancelled: 0 });

    const c = await app.admin('POST', `/accounts/${acc.id}/automations/${a.body.id}/executions/${running.id}/cancel`);
    expect(c.status).toBe(200);
    expect(await counts()).toEqual({ running: 0, completed: 1, handed_off: 1, failed: 1, cancelled: 1 });
    app.clock.advance(31 * 86_400_000);
    expect(await counts()).toEqual({ running: 0, completed: 0, handed_off: 0, failed: 0, cancelled: 0 });
    expect((await test(await wrote(), { modo: 'fin' })).status).toBe('completed');
    expect(await counts()).toEqual({ running: 0, completed: 1, handed_off: 0, failed: 0, cancelled: 0 });
  }, 30_000);
});
