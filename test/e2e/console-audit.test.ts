// Configuración → Actividad (docs/privacy.md "Audit trail": "owners in the console under
// `Configuración` → `Actividad`"), in Debian's chromium against the real server: the account's
// audit lines newest first (when, who, what, on what), the filter by action and `Ver más`; hidden
// for admins and agents. Elements are found by role and accessible name only.
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMemberFor, haveBrowser, launchBrowser, loginAs, openPage, SHOTS } from '../console.js';
import { startTestApp, type TestApp } from '../harness.js';

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

async function openConfig(m: { email: string; password: string }, width = 1280) {
  const opened = await openPage(browser, width);
  await loginAs(opened.page, app.url, m);
  await opened.page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Configuración' }).click();
  await opened.page.getByRole('heading', { level: 1, name: 'Configuración' }).waitFor();
  return opened;
}

const activity = (page: Page): Locator => page.getByRole('region', { name: 'Actividad', exact: true });

describe.skipIf(!haveBrowser)('Configuración → Actividad, in chromium', () => {
  it('"owners in the console": the lines newest first with who and what, the filter by action, Ver más; screenshots at 1280 and 360 px', async () => {
    const acc = await app.createAccount({ name: 'Óptica Mirada', limits: { apiKeys: 40 } });
    const owner = await addMemberFor(app, acc.id, 'owner', 'Olga Dueña');
    // 30 keys made by the operator: more than one page of 25.
    for (let i = 1; i <= 30; i++) expect((await app.admin('POST', `/accounts/${acc.id}/keys`, { name: `Clave ${i}` })).status).toBe(201);
    const hook = await app.admin('POST', `/accounts/${acc.id}/webhooks`, {
      url: 'http://127.0.0.1:9/avisos',
      events: ['message.received'],
    });
    expect(hook.status).toBe(201);

    for (const width of [1280, 360]) {
      const { page, errors } = await openConfig(owner, width);
      const section = activity(page);
      const table = section.getByRole('table', { name: 'Actividad' });
      await table.waitFor();
      // Newest first: this login, then the webhook, then the keys, newest key first.
      const rows = table.getByRole('row');
      await expect.poll(() => rows.nth(1).textContent()).toContain('Ingresó a la consola');
      expect(await rows.nth(1).textContent()).toContain('Olga Dueña');
      const texts = await rows.allTextContents();
      const at = (re: RegExp) => texts.findIndex((x) => re.test(x));
      expect(at(/Quien administra el servidor.*Agregó un webhook.*Webhook «127\.0\.0\.1:9»/)).toBeGreaterThan(0);
      expect(at(/Agregó un webhook/)).toBeLessThan(at(/Creó una clave de API.*Clave de API «Clave 30»/));
      expect(at(/«Clave 30»/)).toBeLessThan(at(/«Clave 29»/));
      expect(await rows.count()).toBe(1 + 25);
      await section.getByRole('button', { name: 'Ver más' }).click();
      await expect.poll(() => rows.count()).toBeGreaterThan(26);
      // The harness's own key and number, and every key: nothing left to load.
      await expect.poll(() => section.getByRole('button', { name: 'Ver más' }).count()).toBe(0);
      await page.screenshot({ path: `${SHOTS}/console-audit-${width}.png` });

      await section.getByLabel('Acción').selectOption({ label: 'Agregó un webhook' });
      await expect.poll(() => rows.count()).toBe(2);
      expect(await rows.nth(1).textContent()).toContain('eventos: message.received · activo: sí');
      await section
        .getByRole('heading', { level: 2, name: 'Actividad' })
        .evaluate((el) => (el as unknown as { scrollIntoView(): void }).scrollIntoView());
      await page.screenshot({ path: `${SHOTS}/console-audit-filter-${width}.png` });
      expect(await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(true);
      expect(errors).toEqual([]);
      await page.close();
    }
  });

  it('admins and agents do not see Actividad', async () => {
    const acc = await app.createAccount();
    const admin = await addMemberFor(app, acc.id, 'admin', 'Ariel Admin');
    const { page, errors } = await openConfig(admin);
    await page.getByRole('region', { name: 'Miembros', exact: true }).waitFor();
    expect(await activity(page).count()).toBe(0);
    await page.close();
    const agent = await addMemberFor(app, acc.id, 'agent', 'Ana Agente');
    const opened = await openPage(browser);
    await loginAs(opened.page, app.url, agent);
    expect(await opened.page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Configuración' }).count()).toBe(0);
    expect(await activity(opened.page).count()).toBe(0);
    expect([...errors, ...opened.errors]).toEqual([]);
    await opened.page.close();
  });
});
