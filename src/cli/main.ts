#!/usr/bin/env node
// `chasqui` — serve (default), migrate, and the operator commands that call a running server's
// operator API (operator.md, "CLI"). The server modules load only for serve and migrate, so
// an operator command starts fast.
import { Command } from 'commander';
import type { Config } from '../config.js';
import type { Runtime } from '../runtime.js';
import type { DemoSeed } from '../seed.js';
import { operatorCommands } from './operator.js';

/** After SIGTERM (and the drain window), in-flight requests and workers get this long before the process exits anyway. */
const FORCE_EXIT_MS = 20_000;

/** Where a person on this machine reaches the server (a wildcard bind address is not one). */
function reachable(address: string): string {
  return address.replace('://0.0.0.0', '://127.0.0.1').replace('://[::]', '://localhost').replace('://[::1]', '://localhost');
}

const sq = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;
/** A shell word: as is when it needs no quoting. */
const word = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : sq(s));

/**
 * `npx chasqui` as it must be typed, in another terminal, to reach this server: the CLI finds it
 * at CHASQUI_URL, else http://127.0.0.1:$PORT (3000), and its token in $DATA_DIR/admin-token
 * (./data) unless ADMIN_TOKEN is set (cli/call.ts). What differs from those defaults is prefixed.
 */
function cliCommand(base: string, config: Config): string {
  const env: string[] = [];
  const url = new URL(base);
  const fromPort = !process.env.CHASQUI_URL && url.hostname === '127.0.0.1' && url.protocol === 'http:' && url.pathname === '/';
  if (!fromPort && process.env.CHASQUI_URL !== base) env.push(`CHASQUI_URL=${word(base)}`);
  else if (fromPort && (url.port || '80') !== '3000') env.push(`PORT=${url.port || '80'}`);
  if (!config.ADMIN_TOKEN && config.DATA_DIR !== './data') env.push(`DATA_DIR=${word(config.DATA_DIR)}`);
  return [...env, 'npx chasqui'].join(' ');
}

/** The start banner: where it listens, the operator token, the demo key with curl lines, or how to get a key. */
function banner(
  base: string,
  config: Config,
  adminToken: string,
  demo: DemoSeed | null,
  existing: { id: string; name: string } | null,
): string {
  const db =
    config.database.kind === 'postgres'
      ? 'PostgreSQL'
      : config.database.kind === 'memory'
        ? 'in-memory PGlite (nothing is kept)'
        : `PGlite in ${config.database.dataDir}`;
  const lines = [`Chasqui listening on ${base} (${db})`, `API reference: ${base}/docs — OpenAPI 3.1: ${base}/api/v1/openapi.json`];
  if (!config.ADMIN_TOKEN) lines.push(`Operator token (kept in ${config.DATA_DIR}/admin-token): ${adminToken}`);
  const auth = (key: string) => `-H "Authorization: Bearer ${key}"`;
  if (demo) {
    const t = demo.templates[0];
    const body = JSON.stringify({ to: demo.recipient, template: { id: t?.id, variables: t?.variables ?? {} } });
    lines.push(
      '',
      `Demo account ${demo.accountId} created (plan escala, a sandbox number, ${demo.templates.length} approved templates, pipeline "Ventas").`,
      `Its API key, shown only now (it is stored as a hash): ${demo.key}`,
      'Try it:',
      `  curl -s ${base}/api/v1/me ${auth(demo.key)}`,
      `  curl -s ${base}/api/v1/messages ${auth(demo.key)} -H 'Content-Type: application/json' -d ${sq(body)}`,
    );
  } else if (existing) {
    // Keys are stored only as hashes: the key printed at the first start cannot be shown again.
    const token = config.ADMIN_TOKEN ? '$ADMIN_TOKEN' : adminToken;
    lines.push(
      '',
      `Need an API key? Keys are shown only when created. Make a new one for "${existing.name}" (${existing.id}):`,
      `  ${cliCommand(base, config)} keys create ${existing.id} mi-integracion`,
      `  curl -s -X POST ${base}/admin/v1/accounts/${existing.id}/keys -H "Authorization: Bearer ${token}" -H 'Content-Type: application/json' -d '{"name": "mi-integracion"}'`,
      `Other accounts: ${cliCommand(base, config)} accounts list`,
    );
  } else {
    lines.push(
      '',
      `No accounts yet. Create one: ${cliCommand(base, config)} accounts create "Mi empresa" --plan escala (then keys create and numbers add).`,
    );
  }
  return `${lines.join('\n')}\n`;
}

async function serve(): Promise<void> {
  const { loadConfig } = await import('../config.js');
  const { startRuntime } = await import('../runtime.js');
  const { firstAccount } = await import('../seed.js');
  const config = loadConfig();
  const rt: Runtime = await startRuntime(config);
  let address: string;
  try {
    address = await rt.listen();
  } catch (err) {
    await rt.close();
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new Error(`${config.HOST}:${config.PORT} is already in use. Stop the other process or pick another port: PORT=3001 npm start`);
    }
    throw err;
  }
  const base = reachable(address);
  const existing = rt.demo ? null : await firstAccount(rt.services.db);
  // The key and token go to stdout for the person starting the service, never to the log.
  process.stdout.write(banner(base, config, rt.services.adminToken, rt.demo, existing));

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      // A second signal: the person does not want to wait.
      rt.services.log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    rt.services.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      rt.services.log.error('shutdown took too long: exiting');
      process.exit(1);
    }, FORCE_EXIT_MS + config.shutdownDrainMs);
    force.unref();
    // Stop accepting, finish in-flight requests, stop workers, flush counters, close the database.
    rt.close().then(
      () => process.exit(0),
      (err: unknown) => {
        rt.services.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function runMigrations(): Promise<void> {
  const { loadConfig } = await import('../config.js');
  const { openDatabase } = await import('../db/index.js');
  const { migrate } = await import('../db/migrate.js');
  const config = loadConfig();
  const database = await openDatabase(config.database);
  try {
    const applied = await migrate(database.db);
    process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'Database is up to date.\n');
  } finally {
    await database.close();
  }
}

const program = new Command('chasqui')
  .description('Chasqui: Messaging, Contacts and Cases API. Without a command it serves the API.')
  .showHelpAfterError();
program
  .command('serve', { isDefault: true })
  .description('serve the API (configuration from the environment: docs/operating.md)')
  .action(serve);
program
  .command('migrate')
  .description('apply pending database migrations (DATABASE_URL, or PGlite in DATA_DIR) and exit')
  .action(runMigrations);
program
  .command('db')
  .description('move the embedded database to PostgreSQL: db move-to <postgres URL>')
  .command('move-to')
  .argument('<url>', 'an empty PostgreSQL database: postgres://user:password@host:5432/db')
  .description(
    'copy the embedded database (DATA_DIR/pglite, or DATABASE_URL=pglite:///path) into an empty PostgreSQL database, ' +
      'all-or-nothing, and compare every table. Stop the server first (PGlite is one process).',
  )
  .option('--batch <rows>', 'rows per round trip', '2000')
  .action(async (url: string, o: { batch: string }) => (await import('../db/move.js')).moveToCommand(url, o));
operatorCommands(program);

program.parseAsync(process.argv).catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
