// Casos, the board (console.md "Casos"; docs/console-app.md): one column per stage named after it,
// a case a customer opens appears live in the first stage, a card moved with the keyboard menu
// `Mover a…` (its stage read back through the PUBLIC API), a move to a `won` stage asks Monto
// (Moneda ARS) then Confirmar (an outcome with the amount), a card dragged to another column, and
// the filters narrow the board. In chromium, by role and accessible name.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMemberFor, haveBrowser, launchBrowser, loginAs, openPage, SHOTS } from '../console.js';
import { freshPhone, startTestApp, type TestAccount, type TestApp } from '../harness.js';
import { until } from '../poll.js';

declare const document: {
  documentElement: { scrollWidth: number; clientWidth: number };
  activeElement: { textContent: string | null; getAttribute(n: string): string | null } | null;
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

const STAGES = [
  { name: 'Nuevo', kind: 'open' },
  { name: 'Interesado', kind: 'open' },
  { name: 'Vendido', kind: 'won' },
  { name: 'Perdido', kind: 'lost' },
];

/** A customer writes (the classification job runs); answers the case id of their conversation. */
async function writes(acc: TestAccount, from: string, text: string, name: string): Promise<string> {
  const r = await app.inbound({ accountId: acc.id, from, text, name });
  expect(r.status).toBe(201);
  expect((await app.admin('POST', '/jobs/classification/run')).status).toBe(200);
  const conv = await acc.call('GET', `/conversations/${r.body.conversationId}`);
  return conv.body.openCaseId as string;
}

const column = (page: Page, stage: string) => page.getByRole('list', { name: stage, exact: true });
const card = (page: Page, stage: string, who: string) => column(page, stage).getByRole('listitem').filter({ hasText: who });
const focused = (page: Page) => page.evaluate(() => document.activeElement?.textContent ?? '');

describe.skipIf(!haveBrowser)('Casos in chromium', () => {
  it('columns named after the stages; a new case appears live; the keyboard menu and a drag move cards (read back through the public API); a won move asks Monto; the filters narrow the board', async () => {
    const acc = await app.createAccount({ name: 'Mueblería Tito' });
    const member = await addMemberFor(app, acc.id, 'agent', 'Tito Ventas');
    const pipeline = await app.admin('POST', `/accounts/${acc.id}/pipelines`, { name: 'Ventas', stages: STAGES });
    expect(pipeline.status).toBe(201);
    const reason = await app.admin('POST', `/accounts/${acc.id}/reasons`, {
      name: 'Presupuesto',
      keywords: ['presupuesto'],
      scoring: {
        questions: [
          { question: '¿Tiene fecha?', weight: 70, keywords: ['fecha'] },
          { question: '¿Es empresa?', weight: 30, keywords: ['empresa'] },
        ],
      },
    });
    expect(reason.status).toBe(201);
    const ana = await writes(acc, freshPhone({ spelling: 'digits' }), 'Presupuesto de una mesa para esta fecha', 'Ana Mesa');
    const beto = await writes(acc, freshPhone({ spelling: 'digits' }), 'Presupuesto para mi empresa', 'Beto Sillas');
    const caseNow = async (id: string) => (await acc.call('GET', `/cases/${id}`)).body;

    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, member);
    await page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Casos' }).click();
    await page.getByRole('heading', { name: 'Casos', level: 1 }).waitFor();
    // One list per stage, named after it, in the pipeline's order.
    for (const s of STAGES) await column(page, s.name).waitFor({ state: 'attached' });
    const names = await page.getByRole('list').evaluateAll((ls) => ls.map((l) => l.getAttribute('aria-label')));
    expect(names.filter((n) => STAGES.some((s) => s.name === n))).toEqual(STAGES.map((s) => s.name));
    await card(page, 'Nuevo', 'Ana Mesa').waitFor();
    const anaText = await card(page, 'Nuevo', 'Ana Mesa').innerText();
    expect(anaText).toContain('caliente');
    expect(await card(page, 'Nuevo', 'Beto Sillas').innerText()).toContain('frío');
    // A card opens its conversation.
    const link = card(page, 'Nuevo', 'Ana Mesa').getByRole('link', { name: 'Ana Mesa' });
    expect(await link.getAttribute('href')).toBe(`/console/conversaciones/${(await caseNow(ana)).conversationId}`);

    // Live: a customer nobody has seen writes; their case appears in the first stage, no reload.
    let navigations = 0;
    page.on('framenavigated', () => navigations++);
    const carla = freshPhone({ spelling: 'digits' });
    expect((await app.inbound({ accountId: acc.id, from: carla, text: 'Hola, ¿hacen envíos?', name: 'Carla Envíos' })).status).toBe(201);
    await card(page, 'Nuevo', 'Carla Envíos').waitFor({ timeout: 10_000 });
    expect(navigations).toBe(0);

    // The keyboard: Mover a… opens the menu on its first stage; Escape closes it and the focus
    // returns to the button; arrows wrap, Enter picks.
    const mover = card(page, 'Nuevo', 'Beto Sillas').getByRole('button', { name: 'Mover a…' });
    await mover.focus();
    await page.keyboard.press('Enter');
    const menu = page.getByRole('menu');
    await menu.waitFor();
    expect(await menu.getByRole('menuitem').allInnerTexts()).toEqual(['Interesado', 'Vendido', 'Perdido']);
    expect(await focused(page)).toBe('Interesado');
    await page.keyboard.press('Escape');
    await menu.waitFor({ state: 'detached' });
    expect(await focused(page)).toBe('Mover a…');
    expect(await mover.getAttribute('aria-expanded')).toBe('false');
    await page.keyboard.press('Enter');
    await menu.waitFor();
    await page.keyboard.press('ArrowUp'); // wraps to Perdido
    expect(await focused(page)).toBe('Perdido');
    await page.keyboard.press('ArrowDown'); // wraps to Interesado
    expect(await focused(page)).toBe('Interesado');
    await page.keyboard.press('Enter');
    await card(page, 'Interesado', 'Beto Sillas').waitFor();
    await page.getByRole('status').filter({ hasText: 'Beto Sillas pasó a Interesado' }).waitFor();
    // The public API (an API key) reads the stage the member set.
    expect((await caseNow(beto)).stage).toMatchObject({ stage: { name: 'Interesado', kind: 'open' } });
    // The focus follows the card to its new column.
    expect(await focused(page)).toBe('Mover a…');
    await until(async () => (await card(page, 'Nuevo', 'Beto Sillas').count()) === 0);

    // A won stage asks the sale: Monto, Moneda (ARS), Confirmar → stage and outcome with the amount.
    await card(page, 'Interesado', 'Beto Sillas').getByRole('button', { name: 'Mover a…' }).click();
    await page.getByRole('menuitem', { name: 'Vendido' }).click();
    const dialog = page.getByRole('dialog', { name: /Venta ganada/ });
    await dialog.waitFor();
    expect(await dialog.getByRole('textbox', { name: 'Moneda' }).inputValue()).toBe('ARS');
    await dialog.getByRole('textbox', { name: 'Monto' }).fill('250.000');
    await page.screenshot({ path: `${SHOTS}/cases-won-1280.png` });
    await dialog.getByRole('button', { name: 'Confirmar' }).click();
    await dialog.waitFor({ state: 'detached' });
    await card(page, 'Vendido', 'Beto Sillas').waitFor();
    const by = { id: member.id, name: 'Tito Ventas' };
    expect(await caseNow(beto)).toMatchObject({
      status: 'closed',
      closeReason: 'stage',
      stage: { stage: { name: 'Vendido', kind: 'won' }, amount: 250000 },
      outcome: 'won',
      outcomeAmount: 250000,
      outcomeCurrency: 'ARS',
      outcomeSource: 'person',
      outcomeBy: by,
    });
    await until(async () => (await card(page, 'Vendido', 'Beto Sillas').innerText()).includes('250.000'));
    // A closed case has no Mover a….
    expect(await card(page, 'Vendido', 'Beto Sillas').getByRole('button', { name: 'Mover a…' }).count()).toBe(0);

    // Drag and drop: Carla's card onto the Perdido column (its heading; the column is the drop zone).
    // (The mouse by steps: chromium starts a drag only after the pointer moves a few pixels.)
    const target = page.getByRole('heading', { name: /^Perdido/, level: 2 });
    await target.scrollIntoViewIfNeeded();
    const from = (await card(page, 'Nuevo', 'Carla Envíos').boundingBox())!;
    const to = (await target.boundingBox())!;
    await page.mouse.move(from.x + from.width - 12, from.y + 8);
    await page.mouse.down();
    await page.mouse.move(from.x + from.width + 20, from.y + 30, { steps: 5 });
    await page.mouse.move(to.x + to.width / 2, to.y + to.height / 2, { steps: 10 });
    await page.mouse.up();
    await card(page, 'Perdido', 'Carla Envíos').waitFor();
    const carlaCase = await until(async () => {
      const c = (await acc.call('GET', `/pipelines/${pipeline.body.id}/cases?status=all`)).body.data.find(
        (x: any) => x.contactName === 'Carla Envíos',
      );
      return c?.stage?.stage.name === 'Perdido' && c;
    });
    expect(carlaCase).toMatchObject({ status: 'closed', closeReason: 'stage' });

    await page.screenshot({ path: `${SHOTS}/cases-1280.png` });

    // Filters: Estado Abiertos leaves only Ana (the won and lost cases closed) …
    await page.getByRole('combobox', { name: 'Estado' }).selectOption({ label: 'Abiertos' });
    await until(async () => (await card(page, 'Vendido', 'Beto Sillas').count()) === 0);
    await card(page, 'Nuevo', 'Ana Mesa').waitFor();
    expect(await column(page, 'Perdido').getByRole('listitem').count()).toBe(0);
    // … Todos, Puntaje Frío: only Beto …
    await page.getByRole('combobox', { name: 'Estado' }).selectOption({ label: 'Todos' });
    await page.getByRole('combobox', { name: 'Puntaje' }).selectOption({ label: 'Frío' });
    await until(async () => (await card(page, 'Nuevo', 'Ana Mesa').count()) === 0);
    await card(page, 'Vendido', 'Beto Sillas').waitFor();
    expect(await column(page, 'Perdido').getByRole('listitem').count()).toBe(0);
    // … Puntaje Todos, Motivo Presupuesto: Ana and Beto, not Carla …
    await page.getByRole('combobox', { name: 'Puntaje' }).selectOption({ label: 'Todos' });
    await page.getByRole('combobox', { name: 'Motivo' }).selectOption({ label: 'Presupuesto' });
    await card(page, 'Nuevo', 'Ana Mesa').waitFor();
    await card(page, 'Vendido', 'Beto Sillas').waitFor();
    await until(async () => (await card(page, 'Perdido', 'Carla Envíos').count()) === 0);
    // … Atendido por Equipo: nobody has answered yet.
    await page.getByRole('combobox', { name: 'Motivo' }).selectOption({ label: 'Todos' });
    await page.getByRole('combobox', { name: 'Atendido por' }).selectOption({ label: 'Equipo' });
    await until(
      async () =>
        (await page
          .getByRole('listitem')
          .filter({ has: page.getByRole('button', { name: 'Mover a…' }) })
          .count()) === 0,
    );
    await until(async () => (await card(page, 'Vendido', 'Beto Sillas').count()) === 0);
    expect(errors).toEqual([]);
    await page.close();

    // A phone: the board scrolls inside its own box, never the page.
    const phone = await openPage(browser, 360);
    await loginAs(phone.page, app.url, member);
    await phone.page.goto(`${app.url}/console/casos`);
    await card(phone.page, 'Nuevo', 'Ana Mesa').waitFor();
    expect(await phone.page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(true);
    await card(phone.page, 'Nuevo', 'Ana Mesa').getByRole('button', { name: 'Mover a…' }).click();
    await phone.page.getByRole('menu').waitFor();
    await phone.page.screenshot({ path: `${SHOTS}/cases-360.png` });
    await phone.page.keyboard.press('Escape');
    // With a second pipeline, select Embudo picks the board (the default one first).
    const soporte = await app.admin('POST', `/accounts/${acc.id}/pipelines`, {
      name: 'Soporte',
      stages: [
        { name: 'Abierto', kind: 'open' },
        { name: 'Resuelto', kind: 'won' },
      ],
    });
    expect(soporte.status).toBe(201);
    await phone.page.reload();
    const embudo = phone.page.getByRole('combobox', { name: 'Embudo' });
    await embudo.waitFor();
    expect(await embudo.inputValue()).toBe(pipeline.body.id);
    await embudo.selectOption({ label: 'Soporte' });
    await column(phone.page, 'Resuelto').waitFor({ state: 'attached' });
    expect(await column(phone.page, 'Nuevo').count()).toBe(0);
    expect(phone.errors).toEqual([]);
    await phone.page.close();
  }, 120_000);

  it('a column shows 50 cases and Ver más the next page (cursor pages per column)', async () => {
    const acc = await app.createAccount({ name: 'Vivero Flor' });
    const member = await addMemberFor(app, acc.id, 'admin', 'Flor Admin');
    expect((await app.admin('POST', `/accounts/${acc.id}/pipelines`, { name: 'Ventas', stages: STAGES })).status).toBe(201);
    for (let i = 1; i <= 52; i++) {
      const r = await app.inbound({ accountId: acc.id, from: freshPhone({ spelling: 'digits' }), text: 'Hola', name: `Cliente ${i}` });
      expect(r.status).toBe(201);
    }
    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, member);
    await page.goto(`${app.url}/console/casos`);
    const nuevo = column(page, 'Nuevo');
    await nuevo.getByRole('listitem').first().waitFor();
    expect(await nuevo.getByRole('listitem').count()).toBe(50);
    // Newest first: the last two customers to write are on the first page, the first two are not.
    expect(await card(page, 'Nuevo', 'Cliente 52').count()).toBe(1);
    expect(
      await nuevo
        .getByRole('listitem')
        .filter({ hasText: /^Cliente 1\b/ })
        .count(),
    ).toBe(0);
    await page.getByRole('button', { name: 'Ver más' }).click();
    await until(async () => (await nuevo.getByRole('listitem').count()) === 52);
    await nuevo.getByRole('link', { name: 'Cliente 1', exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Ver más' }).count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);
});
