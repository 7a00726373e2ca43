// Campaigns (api.md §2 "Campaign", §3 "Campaign", §4 GET /campaigns, §8 "Campaign sends go in
// batches and do not count against API limits"; decisions.md "Campaigns", "Resources";
// operator.md "Pipelines, cases and campaigns"; the `campaigns` job).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPhone, startTestApp, type TestAccount, type TestApp, testNumber } from '../harness.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

let seq = 0;
/** Canonical digits, as campaign messages store the recipient. */
const phone = () => freshPhone({ spelling: 'digits' });

const events = async (accountId: string, kind: string) => (await app.events(accountId, kind)).map((e) => e.data);

async function template(acc: TestAccount, category = 'UTILITY', status = 'APPROVED') {
  seq += 1;
  const res = await app.admin('POST', `/accounts/${acc.id}/templates`, {
    name: `promo_${seq}`,
    category,
    body: 'Hola {{nombre}}, tenemos {{oferta}} para vos.',
    variables: [
      { name: 'nombre', label: 'Nombre', example: 'cliente' },
      { name: 'oferta', label: 'Oferta', example: 'descuentos' },
    ],
    status,
  });
  expect(res.status).toBe(201);
  return res.body;
}

/** A new contact (201). */
async function contact(acc: TestAccount, p: string, attributes: Record<string, string> = {}, name = 'Cliente') {
  const res = await acc.call('POST', '/contacts', { phone: p, name, attributes });
  expect(res.status).toBe(201);
  return res.body;
}

const createCampaign = (acc: TestAccount, body: Record<string, unknown>) => app.admin('POST', `/accounts/${acc.id}/campaigns`, body);

const runCampaigns = async () => {
  const res = await app.admin('POST', '/jobs/campaigns/run');
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ ran: 'campaigns', changed: expect.any(Number) });
  return res.body.changed as number;
};

const campaignMessages = (campaignId: string) =>
  app.rt.services.db.selectFrom('messages').selectAll().where('campaign_id', '=', campaignId).orderBy('to_phone').execute();

