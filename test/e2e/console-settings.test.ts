// Configuración, the rest (console.md "Configuración"; issue 27 item 7): Miembros (invite with the
// link shown once, role changes, disable, remove; admins cannot touch owners), Números (state,
// default, throughput tier, the agent), Instagram (connected accounts) and Apps de IA (last send;
// disconnect), in Debian's chromium against the real server. Elements are found by role and
// accessible name only; what the page did is read back through the operator and public APIs.
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textFor } from '../../src/http/messages.es-AR.js';
import { haveBrowser, launchBrowser, loginAs, SHOTS } from '../console.js';
import { addMember, freshEmail, signIn } from '../console-session.js';
import { freshPhone, request, startTestApp, type TestApp } from '../harness.js';
import { until } from '../poll.js';

// What the functions given to page.evaluate() use in the browser (this project has no DOM types).
declare const document: { activeElement: unknown; documentElement: { scrollWidth: number; clientWidth: number } };
declare const navigator: { clipboard: { readText(): Promise<string> } };

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

/** A page in its own context (clipboard allowed) that collects script errors. */
async function fresh(width = 1280): Promise<{ page: Page; context: BrowserContext; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width, height: 800 }, permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) errors.push(msg.text());
  });
  return { page, context, errors };
}

async function openConfig(m: { email: string; password: string }, width = 1280) {
  const opened = await fresh(width);
  await loginAs(opened.page, app.url, m);
  await opened.page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Configuración' }).click();
  await opened.page.getByRole('heading', { level: 1, name: 'Configuración' }).waitFor();
  return opened;
}

const noHorizontalScroll = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);

/** A viewport screenshot (not the whole page) with the section's heading at the top. */
async function shot(page: Page, file: string, heading: string) {
  await page
    .getByRole('heading', { level: 2, name: heading, exact: true })
    .evaluate((el) => (el as unknown as { scrollIntoView(): void }).scrollIntoView());
  await page.screenshot({ path: `${SHOTS}/${file}.png` });
}

/** The table shows whole, without scrolling inside its box. */
const fits = (table: Locator) =>
  table.evaluate((el) => {
    const box = (el as unknown as { parentElement: { scrollWidth: number; clientWidth: number } }).parentElement;
    return box.scrollWidth <= box.clientWidth;
  });

const section = (page: Page, name: string): Locator => page.getByRole('region', { name, exact: true });
const rowOf = (table: Locator, text: string): Locator => table.getByRole('row').filter({ hasText: text });

