// A contact's data on request in the console (docs/privacy.md "Erasure and export of one person";
// spec privacy-security.md: "owners and admins in the console"): on the contact's page an admin
// downloads everything held about the person (Exportar datos) and erases it (Borrar datos del
// contacto, after a dialog that names what is erased); an agent sees neither. In Debian's chromium
// against the real server, by role and accessible name, at 1280 and 360 px.
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMemberFor, haveBrowser, launchBrowser, loginAs, openPage, SHOTS } from '../console.js';
import { freshPhone, startTestApp, type TestApp } from '../harness.js';

declare const document: { documentElement: { scrollWidth: number; clientWidth: number } };

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

const noHorizontalScroll = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

async function openContact(page: Page, id: string, name: string) {
  await page.goto(`${app.url}/console/contactos/${id}`);
  await page.getByRole('heading', { level: 1, name }).waitFor();
}

describe.skipIf(!haveBrowser)('Exportar datos and Borrar datos del contacto in chromium', () => {
  it('"owners and admins in the console": an admin exports the JSON and erases after confirming what is erased; an agent sees neither button', async () => {
    const acc = await app.createAccount({ name: 'Vivero Norte' });
    const admin = await addMemberFor(app, acc.id, 'admin', 'Inés Admin');
    const agent = await addMemberFor(app, acc.id, 'agent', 'Carla Agente');

    for (const width of [1280, 360]) {
      const name = `Rosaura Benítez ${width}`;
      const phone = freshPhone();
      const contact = await acc.call('POST', '/contacts', { phone, name, attributes: { vivero: 'Helechos' } });
      expect(contact.status).toBe(201);
      const id = contact.body.id as string;
      expect((await app.inbound({ accountId: acc.id, from: phone, text: 'Quiero un helecho serrucho' })).status).toBe(201);

      // An agent: the contact's page without the two buttons, and the routes closed to them.
      {
        const { page, errors } = await openPage(browser, width);
        await loginAs(page, app.url, agent);
        await openContact(page, id, name);
        await page.getByRole('heading', { level: 2, name: 'Conversaciones' }).waitFor();
        expect(await page.getByRole('button', { name: 'Exportar datos' }).count()).toBe(0);
        expect(await page.getByRole('button', { name: 'Borrar datos del contacto' }).count()).toBe(0);
        const r = await page.request.get(`${app.url}/admin/v1/accounts/${acc.id}/contacts/${id}/export`);
        expect(r.status()).toBe(403);
        expect(errors).toEqual([]);
        await page.context().close();
      }

      const { page, errors } = await openPage(browser, width);
      await loginAs(page, app.url, admin);
      await openContact(page, id, name);

      // Exportar datos: one JSON document with everything held about them.
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Exportar datos' }).click()]);
      expect(download.suggestedFilename()).toBe(`contacto-${id}.json`);
      const doc = JSON.parse(readFileSync((await download.path()) as string, 'utf8'));
      expect(doc.contact).toMatchObject({ id, name, attributes: { vivero: 'Helechos' } });
      expect(doc.conversations[0].messages.map((m: { text: string }) => m.text)).toContain('Quiero un helecho serrucho');

      // Borrar datos del contacto: a dialog that names what is erased; Cancelar leaves everything as it was.
      await page.getByRole('button', { name: 'Borrar datos del contacto' }).click();
      const dialog = page.getByRole('dialog', { name: `¿Borrar los datos de ${name}?` });
      await dialog.waitFor();
      const said = await dialog.innerText();
      for (const what of ['el nombre, el teléfono y los atributos', 'el texto de sus mensajes', 'No se puede deshacer.']) {
        expect(said).toContain(what);
      }
      await page.screenshot({ path: `${SHOTS}/contact-erase-dialog-${width}.png` });
      await dialog.getByRole('button', { name: 'Cancelar' }).click();
      await dialog.waitFor({ state: 'hidden' });
      expect((await acc.call('GET', `/contacts/${id}`)).status).toBe(200);

      await page.getByRole('button', { name: 'Borrar datos del contacto' }).click();
      await dialog.getByRole('button', { name: 'Sí, borrar sus datos' }).click();
      await page.getByRole('status').filter({ hasText: 'Borramos los datos del contacto.' }).waitFor();
      await page.screenshot({ path: `${SHOTS}/contact-erased-${width}.png` });
      expect(await noHorizontalScroll(page)).toBe(true);
      expect((await acc.call('GET', `/contacts/${id}`)).status).toBe(404);

      // The audit trail names the member who did each.
      const trail = await app.admin('GET', `/accounts/${acc.id}/audit?limit=100`);
      const lines = (trail.body.data as { action: string; actor: { type: string; name: string }; target: { id: string } | null }[])
        .filter((l) => l.target?.id === id)
        .reverse()
        .map((l) => ({ action: l.action, actor_type: l.actor.type, actor_name: l.actor.name }));
      expect(lines).toEqual([
        { action: 'contact.exported', actor_type: 'member', actor_name: 'Inés Admin' },
        { action: 'contact.erased', actor_type: 'member', actor_name: 'Inés Admin' },
      ]);
      expect(errors).toEqual([]);
      await page.context().close();
    }
  }, 90_000);
});
