// Campañas in the console (console.md "Pages": "a campaign's counters update live"; issue 27 item
// 3): a campaign created in the page reaches its recipients on the sandbox while its counters move
// without a reload; a server validation error shown next to its field; Cancelar; an agent reads
// without create or cancel. In chromium against the real server, by role and accessible name.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMemberFor, haveBrowser, launchBrowser, loginAs, openPage, SHOTS } from '../console.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';
import { until } from '../poll.js';

declare const document: { documentElement: { scrollWidth: number; clientWidth: number } };
declare const window: { __noReload?: number; scrollTo(x: number, y: number): void };

let app: TestApp;
let browser: Browser;
beforeAll(async () => {
  // The campaigns job is run by the test (POST /jobs/campaigns/run), not by a timer.
  app = await startTestApp({ workers: false });
  if (haveBrowser) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

async function approvedTemplate(acc: TestAccount, name = 'promo_rosario') {
  const res = await app.admin('POST', `/accounts/${acc.id}/templates`, {
    name,
    category: 'UTILITY',
    body: 'Hola {{nombre}}, tenemos {{oferta}} para vos.',
    variables: [
      { name: 'nombre', label: 'Nombre', example: 'cliente' },
      { name: 'oferta', label: 'Oferta', example: 'descuentos' },
    ],
    status: 'APPROVED',
  });
  expect(res.status).toBe(201);
  return res.body as { id: string };
}

async function contact(acc: TestAccount, attributes: Record<string, string>, name: string) {
  const res = await acc.call('POST', '/contacts', { phone: freshPhone({ spelling: 'digits' }), name, attributes });
  expect(res.status).toBe(201);
  return res.body as { id: string; phone: string };
}

/** The page's counters as {Destinatarios: 3, Enviados: 0, …}. */
async function counters(page: Page): Promise<Record<string, number>> {
  const cells = await page.getByRole('region', { name: 'Contadores', exact: true }).locator('div').allInnerTexts();
  return Object.fromEntries(cells.map((c) => c.split('\n')).map(([k, v]) => [k!.trim(), Number(v!.replace(/\D/g, ''))]));
}

const noHorizontalScroll = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

async function openCampaigns(page: Page) {
  await page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Campañas' }).click();
  await page.getByRole('heading', { level: 1, name: 'Campañas' }).waitFor();
}

describe('campaign.updated, the console-only event of the live counters (decisions.md "Campaign counters in the console")', () => {
  it('a campaign of 240 sent at the number’s tier writes about one campaign.updated a second of sending, not one per recipient; the last one carries the final counters', async () => {
    const acc = await app.createAccount({ name: 'Mayorista Norte' });
    await addMemberFor(app, acc.id, 'admin');
    const t = await approvedTemplate(acc, 'mayorista');
    for (let i = 0; i < 240; i++) await contact(acc, { lista: 'mayoristas' }, `Cliente ${i}`);
    const created = await app.admin('POST', `/accounts/${acc.id}/campaigns`, {
      name: 'Lista de precios',
      templateId: t.id,
      audience: { attributes: { lista: 'mayoristas' } },
    });
    expect(created.body).toMatchObject({ status: 'sending', recipients: 240 });
    const started = performance.now();
    expect((await app.admin('POST', '/jobs/campaigns/run')).status).toBe(200);
    const seconds = (performance.now() - started) / 1000;
    const final = await app.admin('GET', `/accounts/${acc.id}/campaigns/${created.body.id}`);
    expect(final.body).toMatchObject({ status: 'completed', sent: 240, failed: 0 });

    const updates = (await app.events(acc.id, 'campaign.updated')).map((e) => e.data as { sent: number; status: string });
    // Creation, then at most one a second of sending (plus the run's last batch).
    expect(updates[0]).toMatchObject({ status: 'sending', sent: 0 });
    expect(updates.length).toBeLessThanOrEqual(Math.ceil(seconds) + 2);
    expect(updates.at(-1)).toMatchObject({ status: 'sending', sent: 240 });
    expect(await app.events(acc.id, 'campaign.completed')).toHaveLength(1);
    // Campaign sends stream no message.sent (their counters are the campaign's).
    expect(await app.events(acc.id, 'message.sent')).toHaveLength(0);
    console.info(`campaign.updated: ${updates.length} rows for 240 recipients sent in ${seconds.toFixed(2)} s`);
  }, 60_000);
});

describe.skipIf(!haveBrowser)('Campañas in chromium', () => {
  it('a campaign created in the page reaches its audience on the sandbox; its counters move live (sent, delivered, read) without a reload', async () => {
    const acc = await app.createAccount({ name: 'Zapatería Rosario' });
    const t = await approvedTemplate(acc);
    const ana = await contact(acc, { ciudad: 'Rosario' }, 'Ana');
    const beto = await contact(acc, { ciudad: 'Rosario', nombre: 'Beto' }, 'Beto');
    const caro = await contact(acc, { ciudad: 'Rosario' }, 'Caro');
    await contact(acc, { ciudad: 'Córdoba' }, 'Dani');
    const admin = await addMemberFor(app, acc.id, 'admin', 'Marta Admin');
    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, admin);
    await openCampaigns(page);
    await page.getByText('Todavía no hay campañas').waitFor();

    await page.getByRole('link', { name: 'Crear campaña' }).click();
    await page.getByRole('heading', { level: 1, name: 'Nueva campaña' }).waitFor();
    await page.getByRole('textbox', { name: 'Nombre' }).fill('Promo Rosario');
    expect(await page.getByRole('combobox', { name: 'Plantilla' }).inputValue()).toBe(t.id);
    // nombre from each contact's attribute (else the example); oferta a fixed value for everyone.
    const oferta = page.getByRole('group', { name: 'Oferta' });
    await oferta.getByRole('radio', { name: 'Valor fijo' }).check();
    await page.getByRole('textbox', { name: 'Valor fijo de Oferta' }).fill('2x1 en zapatillas');
    await page.getByRole('textbox', { name: 'Atributo 1' }).fill('ciudad');
    await page.getByRole('textbox', { name: 'Valor 1' }).fill('Rosario');
    expect(await page.getByRole('radio', { name: 'Ahora' }).isChecked()).toBe(true);
    expect(await page.getByRole('combobox', { name: 'Número' }).inputValue()).toBe(acc.phoneNumberId);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: `${SHOTS}/campaigns-new-1280.png` });
    await page.getByRole('button', { name: 'Crear campaña' }).click();

    await page.getByRole('heading', { level: 1, name: 'Promo Rosario' }).waitFor();
    const id = page.url().split('/').at(-1)!;
    const stored = await app.admin('GET', `/accounts/${acc.id}/campaigns/${id}`);
    expect(stored.body).toMatchObject({
      name: 'Promo Rosario',
      status: 'sending',
      templateId: t.id,
      phoneNumberId: acc.phoneNumberId,
      variables: { oferta: '2x1 en zapatillas' },
      audience: { attributes: { ciudad: 'Rosario' } },
      recipients: 3,
    });
    await page.getByText('Enviando', { exact: true }).waitFor();
    expect(await counters(page)).toEqual({ Destinatarios: 3, Enviados: 0, Entregados: 0, Leídos: 0, Fallidos: 0 });
    // From here on the page must not load again: a reload would drop this mark.
    await page.evaluate(() => {
      window.__noReload = 1;
    });

    // The campaigns job sends it (the sandbox accepts every recipient) and completes it.
    expect((await app.admin('POST', '/jobs/campaigns/run')).status).toBe(200);
    await until(async () => (await counters(page)).Enviados === 3, { what: 'Enviados 3 on the page' });
    await page.getByText('Terminada', { exact: true }).waitFor();

    const msgs = await app.rt.services.db
      .selectFrom('messages')
      .select(['id', 'wamid', 'contact_id', 'template_variables', 'status'])
      .where('campaign_id', '=', id)
      .execute();
    expect(msgs.map((m) => m.contact_id).sort()).toEqual([ana.id, beto.id, caro.id].sort());
    for (const m of msgs) {
      expect(m.status).toBe('sent');
      expect(m.template_variables).toEqual({ nombre: m.contact_id === beto.id ? 'Beto' : 'cliente', oferta: '2x1 en zapatillas' });
      const pub = await acc.call('GET', `/messages/${m.id}`);
      expect(pub.body).toMatchObject({ campaignId: id, status: 'sent' });
    }

    // The sandbox reports statuses: delivered for all three, read for one.
    for (const m of msgs)
      expect((await app.admin('POST', '/sandbox/status', { wamid: m.wamid, status: 'delivered' })).body.applied).toBe(true);
    expect((await app.admin('POST', '/sandbox/status', { wamid: msgs[0]!.wamid, status: 'read' })).body.applied).toBe(true);
    await until(
      async () => {
        const c = await counters(page);
        return c.Entregados === 3 && c.Leídos === 1 && c;
      },
      { what: 'Entregados 3 and Leídos 1 on the page' },
    );
    expect(await counters(page)).toEqual({ Destinatarios: 3, Enviados: 3, Entregados: 3, Leídos: 1, Fallidos: 0 });
    await page.getByText('promo_rosario (es_AR)').waitFor();
    expect(await page.evaluate(() => window.__noReload)).toBe(1);
    await page.screenshot({ path: `${SHOTS}/campaigns-detail-1280.png` });

    // The sends' live cost: a handful of campaign.updated rows for the whole campaign, none per message.
    const updates = await app.events(acc.id, 'campaign.updated');
    expect(updates.length).toBeGreaterThanOrEqual(2);
    expect(updates.length).toBeLessThanOrEqual(4);

    // The list shows it with its state and counters.
    await page.getByRole('link', { name: 'Volver a Campañas' }).click();
    const item = page.getByRole('list', { name: 'Campañas' }).getByRole('listitem').filter({ hasText: 'Promo Rosario' });
    await item.getByText('Terminada').waitFor();
    expect(await item.innerText()).toContain('Leídos\n1');
    await page.screenshot({ path: `${SHOTS}/campaigns-list-1280.png` });
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it('a server validation error is shown next to its field (the same text POST …/campaigns answers); nothing is created', async () => {
    const acc = await app.createAccount({ name: 'Kiosco Validación' });
    const t = await approvedTemplate(acc, 'aviso');
    const admin = await addMemberFor(app, acc.id, 'owner');
    const { page, errors } = await openPage(browser, 360);
    await loginAs(page, app.url, admin);
    await page.goto(`${app.url}/console/campanas/nueva`);
    await page.getByRole('heading', { level: 1, name: 'Nueva campaña' }).waitFor();
    await page.getByRole('textbox', { name: 'Nombre' }).fill('Con filtro inválido');
    await page.getByRole('textbox', { name: 'Atributo 1' }).fill('mi ciudad');
    await page.getByRole('textbox', { name: 'Valor 1' }).fill('Rosario');
    await page.getByRole('button', { name: 'Crear campaña' }).click();

    const field = page.getByRole('textbox', { name: 'Atributo 1' });
    await until(async () => (await field.getAttribute('aria-invalid')) === 'true', { what: 'Atributo 1 invalid' });
    const described = await field.getAttribute('aria-describedby');
    const shown = await page.locator(`#${described}`).innerText();
    const server = await app.admin('POST', `/accounts/${acc.id}/campaigns`, {
      name: 'Con filtro inválido',
      templateId: t.id,
      variables: {},
      audience: { attributes: { 'mi ciudad': 'Rosario' } },
      phoneNumberId: acc.phoneNumberId,
    });
    expect(server.status).toBe(400);
    const problems = JSON.parse(server.body.error.message) as { path: string[]; message: string }[];
    expect(problems).toEqual([{ path: ['audience', 'attributes', 'mi ciudad'], message: shown }]);
    expect(await noHorizontalScroll(page)).toBe(true);
    await page.screenshot({ path: `${SHOTS}/campaigns-error-360.png` });
    expect((await app.admin('GET', `/accounts/${acc.id}/campaigns`)).body.data).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('Cancelar stops a scheduled campaign (the cancel route); an agent reads the list and the campaign without Crear campaña or Cancelar', async () => {
    const acc = await app.createAccount({ name: 'Librería Cancela' });
    const t = await approvedTemplate(acc, 'novedades');
    await contact(acc, { club: 'si' }, 'Eva');
    const later = new Date(app.clock.ms() + 3 * 86_400_000).toISOString();
    const created = await app.admin('POST', `/accounts/${acc.id}/campaigns`, {
      name: 'Novedades de diciembre',
      templateId: t.id,
      audience: { attributes: { club: 'si' } },
      scheduledAt: later,
    });
    expect(created.body.status).toBe('scheduled');
    const id = created.body.id as string;

    const agent = await addMemberFor(app, acc.id, 'agent', 'Pablo Agente');
    const a = await openPage(browser, 360);
    await loginAs(a.page, app.url, agent);
    await openCampaigns(a.page);
    const item = a.page.getByRole('list', { name: 'Campañas' }).getByRole('listitem').filter({ hasText: 'Novedades de diciembre' });
    await item.getByText('Programada').waitFor();
    expect(await a.page.getByRole('link', { name: 'Crear campaña' }).count()).toBe(0);
    expect(await noHorizontalScroll(a.page)).toBe(true);
    await a.page.screenshot({ path: `${SHOTS}/campaigns-list-360.png` });
    await item.getByRole('link', { name: 'Novedades de diciembre' }).click();
    await a.page.getByRole('heading', { level: 1, name: 'Novedades de diciembre' }).waitFor();
    await a.page.getByText('novedades (es_AR)').waitFor();
    expect(await a.page.getByRole('button', { name: 'Cancelar' }).count()).toBe(0);
    expect(await noHorizontalScroll(a.page)).toBe(true);
    await a.page.screenshot({ path: `${SHOTS}/campaigns-detail-360.png` });
    // The form's address shows an agent the list.
    await a.page.goto(`${app.url}/console/campanas/nueva`);
    await a.page.getByRole('list', { name: 'Campañas' }).waitFor();
    expect(await a.page.getByRole('heading', { name: 'Nueva campaña' }).count()).toBe(0);
    expect(a.errors).toEqual([]);
    await a.page.close();

    const admin = await addMemberFor(app, acc.id, 'admin');
    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, admin);
    await page.goto(`${app.url}/console/campanas/${id}`);
    await page.getByRole('heading', { level: 1, name: 'Novedades de diciembre' }).waitFor();
    await page.getByText('Programada', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Cancelar' }).click();
    await page.getByRole('button', { name: 'Sí, cancelar' }).click();
    await page.getByText('Cancelaste la campaña.').waitFor();
    await page.getByText('Cancelada', { exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Cancelar' }).count()).toBe(0);
    const after = await app.admin('GET', `/accounts/${acc.id}/campaigns/${id}`);
    expect(after.body).toMatchObject({ status: 'cancelled', completedAt: expect.any(String) });
    // Sending time comes and goes: nothing is sent.
    app.clock.set(app.clock.ms() + 4 * 86_400_000);
    expect((await app.admin('POST', '/jobs/campaigns/run')).status).toBe(200);
    expect((await app.admin('GET', `/accounts/${acc.id}/campaigns/${id}`)).body).toMatchObject({ status: 'cancelled', sent: 0 });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