describe.skipIf(!haveBrowser)('Configuración → Miembros, in chromium', () => {
  it('an owner invites a member: the link shown once (Copiar, "No lo vas a poder ver de nuevo.", Listo); in a fresh browser it sets a password and logs in; the owner changes the role; Desactivar ends that session (the next request → login); Eliminar asks first', async () => {
    const acc = await app.createAccount({ name: 'Almacén Don Pepe' });
    const owner = await addMember(app, acc.id, 'owner');
    const { page, context, errors } = await openConfig(owner);
    const members = section(page, 'Miembros');
    const table = members.getByRole('table', { name: 'Miembros' });
    await table.waitFor();
    // Your own row has no controls.
    const mine = rowOf(table, owner.email.toLowerCase());
    await mine.getByText('(vos)').waitFor();
    expect(await mine.getByRole('button').count()).toBe(0);

    await members.getByRole('button', { name: 'Invitar miembro' }).click();
    const email = freshEmail('carla');
    await members.getByRole('textbox', { name: 'Email' }).fill(email);
    await members.getByRole('textbox', { name: 'Nombre' }).fill('Carla Ruiz');
    const roles = members.getByRole('combobox', { name: 'Rol', exact: true });
    expect(await roles.locator('option').allInnerTexts()).toEqual(['Dueño', 'Administrador', 'Agente']);
    await roles.selectOption('agent');
    await members.getByRole('button', { name: 'Invitar', exact: true }).click();
    const shown = members.getByRole('textbox', { name: 'Enlace de invitación' });
    await shown.waitFor();
    const link = await shown.inputValue();
    expect(link).toMatch(new RegExp(`^${app.url}/console/invite/[A-Za-z0-9_-]{40,}$`));
    await members.getByText(/No lo vas a poder ver de nuevo\.$/).waitFor();
    await members.getByRole('button', { name: 'Copiar' }).click();
    await members.getByText('Copiada.').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(link);
    await rowOf(table, 'Carla Ruiz').getByText('Invitado', { exact: true }).waitFor();
    expect(await fits(table)).toBe(true);
    await shot(page, 'console-settings-members-invite-1280', 'Miembros');
    await members.getByRole('button', { name: 'Listo' }).click();
    expect(await shown.count()).toBe(0);
    expect(await page.getByText(link).count()).toBe(0);

    // The invited person, in a browser of their own.
    const carla = await fresh();
    await carla.page.goto(link);
    await carla.page.getByLabel('Contraseña', { exact: true }).fill('la clave de Carla 2026');
    await carla.page.getByLabel('Repetí la contraseña', { exact: true }).fill('la clave de Carla 2026');
    await carla.page.getByRole('button', { name: 'Guardar' }).click();
    await carla.page.waitForURL(/\/console\/login/);
    await loginAs(carla.page, app.url, { email, password: 'la clave de Carla 2026' });
    // An agent: no Configuración.
    expect(await carla.page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Configuración' }).count()).toBe(0);

    // Role change: the select, then Cambiar rol; read back through the operator API.
    await page.reload();
    await table.waitFor();
    const row = rowOf(table, 'Carla Ruiz');
    await row.getByText('Activo', { exact: true }).waitFor();
    await row.getByRole('combobox', { name: 'Rol' }).selectOption('admin');
    await row.getByRole('button', { name: 'Cambiar rol' }).click();
    await members.getByText('Carla Ruiz ahora es Administrador.').waitFor();
    const listed = (await app.admin('GET', `/accounts/${acc.id}/members`)).body.data as {
      id: string;
      email: string;
      role: string;
      status: string;
    }[];
    const carlaRow = listed.find((m) => m.email === email.toLowerCase())!;
    expect(carlaRow).toMatchObject({ role: 'admin', status: 'active' });
    await carla.page.reload();
    await carla.page.getByRole('navigation', { name: 'Secciones' }).getByRole('link', { name: 'Configuración' }).waitFor();

    // Desactivar: her session ends; her next request answers 401 and the console sends her to log in.
    await row.getByRole('button', { name: 'Desactivar' }).click();
    await row.getByText('Desactivado', { exact: true }).waitFor();
    const status = await carla.page.evaluate(
      async (url) => (await fetch(url, { credentials: 'same-origin' })).status,
      `${app.url}/admin/v1/accounts/${acc.id}/members`,
    );
    expect(status).toBe(401);
    await carla.page.goto(`${app.url}/console/configuracion`);
    await carla.page.waitForURL(`${app.url}/console/login`);
    await carla.page.getByRole('button', { name: 'Ingresar' }).waitFor();
    await carla.context.close();

    // Activar, then Eliminar (asked first; Cancelar keeps her).
    await row.getByRole('button', { name: 'Activar', exact: true }).click();
    await row.getByText('Activo', { exact: true }).waitFor();
    await row.getByRole('button', { name: 'Eliminar' }).click();
    await row.getByRole('button', { name: 'Cancelar' }).click();
    await row.getByRole('button', { name: 'Eliminar' }).click();
    await row.getByRole('button', { name: 'Sí, eliminar' }).click();
    await members.getByText('Eliminaste a Carla Ruiz.').waitFor();
    await until(async () => (await rowOf(table, 'Carla Ruiz').count()) === 0, { what: 'her row gone' });
    expect((await app.admin('GET', `/accounts/${acc.id}/members/${carlaRow.id}`)).status).toBe(404);
    expect(errors).toEqual([]);
    await context.close();
  }, 90_000);

  it('an admin manages members but not owners: no controls on an owner\'s row, no "Dueño" to give; the server answers 403 owner_only to the same change; at 360 px the list fits', async () => {
    const acc = await app.createAccount({ name: 'Taller Mecánico Sur' });
    const owner = await addMember(app, acc.id, 'owner');
    const adminM = await addMember(app, acc.id, 'admin');
    const agent = await addMember(app, acc.id, 'agent');
    for (const width of [1280, 360]) {
      const { page, context, errors } = await openConfig(adminM, width);
      const members = section(page, 'Miembros');
      const table = members.getByRole('table', { name: 'Miembros' });
      await table.waitFor();
      expect(await table.getByRole('row').count()).toBe(4);
      const ownerRow = rowOf(table, owner.email.toLowerCase());
      await ownerRow.getByText('Solo un dueño lo cambia').waitFor();
      expect(await ownerRow.getByRole('combobox').count()).toBe(0);
      expect(await ownerRow.getByRole('button').count()).toBe(0);
      const agentRow = rowOf(table, agent.email.toLowerCase());
      expect(await agentRow.getByRole('combobox', { name: 'Rol' }).locator('option').allInnerTexts()).toEqual(['Administrador', 'Agente']);
      await members.getByRole('button', { name: 'Invitar miembro' }).click();
      expect(await members.getByRole('combobox', { name: 'Rol', exact: true }).last().locator('option').allInnerTexts()).toEqual([
        'Administrador',
        'Agente',
      ]);
      if (width === 1280) {
        // The server's refusal, verbatim: an email already in use.
        await members.getByRole('textbox', { name: 'Email' }).fill(agent.email);
        await members.getByRole('button', { name: 'Invitar', exact: true }).click();
        await members
          .getByRole('alert')
          .filter({ hasText: textFor('member_email_taken') })
          .waitFor();
      }
      if (width === 360) {
        expect(await noHorizontalScroll(page)).toBe(true);
        await shot(page, 'console-settings-members-360', 'Miembros');
      }
      expect(errors).toEqual([]);
      await context.close();
    }
    const admin = await signIn(app, adminM);
    const refused = await admin.call('PATCH', `/accounts/${acc.id}/members/${owner.id}`, { status: 'disabled' });
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 403, body: { error: textFor('owner_only'), cause: null } });
    expect((await app.admin('GET', `/accounts/${acc.id}/members/${owner.id}`)).body.status).toBe('active');
    // What the page offers works: the admin disables the agent.
    expect((await admin.call('PATCH', `/accounts/${acc.id}/members/${agent.id}`, { status: 'disabled' })).body.status).toBe('disabled');
  }, 90_000);
});

