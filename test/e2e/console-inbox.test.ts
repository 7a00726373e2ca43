// Conversaciones, the team inbox (console.md "Pages"; docs/console-app.md): a customer writes
// through the sandbox, a member sees it in the list, opens it, replies (the public API shows the
// reply with origin team by that member), saves a note; outside the 24-hour window the reply box
// is disabled with the reason. In chromium, by role and accessible name.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMemberFor, haveBrowser, launchBrowser, loginAs, openPage, SHOTS } from '../console.js';
import { freshPhone, startTestApp, type TestApp } from '../harness.js';
import { until } from '../poll.js';

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

describe('the operator routes of the inbox', () => {
  it('GET /conversations lists newest activity first with contact, last message (trimmed) and handling; notes need text; hand back clears the team', async () => {
    const acc = await app.createAccount({ name: 'Kiosco Rita' });
    const first = freshPhone({ spelling: 'digits' });
    const second = freshPhone({ spelling: 'digits' });
    expect((await app.inbound({ accountId: acc.id, from: first, text: 'Primero' })).status).toBe(201);
    expect((await app.inbound({ accountId: acc.id, from: second, text: 'x'.repeat(500) })).status).toBe(201);
    const list = await app.admin('GET', `/accounts/${acc.id}/conversations`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((c: any) => c.contact.phone)).toEqual([second, first]);
    expect(list.body.data[0].lastMessage.text).toHaveLength(160);
    expect(list.body.data[1]).toMatchObject({ handling: { type: null }, lastMessage: { direction: 'inbound', text: 'Primero' } });
    const cid = list.body.data[1].id;
    // An answer to the older one moves it to the top, handled by the team.
    const sent = await app.admin('POST', `/accounts/${acc.id}/conversations/${cid}/messages`, { text: 'Hola', by: { name: 'Rita' } });
    expect(sent.status).toBe(201);
    const again = await app.admin('GET', `/accounts/${acc.id}/conversations?limit=1`);
    expect(again.body.data).toHaveLength(1);
    expect(again.body.data[0]).toMatchObject({ id: cid, handling: { type: 'team', name: 'Rita' }, lastMessage: { text: 'Hola' } });
    const blank = await app.admin('POST', `/accounts/${acc.id}/conversations/${cid}/notes`, { text: '   ', by: { name: 'Rita' } });
    expect(blank.status).toBe(400);
    const back = await app.admin('POST', `/accounts/${acc.id}/conversations/${cid}/handback`);
    expect(back.status).toBe(200);
    expect(back.body.handling).toEqual({ type: null, id: null, name: null });
    const other = await app.createAccount();
    expect((await app.admin('GET', `/accounts/${other.id}/conversations/${cid}`)).status).toBe(404);
    expect((await app.admin('GET', `/accounts/${other.id}/conversations`)).body.data).toEqual([]);
    expect((await app.admin('GET', '/accounts/00000000-0000-4000-8000-000000000000/conversations')).status).toBe(404);
    expect((await app.admin('GET', `/accounts/${acc.id}/conversations?limit=101`)).status).toBe(400);
  });
});

