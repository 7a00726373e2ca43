// Contactos in the console (console.md "Pages" → Contactos; issue 27 item 2): search by name or
// phone, a contact's attribute edited and read back through the public API, a CSV of 10,000 rows
// with 20 bad ones imported through the page (the 20 listed with their reasons, the rest present,
// no contact.created delivered to a subscribed webhook) and Exportar CSV downloading every contact.
// In Debian's chromium against the real server, by role and accessible name.
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMemberFor, haveBrowser, launchBrowser, loginAs, openPage, SHOTS } from '../console.js';
import { type Receiver, startReceiver } from '../fakes/receiver.js';
import { freshPhone, startTestApp, type TestApp } from '../harness.js';
import { until } from '../poll.js';

declare const document: { documentElement: { scrollWidth: number; clientWidth: number } };
declare const window: { scrollTo(x: number, y: number): void };

/** Scrolls an element to the top of the viewport, for a screenshot of what follows it. */
const toTop = (l: { evaluate(f: (el: { scrollIntoView(o: object): void }) => void): Promise<unknown> }) =>
  l.evaluate((el) => el.scrollIntoView({ block: 'start' }));

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

const noHorizontalScroll = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

async function openContacts(page: Page) {
  await page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Contactos' }).click();
  await page.getByRole('heading', { level: 1, name: 'Contactos' }).waitFor();
}

/** Argentine mobiles, all different: +54 9 11 6<7 digits>. */
const mobile = (i: number) => `+54911${6_0000000 + i}`;