describe('creating and sending a campaign (operator.md; api.md §3 "(sending) → completed, campaign.completed")', () => {
  it('audience = contacts matching all attribute filters; sent by the campaigns job; completed + campaign.completed with the Campaign', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const a = await contact(acc, phone(), { ciudad: 'Rosario', tier: 'gold' }, 'Ana');
    const b = await contact(acc, phone(), { ciudad: 'Rosario', tier: 'gold', nombre: 'Beto' }, 'Beto');
    await contact(acc, phone(), { ciudad: 'Rosario', tier: 'silver' });
    await contact(acc, phone(), { ciudad: 'Córdoba', tier: 'gold' });

    const res = await createCampaign(acc, {
      name: 'Promo Rosario',
      templateId: t.id,
      variables: { oferta: '2x1 en zapatillas' },
      audience: { attributes: { ciudad: 'Rosario', tier: 'gold' } },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      id: expect.any(String),
      name: 'Promo Rosario',
      status: 'sending',
      phoneNumberId: acc.phoneNumberId,
      templateId: t.id,
      recipients: 2,
      sent: 0,
      delivered: 0,
      read: 0,
      failed: 0,
      // A campaign sent at once is scheduled for its creation time (api.md §2: a timestamp).
      scheduledAt: app.clock.now().toISOString(),
      startedAt: app.clock.now().toISOString(),
      completedAt: null,
      createdAt: app.clock.now().toISOString(),
    });

    await runCampaigns();
    const done = await acc.call('GET', `/campaigns/${res.body.id}`);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'completed', recipients: 2, sent: 2, failed: 0, completedAt: expect.any(String) });

    const msgs = await campaignMessages(res.body.id);
    expect(msgs.map((m) => m.contact_id).sort()).toEqual([a.id, b.id].sort());
    for (const m of msgs) {
      expect(m).toMatchObject({ source: 'campaign', type: 'template', template_id: t.id, status: 'sent' });
      // Missing variables take the contact's attribute, then the template example (api.md §4).
      expect(m.template_variables).toEqual({ nombre: m.contact_id === b.id ? 'Beto' : 'cliente', oferta: '2x1 en zapatillas' });
    }
    const viaApi = await acc.call('GET', `/messages/${msgs[0]!.id}`);
    expect(viaApi.body.campaignId).toBe(res.body.id);

    const completed = await events(acc.id, 'campaign.completed');
    expect(completed).toHaveLength(1);
    expect(completed[0]).toEqual(done.body);
  });

  it('"opted-out contacts skipped, and marketingOptOut ones for MARKETING templates"', async () => {
    const acc = await app.createAccount();
    const utility = await template(acc, 'UTILITY');
    const marketing = await template(acc, 'MARKETING');
    await contact(acc, phone(), { grupo: 'x' });
    // Opted out by writing "baja" (api.md §3 "Contact opt-out").
    const out = phone();
    await contact(acc, out, { grupo: 'x' });
    expect((await app.inbound({ accountId: acc.id, from: out, text: 'BAJA' })).status).toBe(201);
    // marketingOptOut through the channel: a MARKETING send to a 0003 test number fails with 131050.
    const blocked = testNumber('0003', { spelling: 'digits' });
    const k = await contact(acc, blocked, { grupo: 'x' });
    expect((await acc.call('POST', '/messages', { to: blocked, template: { id: marketing.id } })).status).toBe(201);
    expect((await acc.call('GET', `/contacts/${k.id}`)).body.marketingOptOut).toBe(true);

    const u = await createCampaign(acc, { name: 'Aviso', templateId: utility.id, audience: { attributes: { grupo: 'x' } } });
    const m = await createCampaign(acc, { name: 'Promo', templateId: marketing.id, audience: { attributes: { grupo: 'x' } } });
    expect(u.body.recipients).toBe(2);
    expect(m.body.recipients).toBe(1);
    await runCampaigns();
    expect((await acc.call('GET', `/campaigns/${u.body.id}`)).body).toMatchObject({ status: 'completed', sent: 2 });
    expect((await acc.call('GET', `/campaigns/${m.body.id}`)).body).toMatchObject({ status: 'completed', sent: 1 });
    expect((await campaignMessages(u.body.id)).map((x) => x.to_phone)).not.toContain(out);
  });

  it('no audience filter → every contact with a phone; an empty audience completes with 0 recipients', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const empty = await createCampaign(acc, { name: 'Nadie', templateId: t.id, audience: { attributes: { nada: 'x' } } });
    expect(empty.body.recipients).toBe(0);
    await contact(acc, phone());
    await contact(acc, phone());
    const all = await createCampaign(acc, { name: 'Todos', templateId: t.id });
    expect(all.body.recipients).toBe(2);
    await runCampaigns();
    expect((await acc.call('GET', `/campaigns/${empty.body.id}`)).body).toMatchObject({ status: 'completed', recipients: 0, sent: 0 });
    expect((await acc.call('GET', `/campaigns/${all.body.id}`)).body).toMatchObject({ status: 'completed', sent: 2 });
  });

  it('"sending starts at scheduledAt": scheduled → sending → completed, the audience fixed when it starts', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    await contact(acc, phone(), { lista: 'vip' });
    const at = new Date(app.clock.now().getTime() + 60 * 60 * 1000).toISOString();
    const res = await createCampaign(acc, {
      name: 'Mañana',
      templateId: t.id,
      audience: { attributes: { lista: 'vip' } },
      scheduledAt: at,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'scheduled', scheduledAt: at, startedAt: null, recipients: 0 });
    await runCampaigns();
    expect((await acc.call('GET', `/campaigns/${res.body.id}`)).body.status).toBe('scheduled');
    // A contact that joins before the start is in the audience.
    await contact(acc, phone(), { lista: 'vip' });
    app.clock.advance(60 * 60 * 1000);
    await runCampaigns();
    const done = (await acc.call('GET', `/campaigns/${res.body.id}`)).body;
    expect(done).toMatchObject({ status: 'completed', recipients: 2, sent: 2, startedAt: at });
  });

  it('counters: delivered/read from status reports, failed for rejected sends (0002) and later failures (0001)', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const ok = phone();
    await contact(acc, ok, { c: '1' });
    await contact(acc, testNumber('0001', { spelling: 'digits' }), { c: '1' });
    await contact(acc, testNumber('0002', { spelling: 'digits' }), { c: '1' });
    const res = await createCampaign(acc, { name: 'Contadores', templateId: t.id, audience: { attributes: { c: '1' } } });
    expect(res.body.recipients).toBe(3);
    await runCampaigns();
    let c = (await acc.call('GET', `/campaigns/${res.body.id}`)).body;
    // 0002: rejected at send (never sent); 0001: accepted, then failed 131026.
    expect(c).toMatchObject({ status: 'completed', recipients: 3, sent: 2, failed: 2, delivered: 0, read: 0 });

    const msg = (await campaignMessages(res.body.id)).find((m) => m.to_phone === ok)!;
    expect((await app.admin('POST', '/sandbox/status', { wamid: msg.wamid, status: 'delivered' })).status).toBe(200);
    expect((await app.admin('POST', '/sandbox/status', { wamid: msg.wamid, status: 'read' })).status).toBe(200);
    c = (await acc.call('GET', `/campaigns/${res.body.id}`)).body;
    expect(c).toMatchObject({ delivered: 1, read: 1, failed: 2 });
    const list = await acc.call('GET', '/campaigns');
    expect(list.body.data[0]).toEqual(c);
  });

  it('"campaign sends never count against API limits": a messagesPerMinute of 1 does not stop a 3-contact campaign', async () => {
    const acc = await app.createAccount({ limits: { messagesPerMinute: 1 } });
    const t = await template(acc);
    for (let i = 0; i < 3; i++) await contact(acc, phone(), { x: 'y' });
    const res = await createCampaign(acc, { name: 'Lote', templateId: t.id, audience: { attributes: { x: 'y' } } });
    await runCampaigns();
    expect((await acc.call('GET', `/campaigns/${res.body.id}`)).body).toMatchObject({ status: 'completed', sent: 3 });
    // The account's own minute cap is untouched: one API send still goes through.
    expect((await acc.call('POST', '/messages', { to: phone(), template: { id: t.id } })).status).toBe(201);
  });

  it('a template that becomes unusable while sending fails the campaign; the rest is not sent', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    await contact(acc, phone(), { z: '1' });
    // Scheduled a minute ahead, so no background run can send before the template goes.
    const scheduledAt = new Date(app.clock.now().getTime() + 60_000).toISOString();
    const res = await createCampaign(acc, { name: 'Rota', templateId: t.id, audience: { attributes: { z: '1' } }, scheduledAt });
    expect((await app.admin('DELETE', `/accounts/${acc.id}/templates/${t.id}`)).status).toBe(204);
    app.clock.advance(61_000);
    await runCampaigns();
    const c = (await acc.call('GET', `/campaigns/${res.body.id}`)).body;
    expect(c).toMatchObject({ status: 'failed', sent: 0 });
    expect(await events(acc.id, 'campaign.completed')).toHaveLength(0);
  });
});