describe.skipIf(!haveBrowser)('Conversaciones in chromium', () => {
  it('a customer writes; the member sees it in the list (sin asignar), opens it, replies with Enviar (sent with origin team by the member, with its tick) and saves a note', async () => {
    const acc = await app.createAccount({ name: 'Zapatería Ana' });
    const member = await addMemberFor(app, acc.id, 'agent', 'Beto Agente');
    const customer = freshPhone({ spelling: 'digits' });
    expect((await app.inbound({ accountId: acc.id, from: customer, text: '¿Tienen zapatillas 42?' })).status).toBe(201);

    for (const width of [1280, 360]) {
      const { page, errors } = await openPage(browser, width);
      await loginAs(page, app.url, member);
      const list = page.getByRole('list', { name: 'Conversaciones' });
      const item = list.getByRole('listitem').filter({ hasText: customer });
      await item.waitFor();
      const itemText = await item.innerText();
      // The second pass (360 px) sees the first pass's reply as the last message, and the
      // conversation handed back by it: nobody handles it again.
      expect(itemText).toContain(width === 1280 ? '¿Tienen zapatillas 42?' : 'Sí, tenemos (1280)');
      expect(itemText).toContain('sin asignar');
      await page.screenshot({ path: `${SHOTS}/inbox-list-${width}.png`, fullPage: true });
      await item.getByRole('link').click();
      await page.waitForURL(/\/console\/conversaciones\/[0-9a-f-]{36}$/);
      const conversationId = page.url().split('/').pop()!;
      const messages = page.getByRole('list', { name: 'Mensajes' });
      await messages.getByText('¿Tienen zapatillas 42?').waitFor();

      const reply = `Sí, tenemos (${width})`;
      await page.getByRole('textbox', { name: 'Escribí tu respuesta' }).fill(reply);
      await page.getByRole('button', { name: 'Enviar', exact: true }).click();
      const bubble = messages.getByRole('listitem').filter({ hasText: reply });
      await bubble.waitFor();
      // The public API: sent, origin team, by this member.
      const msgs = await acc.call('GET', `/conversations/${conversationId}/messages?limit=200`);
      const mine = msgs.body.data.find((m: any) => m.text === reply);
      expect(mine).toMatchObject({ direction: 'outbound', from: 'team', by: { id: member.id, name: 'Beto Agente' } });
      const sent = await until(async () => {
        const r = await acc.call('GET', `/messages/${mine.id}`);
        return ['sent', 'delivered', 'read'].includes(r.body.status) && r.body;
      });
      expect(sent.id).toBe(mine.id);
      // Its tick, by accessible label, once the page reads the conversation again.
      await page.reload();
      await bubble.getByRole('img', { name: /Enviado|Entregado|Leído/ }).waitFor();
      // The team now handles it, so it can be handed back.
      expect(await page.getByRole('button', { name: 'Devolver al bot' }).isVisible()).toBe(true);

      const note = `Quiere el modelo azul (${width})`;
      await page.getByRole('textbox', { name: 'Nota interna' }).fill(note);
      await page.getByRole('button', { name: 'Guardar nota' }).click();
      await page.getByText(note).waitFor();
      const notes = await app.admin('GET', `/accounts/${acc.id}/conversations/${conversationId}/notes`);
      expect(notes.body.data.at(-1)).toMatchObject({ text: note, by: { type: 'team', id: member.id, name: 'Beto Agente' } });

      expect(await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(true);
      await page.screenshot({ path: `${SHOTS}/inbox-open-${width}.png`, fullPage: true });
      if (width === 360) {
        // One view at a time on a phone: the back link returns to the list.
        await page.getByRole('link', { name: /Volver a conversaciones/ }).click();
        await page.getByRole('list', { name: 'Conversaciones' }).waitFor();
      } else {
        await page.getByRole('button', { name: 'Devolver al bot' }).click();
        await page.getByRole('status').filter({ hasText: 'volvió al bot' }).waitFor();
        await page.getByRole('button', { name: 'Devolver al bot' }).waitFor({ state: 'detached' });
        await page.getByRole('list', { name: 'Conversaciones' }).getByText('sin asignar').first().waitFor();
      }
      expect(errors).toEqual([]);
      await page.close();
    }
  }, 90_000);

  it('"outside the 24-hour window the textbox is disabled with the reason shown and a button Enviar plantilla opens a template picker"', async () => {
    const acc = await app.createAccount({ name: 'Almacén Sur' });
    const member = await addMemberFor(app, acc.id, 'owner', 'Sara Dueña');
    const tpl = await app.admin('POST', `/accounts/${acc.id}/templates`, {
      name: 'seguimiento',
      category: 'UTILITY',
      body: 'Hola {{nombre}}, ¿seguís interesado en {{producto}}?',
      variables: [
        { name: 'nombre', label: 'Nombre del cliente', example: 'Ana' },
        { name: 'producto', label: 'Producto', example: 'zapatillas' },
      ],
      status: 'APPROVED',
    });
    expect(tpl.status).toBe(201);
    const customer = freshPhone({ spelling: 'digits' });
    const past = new Date(app.clock.ms() - 25 * 3600_000).toISOString();
    expect((await app.inbound({ accountId: acc.id, from: customer, text: 'Hola de ayer', timestamp: past })).status).toBe(201);
    const { page, errors } = await openPage(browser, 1280);
    const streams: string[] = [];
    page.on('request', (r) => r.url().endsWith('/console/api/stream') && streams.push(r.url()));
    await loginAs(page, app.url, member);
    await page.getByRole('list', { name: 'Conversaciones' }).getByRole('listitem').filter({ hasText: customer }).getByRole('link').click();
    const box = page.getByRole('textbox', { name: 'Escribí tu respuesta' });
    await box.waitFor();
    expect(await box.isDisabled()).toBe(true);
    expect(await page.getByRole('main').innerText()).toContain('Pasaron más de 24 horas');
    expect(await page.getByRole('button', { name: 'Enviar', exact: true }).isDisabled()).toBe(true);
    await page.screenshot({ path: `${SHOTS}/inbox-closed-1280.png`, fullPage: true });

    await page.getByRole('button', { name: 'Enviar plantilla' }).click();
    const select = page.getByRole('combobox', { name: 'Plantilla' });
    await select.waitFor();
    expect(await select.inputValue()).toBe(tpl.body.id);
    await page.getByRole('textbox', { name: 'Nombre del cliente' }).fill('Ana');
    await page.getByRole('textbox', { name: 'Producto' }).fill('las botas');
    await page.screenshot({ path: `${SHOTS}/inbox-template-1280.png`, fullPage: true });
    await page.getByRole('button', { name: 'Enviar', exact: true }).click();
    await page.getByRole('list', { name: 'Mensajes' }).getByText('Plantilla: seguimiento').waitFor();
    const conversationId = page.url().split('/').pop()!;
    const msgs = await acc.call('GET', `/conversations/${conversationId}/messages`);
    expect(msgs.body.data.at(-1)).toMatchObject({
      from: 'team',
      by: { id: member.id, name: 'Sara Dueña' },
      template: { id: tpl.body.id, variables: { nombre: 'Ana', producto: 'las botas' } },
    });
    // Live updates (api/live.ts) tolerate a server without the stream: one attempt per page load,
    // no retries, no script error. (Where the stream exists, this stays one connection.)
    expect(streams.length).toBe(1);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('the case panel: select Etapa moves the case, select Motivo sets it with reasonSource person, Ganado asks Monto (Moneda ARS) then Confirmar, Cerrar caso closes it — each by the member', async () => {
    const acc = await app.createAccount({ name: 'Bicicletería Rulo' });
    const member = await addMemberFor(app, acc.id, 'agent', 'Caro Ventas');
    const pipeline = await app.admin('POST', `/accounts/${acc.id}/pipelines`, {
      name: 'Ventas',
      stages: [
        { name: 'Nuevo', kind: 'open' },
        { name: 'Interesado', kind: 'open' },
        { name: 'Vendido', kind: 'won' },
      ],
    });
    expect(pipeline.status).toBe(201);
    const reason = await app.admin('POST', `/accounts/${acc.id}/reasons`, {
      name: 'Consulta',
      keywords: ['consulta'],
      subreasons: [{ name: 'Talles', keywords: ['talle'] }],
    });
    expect(reason.status).toBe(201);
    const customer = freshPhone({ spelling: 'digits' });
    expect((await app.inbound({ accountId: acc.id, from: customer, text: 'Busco una bici rodado 29' })).status).toBe(201);

    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, member);
    await page.getByRole('list', { name: 'Conversaciones' }).getByRole('listitem').filter({ hasText: customer }).getByRole('link').click();
    const conversationId = (await until(() => page.url().match(/conversaciones\/([0-9a-f-]{36})$/)?.[1]))!;
    const caseId = (await acc.call('GET', `/conversations/${conversationId}`)).body.openCaseId as string;
    expect(caseId).toBeTruthy();
    const caseNow = async () => (await acc.call('GET', `/cases/${caseId}`)).body;
    const by = { id: member.id, name: 'Caro Ventas' };

    await page.getByRole('combobox', { name: 'Etapa' }).selectOption({ label: 'Interesado' });
    await page.getByRole('status').filter({ hasText: 'cambiaste la etapa' }).waitFor();
    expect((await caseNow()).stage.stage.name).toBe('Interesado');

    await page.getByRole('combobox', { name: 'Motivo' }).selectOption({ label: 'Consulta › Talles' });
    await page.getByRole('status').filter({ hasText: 'guardaste el motivo' }).waitFor();
    expect(await caseNow()).toMatchObject({ reason: 'Consulta', subreason: 'Talles', reasonSource: 'person', reasonSetBy: by });

    await page.getByRole('button', { name: 'Ganado' }).click();
    expect(await page.getByRole('textbox', { name: 'Moneda' }).inputValue()).toBe('ARS');
    await page.getByRole('textbox', { name: 'Monto' }).fill('150000');
    await page.getByRole('button', { name: 'Confirmar' }).click();
    await page.getByRole('status').filter({ hasText: 'venta ganada' }).waitFor();
    expect(await caseNow()).toMatchObject({
      outcome: 'won',
      outcomeAmount: 150000,
      outcomeCurrency: 'ARS',
      outcomeSource: 'person',
      outcomeBy: by,
    });
    await page.screenshot({ path: `${SHOTS}/inbox-case-1280.png`, fullPage: true });

    await page.getByRole('button', { name: 'Cerrar caso' }).click();
    await page.getByRole('status').filter({ hasText: 'Cerraste el caso' }).waitFor();
    expect(await caseNow()).toMatchObject({ status: 'closed', closeReason: 'manual', closedBy: by });
    await page.getByRole('heading', { name: 'Caso cerrado' }).waitFor();
    expect(await page.getByRole('button', { name: 'Cerrar caso' }).count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});

describe.skipIf(!haveBrowser)('Conversaciones live (console.md "updated live without a reload")', () => {
  it('with the inbox open, a new customer appears in the list and a new message in the open conversation, without a reload', async () => {
    const acc = await app.createAccount({ name: 'Almacén Rosa' });
    const member = await addMemberFor(app, acc.id, 'agent', 'Rosa Equipo');
    const first = freshPhone({ spelling: 'digits' });
    expect((await app.inbound({ accountId: acc.id, from: first, text: 'Hola, ¿abren el domingo?' })).status).toBe(201);
    const { page, errors } = await openPage(browser, 1280);
    await loginAs(page, app.url, member);
    const list = page.getByRole('list', { name: 'Conversaciones' });
    await list.getByRole('listitem').filter({ hasText: first }).waitFor();
    let navigations = 0;
    page.on('framenavigated', () => navigations++);

    // A customer nobody has seen writes: the list shows them without a reload.
    const second = freshPhone({ spelling: 'digits' });
    expect((await app.inbound({ accountId: acc.id, from: second, text: 'Quiero yerba de 1 kg' })).status).toBe(201);
    const fresh = list.getByRole('listitem').filter({ hasText: second });
    await fresh.waitFor({ timeout: 10_000 });
    expect(await fresh.innerText()).toContain('Quiero yerba de 1 kg');

    // The open conversation receives the customer's next message live.
    await fresh.getByRole('link').click();
    const messages = page.getByRole('list', { name: 'Mensajes' });
    await messages.getByText('Quiero yerba de 1 kg').waitFor();
    expect((await app.inbound({ accountId: acc.id, from: second, text: '¿Y de 500 g?' })).status).toBe(201);
    await messages.getByText('¿Y de 500 g?').waitFor({ timeout: 10_000 });
    // Client-side route changes only (pushState), never a reload of the page.
    expect(navigations).toBeLessThanOrEqual(1);
    await page.screenshot({ path: `${SHOTS}/inbox-live-1280.png`, fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });
});
