// Contact CSV import and export through the operator API (docs/operator.md "Contacts"; issue 27
// item 2): the real app over HTTP, the contact-imports job run through POST /admin/v1/jobs/…/run,
// a local HTTP receiver as the customer's webhook endpoint.
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, signIn } from './console-session.js';
import { type Receiver, startReceiver } from './fakes/receiver.js';
import { ADMIN_TOKEN, freshPhone, request, startTestApp, type TestApp } from './harness.js';
import { until } from './poll.js';

let app: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  app = await startTestApp();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await app?.close();
});

const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
const upload = (accountId: string, csv: string | Buffer, contentType = 'text/csv') =>
  fetch(`${app.url}/admin/v1/accounts/${accountId}/contacts/imports`, {
    method: 'POST',
    headers: { ...auth, 'content-type': contentType },
    body: csv,
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

/** Argentine mobiles, all different: +54 9 11 5<7 digits>; canonical 549115<7 digits>. */
const mobile = (i: number) => `+54 9 11 5${String(10_000_000 + i).slice(1)}`;
const canonical = (i: number) => `549115${String(10_000_000 + i).slice(1)}`;

/** A CSV of `n` rows, the rows in `bad` failing each in its own way; returns the text and the expected failures by row. */
function csvWith(n: number, bad: Set<number>) {
  const lines = ['phone,name,ciudad,pedido'];
  const expected = new Map<number, { column: string; value: string }>();
  for (let i = 0; i < n; i++) {
    const row = i + 2;
    if (!bad.has(i)) {
      lines.push(`${mobile(i)},Cliente ${i},Rosario,${i}`);
      continue;
    }
    switch (i % 4) {
      case 0:
        lines.push(`+54 11 abc${i},Cliente ${i},Rosario,${i}`);
        expected.set(row, { column: 'phone', value: `+54 11 abc${i}` });
        break;
      case 1: {
        const long = 'x'.repeat(1001);
        lines.push(`${mobile(i)},Cliente ${i},${long},${i}`);
        expected.set(row, { column: 'ciudad', value: long });
        break;
      }
      case 2: {
        const name = 'N'.repeat(121);
        lines.push(`${mobile(i)},${name},Rosario,${i}`);
        expected.set(row, { column: 'name', value: name });
        break;
      }
      default:
        lines.push(`${mobile(i)},Cliente ${i},Rosario`);
        expected.set(row, { column: '', value: '' });
    }
  }
  return { csv: `${lines.join('\n')}\n`, expected };
}

async function allFailures(accountId: string, importId: string) {
  const out: { row: number; problems: { column: string; value: string; reason: string }[] }[] = [];
  let after = 0;
  for (;;) {
    const r = await app.admin('GET', `/accounts/${accountId}/contacts/imports/${importId}/failures?limit=500&after=${after}`);
    expect(r.status).toBe(200);
    out.push(...r.body.data);
    if (!r.body.hasMore) return out;
    after = r.body.nextCursor;
  }
}

describe('contact CSV import', () => {
  it('previews every failing row with its number, value and reason; imports 10,000 rows with 20 bad ones; no contact.created is delivered', async () => {
    const acc = await app.createAccount({ name: 'Import grande' });
    const hook = await app.admin('POST', `/accounts/${acc.id}/webhooks`, {
      url: `${receiver.url}/hooks/import`,
      events: ['contact.created'],
    });
    expect(hook.status).toBe(201);
    const bad = new Set(Array.from({ length: 20 }, (_, k) => 37 + k * 491));
    const { csv, expected } = csvWith(10_000, bad);

    const up = await upload(acc.id, csv);
    expect(up.status).toBe(201);
    expect(up.body).toMatchObject({ object: 'contact_import', state: 'previewed', totalRows: 10_000, validRows: 9_980, failed: 20 });
    expect(up.body.columns).toEqual(['phone', 'name', 'ciudad', 'pedido']);
    expect(up.body.preview[0]).toEqual({ row: 2, phone: mobile(0), name: 'Cliente 0', attributes: { ciudad: 'Rosario', pedido: '0' } });
    const failures = await allFailures(acc.id, up.body.id);
    expect(failures.map((f) => f.row)).toEqual([...expected.keys()].sort((a, b) => a - b));
    for (const f of failures) {
      const want = expected.get(f.row)!;
      expect(f.problems[0]).toMatchObject(want);
      expect(f.problems[0]!.reason.length).toBeGreaterThan(10);
    }
    // The reasons say what is wrong, in Spanish.
    const byColumn = (c: string) => failures.find((f) => f.problems[0]!.column === c)!.problems[0]!.reason;
    expect(byColumn('phone')).toMatch(/teléfono|número/i);
    expect(byColumn('')).toMatch(/columnas/);
    // Nothing written by the preview.
    expect((await app.admin('GET', `/accounts/${acc.id}/contacts?limit=1`)).body.data).toEqual([]);

    const start = await app.admin('POST', `/accounts/${acc.id}/contacts/imports/${up.body.id}/start`);
    expect(start.status).toBe(202);
    expect(['queued', 'running', 'done']).toContain(start.body.state);
    expect((await app.admin('POST', `/accounts/${acc.id}/contacts/imports/${up.body.id}/start`)).status).toBe(409);
    await app.admin('POST', '/jobs/contact-imports/run');
    const done = await until(
      async () => {
        const r = await app.admin('GET', `/accounts/${acc.id}/contacts/imports/${up.body.id}`);
        return r.body.state === 'done' && r.body;
      },
      { what: 'import done' },
    );
    expect(done).toMatchObject({ processedRows: 10_000, created: 9_980, updated: 0, failed: 20 });
    expect((await allFailures(acc.id, up.body.id)).map((f) => f.row)).toEqual(failures.map((f) => f.row));

    const me = await acc.call('GET', '/me');
    expect(me.body.usage.contacts).toBe(9_980);
    const one = await app.admin('GET', `/accounts/${acc.id}/contacts?q=${encodeURIComponent('Cliente 9999')}`);
    expect(one.body.data).toEqual([
      expect.objectContaining({ phone: canonical(9999), name: 'Cliente 9999', attributes: { ciudad: 'Rosario', pedido: '9999' } }),
    ]);

    // No contact.created for the imported ones: the webhook only gets the one created through the API.
    expect((await acc.call('POST', '/contacts', { phone: freshPhone(), name: 'Por la API' })).status).toBe(201);
    await app.admin('POST', '/jobs/webhooks/run');
    const got = await receiver.waitFor(1);
    await app.admin('POST', '/jobs/webhooks/run');
    const mine = got.filter((r) => r.path === '/hooks/import');
    expect(mine.map((r) => r.json.data.contact.name)).toEqual(['Por la API']);
    expect((await app.events(acc.id, 'contact.created')).length).toBe(1);
  }, 120_000);

  it('updates known contacts (attributes merged, an empty name cell keeps the name) and marks a phone repeated in the file', async () => {
    const acc = await app.createAccount({ name: 'Import update' });
    expect((await acc.call('POST', '/contacts', { phone: mobile(1), name: 'Ana', attributes: { vip: 'si' } })).status).toBe(201);
    const csv = `phone,name,ciudad\n${mobile(1)},,Salta\n${mobile(2)},Beto,Jujuy\n${mobile(2).replace(/ /g, '')},Beto otra vez,Tucumán\n`;
    const up = await upload(acc.id, csv);
    expect(up.status).toBe(201);
    expect(up.body.failures).toEqual([
      { row: 4, problems: [{ column: 'phone', value: canonical(2), reason: expect.stringMatching(/fila 3/) }] },
    ]);
    await app.admin('POST', `/accounts/${acc.id}/contacts/imports/${up.body.id}/start`);
    await app.admin('POST', '/jobs/contact-imports/run');
    const done = (await app.admin('GET', `/accounts/${acc.id}/contacts/imports/${up.body.id}`)).body;
    expect(done).toMatchObject({ state: 'done', created: 1, updated: 1, failed: 1 });
    const list = (await acc.call('GET', '/contacts')).body.data;
    expect(list).toEqual([
      expect.objectContaining({ name: 'Ana', attributes: { vip: 'si', ciudad: 'Salta' } }),
      expect.objectContaining({ name: 'Beto', attributes: { ciudad: 'Jujuy' } }),
    ]);
  });

  it("the plan's contact limit: the rows past it fail in the preview and in the import, with the limit's text", async () => {
    const acc = await app.createAccount({ name: 'Import límite', limits: { contacts: 3 } });
    expect((await acc.call('POST', '/contacts', { phone: mobile(100) })).status).toBe(201);
    const rows = [100, 101, 102, 103, 104].map((i) => `${mobile(i)},C${i}`);
    const up = await upload(acc.id, `phone,name\n${rows.join('\n')}\n`);
    expect(up.status).toBe(201);
    expect(up.body.validRows).toBe(3);
    expect(up.body.failures.map((f: any) => f.row)).toEqual([5, 6]);
    expect(up.body.failures[0].problems[0].reason).toMatch(/límite de 3 contactos/);
    // Meanwhile one more contact is created through the API: the import finds one row less of room.
    expect((await acc.call('POST', '/contacts', { phone: mobile(200) })).status).toBe(201);
    await app.admin('POST', `/accounts/${acc.id}/contacts/imports/${up.body.id}/start`);
    await app.admin('POST', '/jobs/contact-imports/run');
    const done = (await app.admin('GET', `/accounts/${acc.id}/contacts/imports/${up.body.id}`)).body;
    expect(done).toMatchObject({ state: 'done', created: 1, updated: 1, failed: 3 });
    expect(done.failures.map((f: any) => f.row)).toEqual([4, 5, 6]);
    expect((await acc.call('GET', '/me')).body.usage.contacts).toBe(3);
  });

  it('refuses wrong files with a clear Spanish 4xx: content type, bad UTF-8, NUL bytes, over the size limit, a bad header, an empty file, malformed quotes', async () => {
    const acc = await app.createAccount({ name: 'Import malos' });
    const json = await app.admin('POST', `/accounts/${acc.id}/contacts/imports`, { phone: '1' });
    expect(json.status).toBe(415);
    expect(json.body.error).toMatch(/text\/csv/);
    const latin1 = Buffer.from('phone,name\n+5491155550000,Jos\xe9\n', 'latin1');
    const r1 = await upload(acc.id, latin1);
    expect(r1).toMatchObject({ status: 400, body: { error: expect.stringMatching(/UTF-8/) } });
    const r2 = await upload(acc.id, 'phone,name\n+5491155550000,A\u0000\n');
    expect(r2).toMatchObject({ status: 400, body: { error: expect.stringMatching(/nulo/) } });
    const big = Buffer.alloc(21 * 1024 * 1024, 'a');
    const r3 = await upload(acc.id, big);
    expect(r3).toMatchObject({ status: 413, body: { error: expect.stringMatching(/20 MiB/) } });
    const r4 = await upload(acc.id, 'telefono,nombre\n+5491155550000,A\n');
    expect(r4).toMatchObject({ status: 400, body: { error: expect.stringMatching(/phone,name/) } });
    const r5 = await upload(acc.id, 'phone,name,ciudad natal\n+5491155550000,A,B\n');
    expect(r5).toMatchObject({ status: 400, body: { error: expect.stringMatching(/ciudad natal/) } });
    const r6 = await upload(acc.id, 'phone,name\n');
    expect(r6).toMatchObject({ status: 400, body: { error: expect.stringMatching(/no tiene filas/) } });
    const r7 = await upload(acc.id, 'phone,name\n+5491155550000,"Ana\n');
    expect(r7).toMatchObject({ status: 400, body: { error: expect.stringMatching(/mal formado/) } });
    const r8 = await upload(acc.id, 'phone,name\n+5491155550000,A\n', 'text/csv; charset=iso-8859-1');
    expect(r8.status).toBe(415);
    const missing = await app.admin('GET', `/accounts/${acc.id}/contacts/imports/00000000-0000-7000-8000-000000000000`);
    expect(missing.status).toBe(404);
    // A preview nobody starts is deleted, file and all, after 24 hours.
    const kept = await upload(acc.id, `phone,name\n${mobile(950)},Ana\n`);
    expect(kept.status).toBe(201);
    app.clock.advance(24 * 3_600_000 + 1_000);
    await app.admin('POST', '/jobs/contact-imports/run');
    expect((await app.admin('GET', `/accounts/${acc.id}/contacts/imports/${kept.body.id}`)).status).toBe(404);
  });
});

describe('contacts of the operator API', () => {
  it('searches by name or phone, paged; edits attributes with the API limits; shows the contact with its conversations', async () => {
    const acc = await app.createAccount({ name: 'Búsqueda' });
    for (const [i, name] of ['María López', 'Mario Gómez', 'Lucía'].entries())
      expect((await acc.call('POST', '/contacts', { phone: mobile(300 + i), name })).status).toBe(201);
    const mar = await app.admin('GET', `/accounts/${acc.id}/contacts?q=mar&limit=1`);
    expect(mar.body.data.map((c: any) => c.name)).toEqual(['María López']);
    expect(mar.body.hasMore).toBe(true);
    const next = await app.admin('GET', `/accounts/${acc.id}/contacts?q=mar&limit=1&after=${mar.body.nextCursor}`);
    expect(next.body.data.map((c: any) => c.name)).toEqual(['Mario Gómez']);
    const byPhone = await app.admin('GET', `/accounts/${acc.id}/contacts?q=${encodeURIComponent('0000302')}`);
    expect(byPhone.body.data.map((c: any) => c.name)).toEqual(['Lucía']);
    expect((await app.admin('GET', `/accounts/${acc.id}/contacts?q=100%25`)).body.data).toEqual([]);

    const id = mar.body.data[0].id;
    const ok = await app.admin('PATCH', `/accounts/${acc.id}/contacts/${id}`, { attributes: { ciudad: 'Córdoba' } });
    expect(ok).toMatchObject({ status: 200, body: { attributes: { ciudad: 'Córdoba' } } });
    const tooLong = await app.admin('PATCH', `/accounts/${acc.id}/contacts/${id}`, { attributes: { ciudad: 'x'.repeat(1001) } });
    expect(tooLong.status).toBe(400);
    const badKey = await app.admin('PATCH', `/accounts/${acc.id}/contacts/${id}`, { attributes: { 'mal clave': 'a' } });
    expect(badKey.status).toBe(400);
    const removed = await app.admin('PATCH', `/accounts/${acc.id}/contacts/${id}`, { attributes: { ciudad: null }, name: 'María L.' });
    expect(removed.body).toMatchObject({ name: 'María L.', attributes: {} });

    expect((await app.inbound({ accountId: acc.id, from: mobile(300), text: 'hola' })).status).toBeLessThan(300);
    await app.admin('POST', '/jobs/inbound/run');
    const one = await app.admin('GET', `/accounts/${acc.id}/contacts/${id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id, optedOut: false, conversations: [expect.objectContaining({ channel: 'whatsapp' })] });
    expect((await app.admin('GET', `/accounts/${acc.id}/contacts/00000000-0000-7000-8000-000000000000`)).status).toBe(404);
  });

  it('exports every contact with their attributes as a streamed CSV attachment that imports back unchanged', async () => {
    const acc = await app.createAccount({ name: 'Export' });
    const lines = ['phone,name,ciudad,nota'];
    for (let i = 0; i < 2_500; i++) lines.push(`${mobile(400 + i)},"Cliente, ${i}",${i % 2 ? 'Rosario' : ''},"dice ""hola"""`);
    const up = await upload(acc.id, `${lines.join('\n')}\n`);
    expect(up.body.failed).toBe(0);
    await app.admin('POST', `/accounts/${acc.id}/contacts/imports/${up.body.id}/start`);
    await app.admin('POST', '/jobs/contact-imports/run');

    const res = await fetch(`${app.url}/admin/v1/accounts/${acc.id}/contacts/export`, { headers: auth });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="contactos-\d{4}-\d{2}-\d{2}\.csv"$/);
    const text = await res.text();
    const rows = parse(text, { columns: true }) as Record<string, string>[];
    expect(rows).toHaveLength(2_500);
    expect(rows[1]).toEqual({ phone: `+${canonical(401)}`, name: 'Cliente, 1', ciudad: 'Rosario', nota: 'dice "hola"' });
    expect(rows[0]!.ciudad).toBe('');

    // Round trip: the exported file imports into another account as the same contacts.
    const other = await app.createAccount({ name: 'Export destino' });
    const again = await upload(other.id, text);
    expect(again.body).toMatchObject({ totalRows: 2_500, validRows: 2_500, failed: 0 });
    await app.admin('POST', `/accounts/${other.id}/contacts/imports/${again.body.id}/start`);
    await app.admin('POST', '/jobs/contact-imports/run');
    const back = await request(`${app.url}/admin/v1/accounts/${other.id}/contacts/export`, 'GET', undefined, auth);
    expect(back.body).toBe(text);
  }, 60_000);

  it('through a session: agents search and edit contacts; import and export answer 403 to them and work for admins (the role table)', async () => {
    const acc = await app.createAccount({ name: 'Roles contactos' });
    const made = await acc.call('POST', '/contacts', { phone: mobile(900), name: 'Rita' });
    const agent = await signIn(app, await addMember(app, acc.id, 'agent'));
    const admin = await signIn(app, await addMember(app, acc.id, 'admin'));
    const csv = { headers: { 'content-type': 'text/csv' } };
    expect((await agent.call('GET', `/accounts/${acc.id}/contacts?q=rita`)).body.data).toHaveLength(1);
    expect((await agent.call('PATCH', `/accounts/${acc.id}/contacts/${made.body.id}`, { attributes: { zona: 'sur' } })).status).toBe(200);
    expect((await agent.call('POST', `/accounts/${acc.id}/contacts/imports`, `phone,name\n${mobile(901)},Ana\n`, csv)).status).toBe(403);
    expect((await agent.call('GET', `/accounts/${acc.id}/contacts/export`)).status).toBe(403);
    const up = await admin.call('POST', `/accounts/${acc.id}/contacts/imports`, `phone,name\n${mobile(901)},Ana\n`, csv);
    expect(up.status).toBe(201);
    expect((await agent.call('GET', `/accounts/${acc.id}/contacts/imports/${up.body.id}`)).status).toBe(403);
    expect((await admin.call('POST', `/accounts/${acc.id}/contacts/imports/${up.body.id}/start`)).status).toBe(202);
    const exported = await admin.call('GET', `/accounts/${acc.id}/contacts/export`);
    expect(exported.status).toBe(200);
    expect(exported.body).toContain('Rita');
  });
});