describe('campaign validation (operator.md)', () => {
  it('unknown template → 404; template not approved → 409; unknown phoneNumberId → 409; bad body → 400', async () => {
    const acc = await app.createAccount();
    const pending = await template(acc, 'UTILITY', 'PENDING');
    const t = await template(acc);
    expect((await createCampaign(acc, { name: 'X', templateId: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e' })).status).toBe(404);
    const notApproved = await createCampaign(acc, { name: 'X', templateId: pending.id });
    expect(notApproved.status).toBe(409);
    expect(notApproved.body.cause).toBeNull();
    expect((await createCampaign(acc, { name: 'X', templateId: t.id, phoneNumberId: '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e' })).status).toBe(
      409,
    );
    const bad = await createCampaign(acc, { templateId: t.id, scheduledAt: 'mañana' });
    expect(bad.status).toBe(400);
    expect(
      JSON.parse(bad.body.error.message)
        .map((p: any) => p.path[0])
        .sort(),
    ).toEqual(['name', 'scheduledAt']);
    const other = await app.createAccount();
    expect((await createCampaign(other, { name: 'X', templateId: t.id })).status).toBe(404);
  });
});

describe('GET /campaigns and /campaigns/{id} (api.md §4; decisions.md "Endpoints")', () => {
  it('"the latest 100 campaigns, newest first, with send counters"; another account’s id → 404', async () => {
    const acc = await app.createAccount();
    const t = await template(acc);
    const ids: string[] = [];
    for (let i = 0; i < 102; i++) {
      const at = new Date(app.clock.now().getTime() + 24 * 60 * 60 * 1000).toISOString();
      ids.push((await createCampaign(acc, { name: `C${i}`, templateId: t.id, scheduledAt: at })).body.id);
      app.clock.advance(1);
    }
    const list = await acc.call('GET', '/campaigns');
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(100);
    expect(list.body.data.map((c: any) => c.id)).toEqual(ids.slice(2).reverse());
    expect(Object.keys(list.body.data[0])).toEqual(
      expect.arrayContaining([
        'id',
        'name',
        'status',
        'phoneNumberId',
        'recipients',
        'sent',
        'delivered',
        'read',
        'failed',
        'scheduledAt',
        'startedAt',
        'completedAt',
      ]),
    );
    const one = await acc.call('GET', `/campaigns/${ids[5]}`);
    expect(one.body).toMatchObject({ id: ids[5], name: 'C5', status: 'scheduled' });
    const other = await app.createAccount();
    expect((await other.call('GET', `/campaigns/${ids[5]}`)).status).toBe(404);
    expect((await other.call('GET', '/campaigns')).body.data).toEqual([]);
    expect((await acc.call('GET', '/campaigns/nope')).status).toBe(404);
  });
});

describe('between the start and the send (workers off: only the run endpoint sends)', () => {
  let quiet: TestApp;
  beforeAll(async () => {
    quiet = await startTestApp({ workers: false });
  });
  afterAll(async () => {
    await quiet?.close();
  });

  it('"starts in seconds": the audience is counted at start, not copied; contacts made after the start are not in it, and `recipients` ends exact', async () => {
    const acc = await quiet.createAccount();
    const t = (
      await quiet.admin('POST', `/accounts/${acc.id}/templates`, { name: 'aviso', category: 'UTILITY', body: 'Hola', status: 'APPROVED' })
    ).body;
    const changing = phone();
    for (const p of [phone(), phone(), changing])
      expect((await acc.call('POST', '/contacts', { phone: p, attributes: { lote: 'x' } })).status).toBe(201);
    const c = await quiet.admin('POST', `/accounts/${acc.id}/campaigns`, {
      name: 'X',
      templateId: t.id,
      audience: { attributes: { lote: 'x' } },
    });
    expect(c.body).toMatchObject({ status: 'sending', recipients: 3 });
    const db = quiet.rt.services.db;
    expect(await db.selectFrom('campaign_recipients').select('contact_id').where('campaign_id', '=', c.body.id).execute()).toEqual([]);
    // After the start: a new matching contact is not a recipient; one that stops matching leaves.
    quiet.clock.advance(1);
    const late = phone();
    expect((await acc.call('POST', '/contacts', { phone: late, attributes: { lote: 'x' } })).status).toBe(201);
    expect((await acc.call('POST', '/contacts', { phone: changing, attributes: { lote: 'y' } })).status).toBe(200);
    await quiet.admin('POST', '/jobs/campaigns/run');
    expect((await acc.call('GET', `/campaigns/${c.body.id}`)).body).toMatchObject({
      status: 'completed',
      recipients: 2,
      sent: 2,
      failed: 0,
    });
    const to = (await db.selectFrom('messages').select('to_phone').where('campaign_id', '=', c.body.id).execute()).map((m) => m.to_phone);
    expect(to).toHaveLength(2);
    expect(to).not.toContain(late);
    expect(to).not.toContain(changing);
  });

  it('a contact that opts out after the audience was fixed is skipped and leaves recipients', async () => {
    const acc = await quiet.createAccount();
    const t = (
      await quiet.admin('POST', `/accounts/${acc.id}/templates`, { name: 'aviso', category: 'UTILITY', body: 'Hola', status: 'APPROVED' })
    ).body;
    const leaving = phone();
    for (const p of [phone(), leaving])
      expect((await acc.call('POST', '/contacts', { phone: p, attributes: { g: '1' } })).status).toBe(201);
    const c = await quiet.admin('POST', `/accounts/${acc.id}/campaigns`, {
      name: 'X',
      templateId: t.id,
      audience: { attributes: { g: '1' } },
    });
    expect(c.body).toMatchObject({ status: 'sending', recipients: 2 });
    expect((await quiet.inbound({ accountId: acc.id, from: leaving, text: 'stop' })).status).toBe(201);
    const run = await quiet.admin('POST', '/jobs/campaigns/run');
    expect(run.body.changed).toBeGreaterThanOrEqual(2);
    const done = (await acc.call('GET', `/campaigns/${c.body.id}`)).body;
    expect(done).toMatchObject({ status: 'completed', recipients: 1, sent: 1, failed: 0 });
  });

  it('the operator cancels a sending campaign: nothing more is sent; cancelling again → 409', async () => {
    const acc = await quiet.createAccount();
    const t = (
      await quiet.admin('POST', `/accounts/${acc.id}/templates`, { name: 'aviso', category: 'UTILITY', body: 'Hola', status: 'APPROVED' })
    ).body;
    expect((await acc.call('POST', '/contacts', { phone: phone() })).status).toBe(201);
    const c = await quiet.admin('POST', `/accounts/${acc.id}/campaigns`, { name: 'X', templateId: t.id });
    const cancelled = await quiet.admin('POST', `/accounts/${acc.id}/campaigns/${c.body.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', sent: 0 });
    await quiet.admin('POST', '/jobs/campaigns/run');
    expect((await acc.call('GET', `/campaigns/${c.body.id}`)).body).toMatchObject({ status: 'cancelled', sent: 0 });
    expect((await quiet.admin('POST', `/accounts/${acc.id}/campaigns/${c.body.id}/cancel`)).status).toBe(409);
  });
});
