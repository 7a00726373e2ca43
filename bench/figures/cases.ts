// GET /pipelines/{id}/cases at offset 10,000 with about a million cases (PostgreSQL only).
import { admin, BASE_URL, benchAccount, checkClean, DURATION, load, must, type Server, UNLIMITED } from '../lib.js';
import { record } from '../report.js';

/** GET /pipelines/{id}/cases at offset 10,000 with 1,000,000 cases in 1,000 accounts (PostgreSQL). */
export async function casesFigure(server: Server) {
  if (!BASE_URL) {
    record({
      figure: 'GET /pipelines/{id}/cases offset 10,000, 1 M cases',
      value: Number.NaN,
      unit: 'ms p99',
      floor: '-',
      floorValue: null,
      ratio: null,
      goal: '≤ 20',
      pass: null,
      note: 'PostgreSQL only: set DATABASE_URL',
    });
    return;
  }
  const owner = await benchAccount(server.url, UNLIMITED, 'bench-cases');
  const p = await must(
    admin(server.url, 'POST', `/accounts/${owner.id}/pipelines`, {
      name: 'Ventas',
      stages: [
        { name: 'Consulta', kind: 'open' },
        { name: 'Ganado', kind: 'won' },
        { name: 'Perdido', kind: 'lost' },
      ],
    }),
    201,
    'create pipeline',
  );
  const t0 = Date.now();
  const { default: pgmod } = await import('pg');
  const client = new pgmod.Client({ connectionString: server.env.DATABASE_URL });
  await client.connect();
  // Set-based seed: 999 other accounts with 900 cases each, and the target with 100,900.
  await client.query(`
    INSERT INTO accounts (id, name, plan, limits, created_at, updated_at)
    SELECT gen_random_uuid(), 'seed ' || g, 'escala', '{}'::jsonb, now(), now() FROM generate_series(1, 999) g`);
  await client.query(`
    INSERT INTO pipelines (id, account_id, name, is_default, inactivity_hours, stale_days, created_at)
    SELECT gen_random_uuid(), a.id, 'Ventas', true, 24, 30, now() FROM accounts a
    WHERE NOT EXISTS (SELECT 1 FROM pipelines p WHERE p.account_id = a.id)`);
  await client.query(`
    INSERT INTO stages (id, pipeline_id, name, kind, position)
    SELECT gen_random_uuid(), p.id, 'Consulta', 'open', 0 FROM pipelines p
    WHERE NOT EXISTS (SELECT 1 FROM stages s WHERE s.pipeline_id = p.id)`);
  const seedSql = (accountFilter: string, perAccount: number) => `
    WITH acc AS (
      SELECT a.id AS account_id, p.id AS pipeline_id, s.id AS stage_id FROM accounts a
      JOIN pipelines p ON p.account_id = a.id AND p.is_default
      JOIN LATERAL (SELECT id FROM stages WHERE pipeline_id = p.id ORDER BY position LIMIT 1) s ON true
      WHERE ${accountFilter}),
    ct AS (
      INSERT INTO contacts (id, account_id, phone, name, attributes, opted_out, marketing_opt_out, created_at, updated_at)
      SELECT gen_random_uuid(), acc.account_id, '5491150' || lpad(g::text, 6, '0'), 'Cliente ' || g, '{}'::jsonb, false, false, now(), now()
      FROM acc, generate_series(1, ${perAccount}) g
      RETURNING id, account_id),
    cv AS (
      INSERT INTO conversations (id, account_id, contact_id, channel, phone_number_id, created_at)
      SELECT gen_random_uuid(), ct.account_id, ct.id, 'whatsapp', NULL, now() FROM ct
      RETURNING id, account_id, contact_id)
    INSERT INTO cases (id, account_id, conversation_id, contact_id, pipeline_id, stage_id, stage_entered_at, status, opened_at, last_inbound_at,
                       closed_at, close_reason, handled_by, reason_status, inactivity_hours, created_at, updated_at)
    SELECT gen_random_uuid(), cv.account_id, cv.id, cv.contact_id, acc.pipeline_id, acc.stage_id, now(),
           'closed', now() - (random() * interval '300 days'), now(), now(), 'inactivity', 'none', 'pending', 24, now(), now()
    FROM cv JOIN acc ON acc.account_id = cv.account_id`;
  try {
    await client.query(seedSql(`a.id <> '${owner.id}' AND a.name LIKE 'seed %'`, 900));
    await client.query(seedSql(`a.id = '${owner.id}'`, 100_900));
    // What autovacuum does to a table after a bulk load: statistics and the visibility map
    // (index-only scans of the pipeline index need it).
    await client.query('VACUUM ANALYZE');
  } catch (err) {
    console.log(`  ! cases seed failed (schema changed?): ${(err as Error).message}`);
    await client.end();
    return;
  }
  const count = await client.query('SELECT count(*)::int AS n FROM cases');
  await client.end();
  const seedSeconds = (Date.now() - t0) / 1000;
  const target = `${server.url}/api/v1/pipelines/${p.id}/cases?offset=10000&limit=50&status=all`;
  const headers = { authorization: `Bearer ${owner.key}` };
  // The figure is the latency of one client (the query's own cost); 4 concurrent clients on
  // this 2-CPU machine (server, PostgreSQL and the load generator share it) go in the note.
  const r = await load({ url: target, headers, duration: DURATION, connections: 1 });
  const r4 = await load({ url: target, headers, duration: DURATION, connections: 4 });
  checkClean('GET cases', r);
  checkClean('GET cases (4 clients)', r4);
  record({
    figure: `GET /pipelines/{id}/cases offset 10,000 (${(count.rows[0].n / 1e6).toFixed(2)} M cases)`,
    value: r.p99,
    unit: 'ms p99',
    floor: '-',
    floorValue: null,
    ratio: null,
    goal: '≤ 20',
    pass: r.p99 <= 20,
    note: `p50 ${r.p50} ms; 4 clients: p50 ${r4.p50} ms, p99 ${r4.p99} ms, ${Math.round(r4.rps)} req/s; seeded in ${seedSeconds.toFixed(1)} s`,
  });
}
