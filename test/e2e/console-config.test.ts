// Configuración in the console (console.md "Pages" → Configuración; "Quality": "a key created and
// used, a webhook tested and its delivery seen"), in Debian's chromium against the real server.
// Elements are found by role and accessible name only.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_KINDS } from '../../src/webhooks/outbox.js';
import { haveBrowser, launchBrowser, loginAs, SHOTS } from '../console.js';
import { addMember, signIn } from '../console-session.js';
import { type Receiver, startReceiver } from '../fakes/receiver.js';
import { startTestApp, type TestApp } from '../harness.js';
import { until } from '../poll.js';

// What the functions given to page.evaluate() use in the browser (this project has no DOM types).
declare const document: { activeElement: unknown; documentElement: { scrollWidth: number; clientWidth: number } };
declare const navigator: { clipboard: { readText(): Promise<string> } };

let app: TestApp;
let browser: Browser;
let receiver: Receiver;
beforeAll(async () => {
  app = await startTestApp();
  receiver = await startReceiver();
  if (haveBrowser) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await app?.close();
});

/** A signed-in page (clipboard allowed) that fails the test on a script error. */
async function open(m: { email: string; password: string }, width: number) {
  const context: BrowserContext = await browser.newContext({
    viewport: { width, height: 800 },
    permissions: ['clipboard-read', 'clipboard-write'],
  });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) errors.push(msg.text());
  });
  await loginAs(page, app.url, m);
  return { page, context, errors };
}

const noHorizontalScroll = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

async function openConfig(page: Page) {
  await page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Configuración' }).click();
  await page.getByRole('heading', { level: 1, name: 'Configuración' }).waitFor();
}

