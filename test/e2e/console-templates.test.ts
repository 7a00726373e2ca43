// Plantillas in the console (issue 27 item 4; console.md "Pages"): a template with two variables
// created in the page (the variable rows come from the body) and read back through the public
// GET /api/v1/templates; a server validation error next to its field; an agent sees the list
// without the create button; `Sincronizar` brings Meta's review status (a local fake Graph). In
// chromium against the real server, by role and accessible name.
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMemberFor, haveBrowser, launchBrowser, loginAs, openPage, SHOTS } from '../console.js';
import { cloudCredentials, type FakeGraph, startFakeGraph } from '../fakes/graph.js';
import { freshPhone, startTestApp, type TestApp } from '../harness.js';
import { until } from '../poll.js';

declare const document: { documentElement: { scrollWidth: number; clientWidth: number } };

let app: TestApp;
let browser: Browser;
let fake: FakeGraph;
beforeAll(async () => {
  fake = await startFakeGraph();
  app = await startTestApp({ env: { GRAPH_API_URL: fake.url } });
  if (haveBrowser) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await fake?.close();
});

const digits = (n: number) => Array.from(randomBytes(n), (b) => String(b % 10)).join('');
const noHorizontalScroll = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

async function openTemplates(page: Page) {
  await page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Plantillas' }).click();
  await page.getByRole('heading', { level: 1, name: 'Plantillas' }).waitFor();
}