describe.skipIf(!haveBrowser)('Contactos in chromium', () => {
  it('an agent searches by name and by phone, opens a contact, edits an attribute (read back through the public API); a value too long is refused next to its field', async () => {
    const acc = await app.createAccount({ name: 'Librería Sur' });
    const agent = await addMemberFor(app, acc.id, 'agent', 'Carla Agente');
    const maria = await acc.call('POST', '/contacts', {
      phone: mobile(1),
      name: 'María López',
      attributes: { ciudad: 'Rosario', plan: 'anual' },
    });
    await acc.call('POST', '/contacts', { phone: mobile(2), name: 'Mario Gómez' });
    await acc.call('POST', '/contacts', { phone: mobile(3), name: 'Lucía Díaz' });
    expect((await app.inbound({ accountId: acc.id, from: mobile(1), text: 'Hola, ¿tienen el libro?' })).status).toBe(201);

    for (const width of [1280, 360]) {
      const { page, errors } = await openPage(browser, width);
      await loginAs(page, app.url, agent);
      await openContacts(page);
      const table = page.getByRole('table', { name: 'Contactos' });
      await table.getByRole('row').filter({ hasText: 'Lucía Díaz' }).waitFor();
      // Agents search and edit; importing and exporting the whole list is an admin's.
      expect(await page.getByRole('button', { name: 'Importar CSV' }).count()).toBe(0);
      expect(await page.getByRole('button', { name: 'Exportar CSV' }).count()).toBe(0);

      const search = page.getByRole('searchbox', { name: 'Buscar contactos' });
      await search.fill('mar');
      await until(async () => (await table.getByRole('row').count()) === 3, { what: 'two matches and the header' });
      expect(await table.getByRole('row').filter({ hasText: 'Lucía' }).count()).toBe(0);
      await page.screenshot({ path: `${SHOTS}/contacts-list-${width}.png` });
      expect(await noHorizontalScroll(page)).toBe(true);
      await search.fill('0000003');
      await until(async () => (await table.getByRole('row').count()) === 2 && (await table.innerText()).includes('Lucía Díaz'), {
        what: 'the phone match',
      });
      await search.fill('María');
      await until(async () => (await table.getByRole('row').count()) === 2, { what: 'one match' });
      await table.getByRole('link', { name: 'María López' }).click();
      await page.getByRole('heading', { level: 1, name: 'María López' }).waitFor();
      await page.getByText('Recibe mensajes.').waitFor();
      const convo = page.getByRole('link', { name: /^WhatsApp · desde/ });
      await convo.waitFor();
      expect(await convo.getAttribute('href')).toMatch(/^\/console\/conversaciones\/[0-9a-f-]{36}$/);

      const ciudad = page.getByRole('textbox', { name: 'ciudad', exact: true });
      const value = `Córdoba ${width}`;
      await ciudad.fill(value);
      await page.getByRole('button', { name: 'Guardar' }).click();
      await page.getByText('Guardado.').waitFor();
      const read = await acc.call('GET', `/contacts/${maria.body.id}`);
      expect(read.body.attributes).toMatchObject({ ciudad: value, plan: 'anual' });
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: `${SHOTS}/contacts-contact-${width}.png` });
      expect(await noHorizontalScroll(page)).toBe(true);

      // The API's limits: a value over 1,000 characters is refused, the reason next to the field.
      await ciudad.fill('x'.repeat(1001));
      await page.getByRole('button', { name: 'Guardar' }).click();
      await until(async () => (await ciudad.getAttribute('aria-invalid')) === 'true', { what: 'the field marked invalid' });
      expect((await acc.call('GET', `/contacts/${maria.body.id}`)).body.attributes.ciudad).toBe(value);
      // A new attribute through the page.
      await ciudad.fill(value);
      await page.getByRole('textbox', { name: 'Atributo nuevo', exact: true }).fill('nro_socio');
      await page.getByRole('textbox', { name: 'Valor del atributo nuevo' }).fill(`A-${width}`);
      await page.getByRole('button', { name: 'Guardar' }).click();
      // The 1280 pass left a field named nro_socio: wait for this pass's value, not for the field.
      const socio = page.getByRole('textbox', { name: 'nro_socio', exact: true });
      await until(async () => (await socio.count()) === 1 && (await socio.inputValue()) === `A-${width}`, {
        what: 'the new attribute shown',
      });
      expect((await acc.call('GET', `/contacts/${maria.body.id}`)).body.attributes.nro_socio).toBe(`A-${width}`);
      expect(errors).toEqual([]);
      await page.context().close();
    }
  }, 90_000);

  it('Importar CSV: 10,000 rows with 20 bad ones — the preview lists the 20 with row, value and reason; Importar imports the rest with progress; no contact.created reaches the webhook; Exportar CSV downloads them', async () => {
    const acc = await app.createAccount({ name: 'Distribuidora Norte' });
    const hook = await app.admin('POST', `/accounts/${acc.id}/webhooks`, {
      url: `${receiver.url}/hooks/norte`,
      events: ['contact.created'],
    });
    expect(hook.status).toBe(201);
    const admin = await addMemberFor(app, acc.id, 'admin', 'Diego Admin');

    const bad = new Map<number, string>();
    const lines = ['phone,name,ciudad,segmento'];
    for (let i = 0; i < 10_000; i++) {
      const row = i + 2;
      if (i % 500 === 250) {
        const phone = i % 1000 === 250 ? `11-abc-${i}` : `+54 ${i}`;
        lines.push(`${phone},Cliente ${i},Salta,mayorista`);
        bad.set(row, phone);
      } else lines.push(`${mobile(100_000 + i)},Cliente ${i},${i % 2 ? 'Salta' : 'Jujuy'},minorista`);
    }
    expect(bad.size).toBe(20);
    const csv = `${lines.join('\n')}\n`;

    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, admin);
    await openContacts(page);
    await page.getByRole('button', { name: 'Importar CSV' }).click();
    await page.getByLabel('Archivo CSV').setInputFiles({ name: 'clientes.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    const failures = page.getByRole('table', { name: 'Filas con errores' });
    await failures.waitFor({ timeout: 30_000 });
    await page.getByText('10.000 filas: 9.980 se pueden importar, 20 tienen errores.').waitFor();
    const cells = await failures
      .getByRole('row')
      .evaluateAll((rows) =>
        rows.slice(1).map((r) => [...(r as unknown as { cells: { textContent: string }[] }).cells].map((c) => c.textContent)),
      );
    expect(cells).toHaveLength(20);
    expect(cells.map((c) => Number(c[0]))).toEqual([...bad.keys()]);
    for (const [row, column, value, reason] of cells) {
      expect(column).toBe('phone');
      expect(value).toBe(bad.get(Number(row)));
      expect(reason).toMatch(/número|teléfono|caracteres/);
    }
    expect(await page.getByRole('table', { name: 'Primeras filas' }).getByRole('row').count()).toBe(6);
    await toTop(page.getByRole('heading', { name: 'Importar contactos' }));
    await page.screenshot({ path: `${SHOTS}/contacts-import-1280.png` });
    // Nothing is written before Importar.
    expect((await acc.call('GET', '/me')).body.usage.contacts).toBe(0);

    await page.getByRole('button', { name: 'Importar', exact: true }).click();
    await page
      .getByText(/^Importación terminada: 9\.980 contactos nuevos, 0 actualizados, 20 filas con errores\.$/)
      .waitFor({ timeout: 60_000 });
    expect(await page.getByRole('progressbar', { name: 'Progreso de la importación' }).getAttribute('value')).toBe('10000');
    expect(await failures.getByRole('row').count()).toBe(21);
    await page.screenshot({ path: `${SHOTS}/contacts-import-done-1280.png` });

    // The rest present, through the public API; none announced as contact.created.
    expect((await acc.call('GET', '/me')).body.usage.contacts).toBe(9_980);
    const list = await acc.call('GET', '/contacts?limit=200');
    expect(list.body.data[0]).toMatchObject({
      phone: '5491160100000',
      name: 'Cliente 0',
      attributes: { ciudad: 'Jujuy', segmento: 'minorista' },
    });
    expect((await acc.call('POST', '/contacts', { phone: freshPhone(), name: 'Control' })).status).toBe(201);
    await app.admin('POST', '/jobs/webhooks/run');
    await receiver.waitFor(1);
    await app.admin('POST', '/jobs/webhooks/run');
    const delivered = receiver.received.filter((r) => r.path === '/hooks/norte').map((r) => r.json.data.contact.name);
    expect(delivered).toEqual(['Control']);

    // Exportar CSV downloads every contact with their attributes.
    await page.getByRole('button', { name: 'Cerrar' }).click();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Exportar CSV' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^contactos-\d{4}-\d{2}-\d{2}\.csv$/);
    const exported = parse(readFileSync((await download.path())!), { columns: true }) as Record<string, string>[];
    expect(exported).toHaveLength(9_981);
    expect(exported[0]).toEqual({ phone: '+5491160100000', name: 'Cliente 0', ciudad: 'Jujuy', segmento: 'minorista' });
    expect(errors).toEqual([]);
    await page.context().close();

    // The preview at 360 px (a small file with two bad rows), for the screenshot and the layout.
    const narrow = await openPage(browser, 360);
    await loginAs(narrow.page, app.url, admin);
    await openContacts(narrow.page);
    await narrow.page.getByRole('button', { name: 'Importar CSV' }).click();
    const small = `phone,name,ciudad\n${mobile(1)},Ana,Salta\n+54 11,Beto,Jujuy\n${mobile(2)},Caro,${'x'.repeat(1001)}\n`;
    await narrow.page.getByLabel('Archivo CSV').setInputFiles({ name: 'pocos.csv', mimeType: 'text/csv', buffer: Buffer.from(small) });
    await narrow.page.getByRole('table', { name: 'Filas con errores' }).waitFor();
    expect(await narrow.page.getByRole('table', { name: 'Filas con errores' }).getByRole('row').count()).toBe(3);
    await toTop(narrow.page.getByRole('status').filter({ hasText: 'se pueden importar' }));
    await narrow.page.screenshot({ path: `${SHOTS}/contacts-import-360.png` });
    expect(await noHorizontalScroll(narrow.page)).toBe(true);
    expect(narrow.errors).toEqual([]);
    await narrow.page.context().close();
  }, 180_000);
});
