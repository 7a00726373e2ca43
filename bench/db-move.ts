// `DATABASE_URL=postgres://… npm run bench:move [contacts] [rows per batch]`: the speed of `chasqui db move-to`
// (docs/operating.md "Moving from the embedded database to PostgreSQL"). A temporary PGlite data
// directory is filled set-wise (per contact: a conversation, 5 messages, 3 status events), then
// moved into a new database next to DATABASE_URL; both are removed at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase } from '../src/db/index.js';
import { migrate } from '../src/db/migrate.js';
import { moveToPostgres } from '../src/db/move.js';

/** Runs one statement on the database at `url`. */
async function run(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

const ACCOUNT = '00000000-0000-4000-8000-000000000001';

async function fill(dataDir: string, contacts: number): Promise<void> {
  const d = await openDatabase({ kind: 'pglite', dataDir });
  await migrate(d.db);
  await d.pglite!.exec(`
    INSERT INTO accounts (id, name, plan, limits) VALUES ('${ACCOUNT}', 'Bench', 'escala', '{"contacts": null}');
    INSERT INTO contacts (id, account_id, phone, name, attributes, created_at, updated_at)
      SELECT gen_random_uuid(), '${ACCOUNT}', '+54911' || (10000000 + i), 'Cliente ' || i,
             jsonb_build_object('ciudad', 'Rosario', 'n', i, 'tags', jsonb_build_array('a', i % 7)),
             now() - i * interval '1 s', now() FROM generate_series(1, ${contacts}) i;
    INSERT INTO conversations (id, account_id, contact_id, channel, last_inbound_at, created_at)
      SELECT gen_random_uuid(), account_id, id, 'whatsapp', created_at + interval '1.5 s', created_at FROM contacts;
    INSERT INTO messages (id, account_id, conversation_id, contact_id, direction, type, text, template_variables,
                          to_phone, wamid, status, sent_at, created_at, updated_at)
      SELECT gen_random_uuid(), c.account_id, c.id, c.contact_id, CASE WHEN k % 2 = 0 THEN 'inbound' ELSE 'outbound' END,
             'text', 'Hola, ¿cómo va? línea ' || k, jsonb_build_object('nombre', 'Ana', 'monto', 1234.50 + k),
             '+5491100000000', 'wamid.' || md5(c.id::text || k), 'delivered', c.created_at + k * interval '1 min',
             c.created_at, c.created_at
        FROM conversations c, generate_series(1, 5) k;
    INSERT INTO events (id, account_id, kind, data, created_at)
      SELECT gen_random_uuid(), account_id, 'message.status', jsonb_build_object('messageId', id, 'status', status), created_at
        FROM messages WHERE direction = 'outbound';`);
  await d.close();
}

async function main(): Promise<void> {
  const base = process.env.DATABASE_URL;
  if (!base?.startsWith('postgres')) throw new Error('set DATABASE_URL=postgres://… (the new database is made next to it)');
  const contacts = Number(process.argv[2] ?? 20_000);
  const batchRows = Number(process.argv[3] ?? 2000);
  const dir = mkdtempSync(join(tmpdir(), 'chasqui-bench-move-'));
  const name = `chasqui_bench_move_${process.pid}`;
  await run(base, `CREATE DATABASE ${name}`);
  const u = new URL(base);
  u.pathname = `/${name}`;
  const target = u.toString();
  try {
    const t0 = performance.now();
    await fill(join(dir, 'pglite'), contacts);
    console.log(`Filled in ${((performance.now() - t0) / 1000).toFixed(1)} s.`);
    const t1 = performance.now();
    const result = await moveToPostgres({ dataDir: join(dir, 'pglite'), targetUrl: target, batchRows, out: () => {} });
    const all = (performance.now() - t1) / 1000;
    const perSecond = Math.round(result.rows / result.copySeconds);
    console.log(
      `db move-to (batches of ${batchRows}): ${result.rows.toLocaleString('en-US')} rows copied in ${result.copySeconds.toFixed(1)} s ` +
        `(${perSecond.toLocaleString('en-US')} rows/s); ${all.toFixed(1)} s with migrations and checksums; ${result.ok ? 'every table matches' : 'MISMATCH'}`,
    );
  } finally {
    await run(base, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
