// Operator commands: thin calls to the operator API of a running server.
// CHASQUI_URL (default http://127.0.0.1:$PORT) and ADMIN_TOKEN (or DATA_DIR/admin-token).
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';

function target(): { base: string; token: string } {
  const base = process.env.CHASQUI_URL ?? `http://${process.env.HOST ?? '127.0.0.1'}:${process.env.PORT ?? '3000'}`;
  let token = process.env.ADMIN_TOKEN;
  if (!token) {
    try {
      token = readFileSync(`${process.env.DATA_DIR ?? './data'}/admin-token`, 'utf8').trim();
    } catch {
      throw new Error('Set ADMIN_TOKEN (or run from the folder whose DATA_DIR holds admin-token).');
    }
  }
  return { base, token };
}

async function call(method: string, path: string, body?: unknown): Promise<void> {
  const { base, token } = target();
  const res = await fetch(`${base}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  process.stdout.write(`${text || res.status}\n`);
  if (!res.ok) process.exitCode = 1;
}

export function operatorCommands(program: Command): void {
  const accounts = program.command('accounts').description('operator: accounts');
  accounts
    .command('create <name>')
    .option('--plan <plan>', 'free_trial | crecimiento | escala | enterprise', 'escala')
    .action((name: string, o: { plan: string }) => call('POST', '/accounts', { name, plan: o.plan }));
  accounts.command('list').action(() => call('GET', '/accounts'));
  accounts.command('show <accountId>').action((id: string) => call('GET', `/accounts/${id}`));

  const keys = program.command('keys').description('operator: API keys');
  keys.command('create <accountId> <name>').action((id: string, name: string) => call('POST', `/accounts/${id}/keys`, { name }));
  keys.command('list <accountId>').action((id: string) => call('GET', `/accounts/${id}/keys`));
  keys.command('revoke <accountId> <keyId>').action((id: string, k: string) => call('DELETE', `/accounts/${id}/keys/${k}`));

  const numbers = program.command('numbers').description('operator: channel numbers');
  numbers
    .command('add <accountId> <phone>')
    .option('--name <name>')
    .action((id: string, phone: string, o: { name?: string }) => call('POST', `/accounts/${id}/phone-numbers`, { phone, name: o.name }));

  const webhooks = program.command('webhooks').description('operator: webhook URLs');
  webhooks
    .command('add <accountId> <url>')
    .option('--events <kinds>', 'comma-separated event kinds (default: all)')
    .action((id: string, url: string, o: { events?: string }) =>
      call('POST', `/accounts/${id}/webhooks`, { url, ...(o.events ? { events: o.events.split(',') } : {}) }),
    );
  webhooks.command('list <accountId>').action((id: string) => call('GET', `/accounts/${id}/webhooks`));
  webhooks.command('test <accountId> <webhookId>').action((id: string, w: string) => call('POST', `/accounts/${id}/webhooks/${w}/test`));

  const sandbox = program.command('sandbox').description('operator: the sandbox channel');
  sandbox
    .command('inbound <accountId> <from> <text>')
    .description('a customer writes')
    .action((accountId: string, from: string, text: string) => call('POST', '/sandbox/inbound', { accountId, from, text }));
  sandbox
    .command('status <wamid> <status>')
    .option('--code <code>')
    .action((wamid: string, status: string, o: { code?: string }) =>
      call('POST', '/sandbox/status', { wamid, status, ...(o.code ? { code: Number(o.code) } : {}) }),
    );

  program
    .command('jobs-run <name>')
    .description('run a periodic job now (case-timeouts, campaigns, webhooks)')
    .action((name: string) => call('POST', `/jobs/${name}/run`));
}
