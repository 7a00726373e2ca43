#!/usr/bin/env node
// `chasqui` — serve (default), migrate, and operator commands that call a running server's
// operator API (operator-api.md, "CLI").
import { Command } from 'commander';
import { loadConfig } from '../config.js';
import { openDatabase } from '../db/index.js';
import { migrate } from '../db/migrate.js';
import { startRuntime } from '../runtime.js';
import { operatorCommands } from './operator.js';

async function serve(): Promise<void> {
  const config = loadConfig();
  const rt = await startRuntime(config);
  const address = await rt.listen();
  const base = address.replace('[::1]', 'localhost');
  const db =
    config.database.kind === 'postgres'
      ? 'PostgreSQL'
      : config.database.kind === 'memory'
        ? 'in-memory PGlite'
        : `PGlite in ${config.database.dataDir}`;
  const lines = [`Chasqui listening on ${base} (${db})`, `Docs: ${base}/docs — OpenAPI: ${base}/api/v1/openapi.json`];
  if (!config.ADMIN_TOKEN) lines.push(`Operator token (kept in ${config.DATA_DIR}/admin-token): ${rt.services.adminToken}`);
  if (rt.demo) {
    lines.push(
      '',
      `Demo account created (plan escala). Its API key, shown only now: ${rt.demo.key}`,
      'Try it:',
      `  curl -s ${base}/api/v1/me -H "Authorization: Bearer ${rt.demo.key}"`,
      `  curl -s ${base}/api/v1/messages -H "Authorization: Bearer ${rt.demo.key}" -H 'Content-Type: application/json' \\`,
      `    -d '{"to": "+54 9 11 5555-0000", "template": {"id": "${rt.demo.templateIds[0]}", "variables": {"nombre": "Ana", "pedido": "1234"}}}'`,
    );
  } else if (config.seedDemo) {
    // Keys are stored only as hashes: the demo key printed at first start cannot be shown again.
    lines.push('', 'Need a key? npx chasqui accounts list, then npx chasqui keys create <accountId> <name>');
  }
  // The key and token go to stdout for the person starting the service, never to the log.
  process.stdout.write(`${lines.join('\n')}\n`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    rt.services.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 20_000);
    force.unref();
    await rt.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

async function runMigrations(): Promise<void> {
  const config = loadConfig();
  const database = await openDatabase(config.database);
  const applied = await migrate(database.db);
  await database.close();
  process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'Database is up to date.\n');
}

const program = new Command('chasqui').description('Chasqui: Messaging, Contacts and Cases API');
program.command('serve', { isDefault: true }).description('serve the API (default)').action(serve);
program.command('migrate').description('apply pending database migrations and exit').action(runMigrations);
operatorCommands(program);

program.parseAsync(process.argv).catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