describe.skipIf(!haveBrowser)('Plantillas in chromium', () => {
  it('an admin creates a template with two variables (rows from the body); a bad language is shown next to Idioma; GET /api/v1/templates reads it back; an agent sees it without Crear plantilla', async () => {
    const acc = await app.createAccount({ name: 'Pinturería Sur' });
    const admin = await addMemberFor(app, acc.id, 'admin');
    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, admin);
    await openTemplates(page);
    await page.getByText('Todavía no hay plantillas.').waitFor();
    // A sandbox account has no Cloud number: nothing to synchronise.
    expect(await page.getByRole('button', { name: 'Sincronizar' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Crear plantilla' }).click();
    await page.getByRole('textbox', { name: 'Nombre' }).fill('aviso_envio');
    await page.getByRole('combobox', { name: 'Categoría' }).selectOption({ label: 'Utilidad' });
    await page.getByRole('textbox', { name: 'Texto' }).fill('Hola {{nombre}}, tu pedido {{ pedido }} sale hoy. ¡Gracias, {{nombre}}!');
    // One row per variable, in the body's order, once each.
    await page.getByRole('textbox', { name: 'Etiqueta de nombre' }).fill('Nombre del cliente');
    await page.getByRole('textbox', { name: 'Ejemplo de nombre' }).fill('Ana');
    await page.getByRole('textbox', { name: 'Etiqueta de pedido' }).fill('Número de pedido');
    await page.getByRole('textbox', { name: 'Ejemplo de pedido' }).fill('A-1024');
    expect(await page.getByRole('textbox', { name: /^Etiqueta de / }).count()).toBe(2);

    // The server's validation, next to its field.
    const language = page.getByRole('textbox', { name: 'Idioma' });
    expect(await language.inputValue()).toBe('es_AR');
    await language.fill('español');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await until(async () => (await language.getAttribute('aria-invalid')) === 'true', { what: 'Idioma invalid' });
    const shown = await page.locator(`#${await language.getAttribute('aria-describedby')}`).innerText();
    const server = await app.admin('POST', `/accounts/${acc.id}/templates`, {
      name: 'aviso_envio',
      category: 'UTILITY',
      language: 'español',
      body: 'Hola {{nombre}}',
      variables: [{ name: 'nombre' }],
    });
    expect(server.status).toBe(400);
    expect(JSON.parse(server.body.error.message)).toEqual([{ path: ['language'], message: shown }]);
    await page.screenshot({ path: `${SHOTS}/templates-new-1280.png` });

    await language.fill('es_AR');
    await page.getByRole('button', { name: 'Guardar' }).click();
    await page.getByText('Guardaste la plantilla «aviso_envio».').waitFor();
    const item = page.getByRole('list', { name: 'Plantillas' }).getByRole('listitem').filter({ hasText: 'aviso_envio' });
    await item.getByText('En revisión').waitFor();
    expect(await item.innerText()).toContain('Utilidad · es_AR · Nombre del cliente, Número de pedido');

    const pub = await acc.call('GET', '/templates');
    expect(pub.status).toBe(200);
    expect(pub.body.data).toEqual([
      expect.objectContaining({
        name: 'aviso_envio',
        category: 'UTILITY',
        language: 'es_AR',
        status: 'PENDING',
        body: 'Hola {{nombre}}, tu pedido {{ pedido }} sale hoy. ¡Gracias, {{nombre}}!',
        variables: [
          { name: 'nombre', label: 'Nombre del cliente', example: 'Ana' },
          { name: 'pedido', label: 'Número de pedido', example: 'A-1024' },
        ],
      }),
    ]);
    await page.screenshot({ path: `${SHOTS}/templates-list-1280.png` });
    expect(errors).toEqual([]);
    await page.close();

    const agent = await addMemberFor(app, acc.id, 'agent', 'Luis Agente');
    const a = await openPage(browser, 360);
    await loginAs(a.page, app.url, agent);
    await openTemplates(a.page);
    await a.page.getByRole('list', { name: 'Plantillas' }).getByRole('listitem').filter({ hasText: 'aviso_envio' }).waitFor();
    expect(await a.page.getByRole('button', { name: 'Crear plantilla' }).count()).toBe(0);
    expect(await a.page.getByRole('button', { name: 'Sincronizar' }).count()).toBe(0);
    expect(await noHorizontalScroll(a.page)).toBe(true);
    await a.page.screenshot({ path: `${SHOTS}/templates-list-360.png` });
    expect(a.errors).toEqual([]);
    await a.page.close();
  }, 90_000);

  it('on a WhatsApp Cloud number, Sincronizar imports the templates of its WABA and shows their review status as it changes', async () => {
    const acc = await app.createAccount({ name: 'Tienda Cloud' });
    const c = cloudCredentials();
    const num = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, {
      phone: freshPhone({ spelling: 'digits' }),
      name: 'WhatsApp',
      provider: 'cloud',
      cloud: c,
    });
    expect(num.status).toBe(201);
    fake.tokens.set(c.phoneNumberId, c.accessToken);
    fake.tokens.set(c.wabaId, c.accessToken);
    const meta = {
      id: `1${digits(14)}`,
      name: 'promo_verano',
      language: 'es_AR',
      status: 'PENDING',
      category: 'MARKETING',
      parameter_format: 'NAMED',
      components: [
        {
          type: 'BODY',
          text: 'Hola {{nombre}}, llegó el verano.',
          example: { body_text_named_params: [{ param_name: 'nombre', example: 'Ana' }] },
        },
      ],
    };
    fake.templates.set(c.wabaId, [meta]);

    const owner = await addMemberFor(app, acc.id, 'owner');
    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, owner);
    await openTemplates(page);
    await page.getByRole('button', { name: 'Sincronizar' }).click();
    await page.getByText('Listo: 1 nuevas y 0 actualizadas desde Meta.').waitFor();
    const item = page.getByRole('list', { name: 'Plantillas' }).getByRole('listitem').filter({ hasText: 'promo_verano' });
    await item.getByText('En revisión').waitFor();
    expect(await item.innerText()).toContain('Marketing · es_AR');

    // Meta approves it; the next Sincronizar shows it.
    fake.templates.set(c.wabaId, [{ ...meta, status: 'APPROVED' }]);
    await page.getByRole('button', { name: 'Sincronizar' }).click();
    await page.getByText('Listo: 0 nuevas y 1 actualizadas desde Meta.').waitFor();
    await item.getByText('Aprobada').waitFor();
    expect((await acc.call('GET', '/templates')).body.data).toEqual([
      expect.objectContaining({ name: 'promo_verano', status: 'APPROVED' }),
    ]);
    await page.screenshot({ path: `${SHOTS}/templates-sync-1280.png` });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
