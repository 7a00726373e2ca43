// Contact CSV import (issue 27 item 2; docs/operator.md "Contact imports"): 100,000 rows uploaded
// (the preview checks every row), then imported in the background; rows/s of each, and the p99 of
// GET /api/v1/me asked at a steady RATE/s while the import runs, against the same requests on the
// idle server just before (goal: ≤ 2×). In the same ticks, GET /me of a second account without
// contacts (the server's and the machine's load alone), and both again once the import is over
// (the importing account then holds 100,000 contacts, which its GET /me counts whenever its cached
// view is read anew). `BENCH_ONLY=contacts-import`.
import { ADMIN_TOKEN, admin, benchAccount, must, nextPhone, quantile, serverEnv, sleep, startServer, UNLIMITED } from '../lib.js';
import { fmt, record } from '../report.js';

const ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 100_000);
/** GET /me per second while measuring (a team using the app meanwhile, not a load test). */
const RATE = 50;
const IDLE_SECONDS = 8;

/**
 * GET /me every 1/RATE s for each key until stop() (each request on its own, not waiting for the
 * previous); latencies in ms per key, in the order given.
 */
function sampleMe(url: string, keys: string[]) {
  const latencies = keys.map((): number[] => []);
  let failed = 0;
  const inFlight = new Set<Promise<void>>();
  const timer = setInterval(() => {
    keys.forEach((key, i) => {
      const t0 = performance.now();
      const p = fetch(`${url}/api/v1/me`, { headers: { authorization: `Bearer ${key}` } })
        .then(async (r) => {
          await r.arrayBuffer();
          if (r.status === 200) latencies[i]!.push(performance.now() - t0);
          else failed++;
        })
        .catch(() => {
          failed++;
        })
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    });
  }, 1000 / RATE);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(inFlight);
      return { latencies: latencies[0]!, other: latencies[1] ?? [], failed };
    },
  };
}

function csvOf(rows: number): string {
  const lines = ['phone,name,ciudad,segmento,nro_cliente'];
  for (let i = 0; i < rows; i++)
    lines.push(`${nextPhone(7)},Cliente ${i},${i % 2 ? 'Rosario' : 'Córdoba'},${i % 3 ? 'minorista' : 'mayorista'},${i}`);
  return `${lines.join('\n')}\n`;
}

export async function contactImportFigures(): Promise<void> {
  const { env, db } = await serverEnv('benchimport');
  const server = await startServer(env);
  try {
    const acc = await benchAccount(
      server.url,
      { ...UNLIMITED, requestsPerMinute: 1_000_000_000, apiCallsPerMonth: 1_000_000_000_000 },
      'bench-import',
    );
    // A bystander: an account without contacts asked as often, in the same ticks. What it sees
    // during the import is the server's and the machine's load alone; the importing account's
    // GET /me also counts its own contacts whenever its cached view is read anew.
    const other = await benchAccount(server.url, { ...UNLIMITED, requestsPerMinute: 1_000_000_000 }, 'bench-import-other');
    const keys = [acc.key, other.key];
    const csv = csvOf(ROWS);
    // Warm-up of GET /me, not counted.
    const warm = sampleMe(server.url, keys);
    await sleep(2_000);
    await warm.stop();

    const idleSampler = sampleMe(server.url, keys);
    await sleep(IDLE_SECONDS * 1000);
    const idle = await idleSampler.stop();

    const previewSampler = sampleMe(server.url, keys);
    const t0 = performance.now();
    const res = await fetch(`${server.url}/admin/v1/accounts/${acc.id}/contacts/imports`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'text/csv' },
      body: csv,
    });
    const imp = (await res.json()) as { id: string; validRows: number; failed: number };
    const previewMs = performance.now() - t0;
    const preview = await previewSampler.stop();
    if (res.status !== 201 || imp.validRows !== ROWS) throw new Error(`import preview: ${res.status} ${JSON.stringify(imp).slice(0, 300)}`);

    const runSampler = sampleMe(server.url, keys);
    const t1 = performance.now();
    await must(admin(server.url, 'POST', `/accounts/${acc.id}/contacts/imports/${imp.id}/start`), 202, 'start import');
    let state = '';
    let created = 0;
    while (state !== 'done' && state !== 'failed') {
      await sleep(100);
      const r = await must(admin(server.url, 'GET', `/accounts/${acc.id}/contacts/imports/${imp.id}`), 200, 'import progress');
      state = r.state;
      created = r.created;
    }
    const importMs = performance.now() - t1;
    const during = await runSampler.stop();
    if (state !== 'done' || created !== ROWS) throw new Error(`import ended ${state} with ${created} contacts`);
    // The same requests once the import is over: the account now holds ROWS contacts, which GET /me
    // counts whenever its cached view is read anew (every 2 s at most), import or not.
    const afterSampler = sampleMe(server.url, keys);
    await sleep(IDLE_SECONDS * 1000);
    const after = await afterSampler.stop();

    const idleP99 = quantile(idle.latencies, 0.99);
    const previewP99 = quantile(preview.latencies, 0.99);
    const runP99 = quantile(during.latencies, 0.99);
    const afterP99 = quantile(after.latencies, 0.99);
    const otherIdle = quantile(idle.other, 0.99);
    const otherRun = quantile(during.other, 0.99);
    const otherAfter = quantile(after.other, 0.99);
    const failures = idle.failed + preview.failed + during.failed + after.failed;
    const note = `${fmt(ROWS)} rows, ${fmt(csv.length / 1024 / 1024)} MiB; GET /me at ${RATE}/s: idle p50 ${fmt(quantile(idle.latencies, 0.5))} ms${failures ? `; ${failures} GET /me failed` : ''}`;
    record({
      figure: 'Contact CSV preview (upload, every row checked)',
      value: ROWS / (previewMs / 1000),
      unit: 'rows/s',
      floor: '-',
      floorValue: null,
      ratio: null,
      goal: 'report',
      pass: null,
      note: `${fmt(previewMs / 1000)} s for ${note}`,
    });
    record({
      figure: 'Contact CSV import (background, set-wise batches)',
      value: ROWS / (importMs / 1000),
      unit: 'rows/s',
      floor: '-',
      floorValue: null,
      ratio: null,
      goal: 'report',
      pass: null,
      note: `${fmt(importMs / 1000)} s`,
    });
    record({
      figure: 'GET /me p99 during the contact import',
      value: runP99,
      unit: 'ms',
      floor: 'idle p99',
      floorValue: idleP99,
      ratio: runP99 / idleP99,
      goal: '≤ 2×',
      pass: runP99 / idleP99 <= 2,
      note: `${during.latencies.length} requests; during the preview p99 ${fmt(previewP99)} ms (${fmt(previewP99 / idleP99)}×); idle after the import (${fmt(ROWS)} contacts) p99 ${fmt(afterP99)} ms (${fmt(afterP99 / idleP99)}×); an account without contacts, same ticks: p99 idle ${fmt(otherIdle)}, during ${fmt(otherRun)} (${fmt(otherRun / otherIdle)}×), after ${fmt(otherAfter)} ms`,
    });
  } finally {
    await server.stop();
    await db?.drop();
  }
}