describe.skipIf(!haveBrowser)('Configuración → Números, Instagram, Apps de IA, in chromium', () => {
  it('Números: state, default, tier and agent per number; the agent chosen from the keyboard; Hacer predeterminado moves the default (read back, and GET /me of the public API names it); Desconectar asks first', async () => {
    const acc = await app.createAccount({ name: 'Farmacia Central' });
    const adminM = await addMember(app, acc.id, 'admin');
    const second = freshPhone({ spelling: 'digits' });
    const pn = await app.admin('POST', `/accounts/${acc.id}/phone-numbers`, { phone: second, name: 'Sucursal', provider: 'sandbox' });
    expect(pn.status).toBe(201);
    const agent = await app.admin('POST', `/accounts/${acc.id}/agents`, { name: 'Vendedora' });
    expect(agent.status).toBe(201);

    const { page, context, errors } = await openConfig(adminM);
    const numbers = section(page, 'Números');
    const table = numbers.getByRole('table', { name: 'Números' });
    await table.waitFor();
    const first = rowOf(table, `+${acc.phone}`);
    const other = rowOf(table, `+${second}`);
    await first.getByText('Predeterminado', { exact: true }).waitFor();
    expect(await first.getByRole('button', { name: 'Hacer predeterminado' }).count()).toBe(0);
    expect(await other.getByRole('rowheader').innerText()).toBe(`+${second}\nSucursal`);
    const cells = await other.getByRole('cell').allInnerTexts();
    expect(cells.slice(0, 2)).toEqual(['Conectado\nHacer predeterminado', '80/s']);
    expect(cells[2]).toContain('Ninguno');
    expect(cells[3]).toBe('Desconectar');
    expect(await fits(table)).toBe(true);

    // The keyboard alone: the select takes the focus, ArrowDown picks the agent, Tab reaches Cambiar agente.
    const select = other.getByRole('combobox', { name: 'Agente' });
    await select.focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Tab');
    expect(await other.getByRole('button', { name: 'Cambiar agente' }).evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.press('Enter');
    await numbers.getByText(`El agente de +${second} ahora es: Vendedora.`).waitFor();

    await other.getByRole('button', { name: 'Hacer predeterminado' }).click();
    await other.getByText('Predeterminado', { exact: true }).waitFor();
    await first.getByRole('button', { name: 'Hacer predeterminado' }).waitFor();
    const read = (await app.admin('GET', `/accounts/${acc.id}/phone-numbers`)).body.data as {
      id: string;
      default: boolean;
      agentId: string | null;
    }[];
    expect(read.find((n) => n.id === pn.body.id)).toMatchObject({ default: true, agentId: agent.body.id });
    expect(read.find((n) => n.id === acc.phoneNumberId)).toMatchObject({ default: false, agentId: null });
    // The default is what the public API uses: GET /me lists it as default.
    const me = (await acc.call('GET', '/me')).body;
    expect(me.phoneNumbers.find((n: { default: boolean }) => n.default).id).toBe(pn.body.id);
    await shot(page, 'console-settings-numbers-1280', 'Números');

    await first.getByRole('button', { name: 'Desconectar' }).click();
    await first.getByText(/^¿Desconectar \+/).waitFor();
    await first.getByRole('button', { name: 'Sí, desconectar' }).click();
    await first.getByText('Desconectado', { exact: true }).waitFor();
    expect(
      (await app.admin('GET', `/accounts/${acc.id}/phone-numbers`)).body.data.find((n: { id: string }) => n.id === acc.phoneNumberId)
        .status,
    ).toBe('disconnected');
    await first.getByRole('button', { name: 'Conectar', exact: true }).click();
    await first.getByText('Conectado', { exact: true }).waitFor();
    expect(errors).toEqual([]);
    await context.close();

    const narrow = await openConfig(adminM, 360);
    await section(narrow.page, 'Números').getByRole('table', { name: 'Números' }).waitFor();
    expect(await noHorizontalScroll(narrow.page)).toBe(true);
    await shot(narrow.page, 'console-settings-numbers-360', 'Números');
    expect(narrow.errors).toEqual([]);
    await narrow.context.close();
  }, 90_000);

  it('Apps de IA: an app that sent a message shows its last send; Desconectar (asked first) → its token answers 401 on /mcp at once; Instagram: a connected account, Desconectar and Eliminar', async () => {
    const acc = await app.createAccount({ name: 'Óptica Mirada' });
    const adminM = await addMember(app, acc.id, 'admin');
    const connected = (await app.admin('POST', `/accounts/${acc.id}/ai-apps`, { name: 'Claude de Ana' })).body;
    const idle = (await app.admin('POST', `/accounts/${acc.id}/ai-apps`, { name: 'Asistente sin uso' })).body;
    const social = await app.admin('POST', `/accounts/${acc.id}/social-accounts`, { name: 'Instagram de la óptica', provider: 'sandbox' });
    expect(social.status).toBe(201);
    const customer = freshPhone();
    expect((await app.inbound({ accountId: acc.id, from: customer, text: 'Hola, ¿tienen anteojos de sol?' })).status).toBe(201);
    const mcp = (token: string, body: unknown) =>
      request(`${app.url}/mcp`, 'POST', body, { accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` });
    const sent = await mcp(connected.token, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'send_message', arguments: { to: customer, text: 'Sí, tenemos. ¿Qué graduación usás?' } },
    });
    expect(sent.status).toBe(200);
    const apps = (await app.admin('GET', `/accounts/${acc.id}/ai-apps`)).body.data as { id: string; lastUsedAt: string | null }[];
    expect(apps.find((a) => a.id === connected.id)?.lastUsedAt).toEqual(expect.any(String));
    expect(apps.find((a) => a.id === idle.id)?.lastUsedAt).toBeNull();

    const { page, context, errors } = await openConfig(adminM);
    const part = section(page, 'Apps de IA');
    const table = part.getByRole('table', { name: 'Apps de IA' });
    await table.waitFor();
    const row = rowOf(table, 'Claude de Ana');
    const cells = await row.getByRole('cell').allInnerTexts();
    expect(cells[0]).toBe(`${connected.prefix}…`);
    expect(cells[2]).toMatch(/\d/);
    await rowOf(table, 'Asistente sin uso').getByText('todavía no la usó').waitFor();
    await shot(page, 'console-settings-apps-1280', 'Instagram');
    const narrow = await openConfig(adminM, 360);
    await section(narrow.page, 'Apps de IA').getByRole('table', { name: 'Apps de IA' }).waitFor();
    expect(await noHorizontalScroll(narrow.page)).toBe(true);
    await shot(narrow.page, 'console-settings-apps-360', 'Apps de IA');
    expect(narrow.errors).toEqual([]);
    await narrow.context.close();

    const tools = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    expect((await mcp(connected.token, tools)).status).toBe(200);
    await row.getByRole('button', { name: 'Desconectar' }).click();
    await row.getByText(/^¿Desconectar «Claude de Ana»\?/).waitFor();
    await row.getByRole('button', { name: 'Sí, desconectar' }).click();
    await part.getByText('Desconectaste «Claude de Ana»: su token ya no funciona.').waitFor();
    await until(async () => (await rowOf(table, 'Claude de Ana').count()) === 0, { what: 'the row gone' });
    expect((await mcp(connected.token, tools)).status).toBe(401);
    expect((await mcp(idle.token, tools)).status).toBe(200);

    const ig = section(page, 'Instagram');
    const igRow = rowOf(ig.getByRole('table', { name: 'Instagram' }), 'Instagram de la óptica');
    await igRow.getByText('Conectada', { exact: true }).waitFor();
    await igRow.getByRole('button', { name: 'Desconectar' }).click();
    await igRow.getByRole('button', { name: 'Sí, desconectar' }).click();
    await igRow.getByText('Desconectada', { exact: true }).waitFor();
    expect((await app.admin('GET', `/accounts/${acc.id}/social-accounts`)).body.data[0].status).toBe('disconnected');
    await igRow.getByRole('button', { name: 'Eliminar' }).click();
    await igRow.getByRole('button', { name: 'Sí, eliminar' }).click();
    await ig.getByText(/^Todavía no hay cuentas de Instagram/).waitFor();
    expect((await app.admin('GET', `/accounts/${acc.id}/social-accounts`)).body.data).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  }, 90_000);
});