describe.skipIf(!haveBrowser)('Configuración, in chromium', () => {
  it('Claves de API: "the key is shown once with a Copiar button and the text No la vas a poder ver de nuevo."; the key works on GET /api/v1/me; Revocar → 401', async () => {
    const acc = await app.createAccount({ name: 'Ferretería Gómez' });
    const admin = await addMember(app, acc.id, 'admin');
    const { page, context, errors } = await open(admin, 1280);
    await openConfig(page);
    for (const name of ['Claves de API', 'Webhooks', 'Números', 'Instagram', 'Apps de IA', 'Miembros', 'Uso y plan'])
      await page.getByRole('heading', { level: 2, name }).waitFor();

    await page.getByRole('button', { name: 'Crear clave' }).click();
    await page.getByRole('textbox', { name: 'Nombre' }).fill('Integración tienda');
    await page.getByRole('button', { name: 'Crear', exact: true }).click();
    const shown = page.getByRole('textbox', { name: 'Clave nueva' });
    await shown.waitFor();
    const key = await shown.inputValue();
    expect(key).toMatch(/^etk_live_/);
    await page.getByText('No la vas a poder ver de nuevo.').waitFor();
    await page.getByRole('button', { name: 'Copiar' }).click();
    await page.getByText('Copiada.').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await page.getByRole('button', { name: 'Listo' }).click();
    expect(await shown.count()).toBe(0);

    expect((await app.api(key, 'GET', '/me')).status).toBe(200);

    const row = page.getByRole('row').filter({ hasText: 'Integración tienda' });
    await row.getByRole('button', { name: 'Revocar' }).click();
    await row.getByRole('button', { name: 'Sí, revocar' }).click();
    await row.getByText(/^Revocada/).waitFor();
    expect((await app.api(key, 'GET', '/me')).status).toBe(401);

    // A server error goes next to its field: an empty name is refused by the server, not lost.
    await page.getByRole('button', { name: 'Crear clave' }).click();
    await page.getByRole('textbox', { name: 'Nombre' }).fill('   ');
    await page.getByRole('button', { name: 'Crear', exact: true }).click();
    await until(async () => (await page.getByRole('textbox', { name: 'Nombre' }).getAttribute('aria-invalid')) === 'true', {
      what: 'name error',
    });
    expect(errors).toEqual([]);
    await context.close();
  }, 60_000);

  it("Webhooks: Agregar webhook with one checkbox per event kind (the server's EVENT_KINDS), the secret shown once; Probar → the receiver gets the signed test event; Entregas shows its row with 200; Reenviar delivers again", async () => {
    const acc = await app.createAccount({ name: 'Panadería Sol' });
    const admin = await addMember(app, acc.id, 'admin');
    const { page, context, errors } = await open(admin, 1280);
    await openConfig(page);
    const before = receiver.received.length;

    await page.getByRole('button', { name: 'Agregar webhook' }).click();
    const group = page.getByRole('group', { name: 'Eventos' });
    await group.waitFor();
    const labels = await group.getByRole('checkbox').evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value));
    expect(labels).toEqual([...EVENT_KINDS]);
    for (const kind of EVENT_KINDS) expect(await group.getByRole('checkbox', { name: kind, exact: true }).count()).toBe(1);

    await page.getByRole('textbox', { name: 'URL' }).fill(`${receiver.url}/hooks/panaderia`);
    await group.getByRole('checkbox', { name: 'message.received', exact: true }).check();
    await page.getByRole('button', { name: 'Guardar' }).click();
    const shown = page.getByRole('textbox', { name: 'Secreto de firma' });
    await shown.waitFor();
    const secret = await shown.inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Listo' }).click();
    expect(await shown.count()).toBe(0);
    const list = await app.admin('GET', `/accounts/${acc.id}/webhooks`);
    expect(list.body.data).toEqual([expect.objectContaining({ url: `${receiver.url}/hooks/panaderia`, events: ['message.received'] })]);

    await page.getByRole('button', { name: 'Probar' }).click();
    const got = (await receiver.waitFor(before + 1)).at(-1)!;
    expect(got.json).toMatchObject({ event: 'message.received', test: true });
    const headers = {
      'webhook-id': String(got.headers['webhook-id']),
      'webhook-timestamp': String(got.headers['webhook-timestamp']),
      'webhook-signature': String(got.headers['webhook-signature']),
    };
    app.clock.set(Date.now());
    expect(new StandardWebhook(secret).verify(got.body, headers)).toBeTruthy();

    await page.getByRole('button', { name: 'Entregas' }).click();
    const table = page.getByRole('table', { name: 'Entregas' });
    const rowsWith200 = async () => {
      await page.getByRole('button', { name: 'Actualizar' }).click();
      await table.waitFor();
      return (await table.getByRole('row').filter({ hasText: '200' }).count()) > 0 && table;
    };
    await until(rowsWith200, { what: 'a delivery row with 200', every: 200 });
    const row = table.getByRole('row').filter({ hasText: 'message.received' }).first();
    expect(await row.getByRole('cell').allInnerTexts()).toEqual(['message.received', '200', '1', expect.any(String), 'Reenviar']);

    await row.getByRole('button', { name: 'Reenviar' }).click();
    const again = (await receiver.waitFor(before + 2)).at(-1)!;
    expect(again.headers['webhook-id']).toBe(got.headers['webhook-id']);
    await until(
      async () => {
        await page.getByRole('button', { name: 'Actualizar' }).click();
        return (await table.getByRole('row').filter({ hasText: '200' }).count()) === 2;
      },
      { what: 'two attempts in Entregas', every: 200 },
    );
    await page.screenshot({ path: `${SHOTS}/config-webhooks-1280.png`, fullPage: true });

    await page.getByRole('button', { name: 'Eliminar' }).click();
    await page.getByRole('button', { name: 'Sí, eliminar' }).click();
    await page.getByText('Todavía no hay webhooks.', { exact: false }).waitFor();
    expect((await app.admin('GET', `/accounts/${acc.id}/webhooks`)).body.data).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  }, 60_000);

  it('Uso y plan: the plan and each quota of GET /me as a bar named "<quota>: used de limit", "sin límite" when null; usable at 360 px', async () => {
    const acc = await app.createAccount({ name: 'Librería Norte', limits: { contacts: null } });
    const admin = await addMember(app, acc.id, 'admin');
    const me = (await app.api(acc.key, 'GET', '/me')).body;
    for (const width of [1280, 360]) {
      const { page, context, errors } = await open(admin, width);
      await openConfig(page);
      await page.getByRole('meter', { name: `Claves de API: 1 de ${me.limits.apiKeys}` }).waitFor();
      expect(await page.getByRole('meter', { name: `URLs de webhook: 0 de ${me.limits.webhookUrls}` }).count()).toBe(1);
      expect(await page.getByRole('meter', { name: /^Llamadas a la API este mes: \d+ de / }).count()).toBe(1);
      expect(await page.getByRole('meter', { name: /^Contactos/ }).count()).toBe(0);
      await page.getByText('Contactos: 0 (sin límite)').waitFor();
      await page.getByText('Plan: Escala').waitFor();
      expect(await page.getByRole('table', { name: 'Números' }).getByRole('row').count()).toBe(2);
      await page.screenshot({ path: `${SHOTS}/config-${width}.png`, fullPage: true });
      expect(await noHorizontalScroll(page)).toBe(true);
      expect(errors).toEqual([]);
      await context.close();
    }
  }, 60_000);

  it('a key from the keyboard alone: Tab reaches Crear clave, Enter opens Nombre, Enter creates, the key field has the focus, Listo gives it back to Crear clave', async () => {
    const acc = await app.createAccount({ name: 'Kiosco Teclado' });
    const admin = await addMember(app, acc.id, 'admin');
    const { page, context, errors } = await open(admin, 1280);
    await openConfig(page);
    const focused = (name: string, role: 'button' | 'textbox' = 'button') =>
      until(() => page.getByRole(role, { name, exact: true }).evaluate((el) => el === document.activeElement), {
        what: `the focus on ${name}`,
        ms: 3_000,
      });
    await page.getByRole('button', { name: 'Revocar' }).waitFor();
    // The route change put the focus on the h1; the first controls are the existing key's Revocar, then Crear clave.
    await page.keyboard.press('Tab');
    expect(await focused('Revocar')).toBe(true);
    await page.keyboard.press('Tab');
    expect(await focused('Crear clave')).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByRole('textbox', { name: 'Nombre' }).waitFor();
    expect(await focused('Nombre', 'textbox')).toBe(true);
    await page.keyboard.type('Desde el teclado');
    await page.keyboard.press('Enter');
    await page.getByRole('textbox', { name: 'Clave nueva' }).waitFor();
    expect(await focused('Clave nueva', 'textbox')).toBe(true);
    await page.keyboard.press('Tab');
    expect(await focused('Copiar')).toBe(true);
    await page.keyboard.press('Tab');
    expect(await focused('Listo')).toBe(true);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Crear clave' }).waitFor();
    expect(await focused('Crear clave')).toBe(true);
    expect(await page.getByRole('row').filter({ hasText: 'Desde el teclado' }).count()).toBe(1);
    expect(errors).toEqual([]);
    await context.close();
  }, 60_000);

  it('an owner sees Miembros: every member with name, email and role; at 360 px the key shown once and the webhook form fit', async () => {
    const acc = await app.createAccount({ name: 'Vivero Las Flores' });
    const owner = await addMember(app, acc.id, 'owner');
    await addMember(app, acc.id, 'agent');
    const { page, context, errors } = await open(owner, 360);
    await openConfig(page);
    const members = page.getByRole('table', { name: 'Miembros' });
    await members.waitFor();
    expect(await members.getByRole('row').count()).toBe(3);
    // The name is the row's header; the cells are email, role, …
    expect(await members.getByRole('row').filter({ hasText: owner.email.toLowerCase() }).getByRole('cell').nth(1).innerText()).toBe(
      'Dueño',
    );

    await page.getByRole('button', { name: 'Crear clave' }).click();
    await page.getByRole('textbox', { name: 'Nombre' }).fill('Celular');
    await page.getByRole('button', { name: 'Crear', exact: true }).click();
    await page.getByRole('textbox', { name: 'Clave nueva' }).waitFor();
    await page.getByRole('button', { name: 'Agregar webhook' }).click();
    await page.getByRole('textbox', { name: 'URL' }).fill('ftp://no-sirve');
    await page.getByRole('button', { name: 'Guardar' }).click();
    // The server's refusal goes next to the URL field.
    await until(async () => (await page.getByRole('textbox', { name: 'URL' }).getAttribute('aria-invalid')) === 'true', {
      what: 'URL error',
    });
    expect(await noHorizontalScroll(page)).toBe(true);
    await page.screenshot({ path: `${SHOTS}/config-forms-360.png`, fullPage: true });
    expect(errors).toEqual([]);
    await context.close();
  }, 60_000);

  it('an agent never sees Configuración: not in the navigation, a direct URL shows a plain "no tenés permiso", and the server answers 403 to its session', async () => {
    const acc = await app.createAccount();
    const agent = await addMember(app, acc.id, 'agent');
    const { page, context } = await open(agent, 1280);
    expect(await page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Configuración' }).count()).toBe(0);
    await page.goto(`${app.url}/console/configuracion`);
    await page.getByRole('heading', { level: 1, name: 'Configuración' }).waitFor();
    await page
      .getByRole('main')
      .getByText(/^No tenés permiso para ver esta sección/)
      .waitFor();
    expect(await page.getByRole('heading', { name: 'Claves de API' }).count()).toBe(0);
    expect(await page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Configuración' }).count()).toBe(0);
    const session = await signIn(app, agent);
    expect((await session.call('GET', `/accounts/${acc.id}/keys`)).status).toBe(403);
    await context.close();
  }, 30_000);
});
