// Operator commands: accounts, their API keys, channel numbers, social accounts and AI apps.
import type { Command } from 'commander';
import { body, call, DATA, jsonObject } from '../call.js';

export function accountsCommands(program: Command): void {
  const accounts = program.command('accounts').description('operator: accounts');
  accounts
    .command('create <name>')
    .description('create an account')
    .option('--plan <plan>', 'free_trial | crecimiento | escala | enterprise', 'escala')
    .option('--limits <json>', 'limit overrides, e.g. \'{"contacts": 500, "apiKeys": null}\'', jsonObject)
    .option(...DATA, jsonObject)
    .action(function (this: Command, name: string, o) {
      return call(this, 'POST', '/accounts', body(o.data, { name, plan: o.plan, limits: o.limits }));
    });
  accounts
    .command('list')
    .description('list the accounts')
    .action(function (this: Command) {
      return call(this, 'GET', '/accounts');
    });
  accounts
    .command('get <accountId>')
    .alias('show')
    .description('an account with limits, usage and numbers (as GET /me)')
    .action(function (this: Command, id: string) {
      return call(this, 'GET', `/accounts/${id}`);
    });
  accounts
    .command('update <accountId>')
    .description('change name, plan or limit overrides')
    .option('--name <name>')
    .option('--plan <plan>', 'free_trial | crecimiento | escala | enterprise')
    .option('--limits <json>', 'limit overrides (null: unlimited)', jsonObject)
    .option(...DATA, jsonObject)
    .action(function (this: Command, id: string, o) {
      return call(this, 'PATCH', `/accounts/${id}`, body(o.data, { name: o.name, plan: o.plan, limits: o.limits }));
    });
}

export function keysCommands(program: Command): void {
  const keys = program.command('keys').description('operator: API keys (etk_live_…)');
  keys
    .command('create <accountId> <name>')
    .description('create a key; the key is printed only now')
    .action(function (this: Command, id: string, name: string) {
      return call(this, 'POST', `/accounts/${id}/keys`, { name });
    });
  keys
    .command('list <accountId>')
    .description('list the keys (no secrets)')
    .action(function (this: Command, id: string) {
      return call(this, 'GET', `/accounts/${id}/keys`);
    });
  keys
    .command('revoke <accountId> <keyId>')
    .description('revoke a key (it answers 401 from then on)')
    .action(function (this: Command, id: string, keyId: string) {
      return call(this, 'DELETE', `/accounts/${id}/keys/${keyId}`);
    });
}

export function numbersCommands(program: Command): void {
  const numbers = program.command('numbers').description('operator: channel numbers');
  numbers
    .command('add <accountId> <phone>')
    .description('connect a number (the first one is the default)')
    .option('--name <name>')
    .option('--provider <provider>', 'sandbox | cloud (default: the server CHANNEL_PROVIDER)')
    .option('--cloud <json>', 'cloud ids and secrets: {"phoneNumberId","wabaId","accessToken","appSecret","verifyToken"}', jsonObject)
    .option(...DATA, jsonObject)
    .action(function (this: Command, id: string, phone: string, o) {
      return call(
        this,
        'POST',
        `/accounts/${id}/phone-numbers`,
        body(o.data, { phone, name: o.name, provider: o.provider, cloud: o.cloud }),
      );
    });
  numbers
    .command('list <accountId>')
    .description("the account's numbers")
    .action(function (this: Command, id: string) {
      return call(this, 'GET', `/accounts/${id}/phone-numbers`);
    });
  numbers
    .command('update <accountId> <phoneNumberId>')
    .description('connect/disconnect a number, make it the default, or assign its AI agent')
    .option('--status <status>', 'connected | disconnected')
    .option('--default', 'make it the default number')
    .option('--agent <agentId>', 'the AI agent that answers its conversations ("none" unassigns)')
    .option(...DATA, jsonObject)
    .action(function (this: Command, id: string, pnId: string, o) {
      const agentId = o.agent === undefined ? undefined : o.agent === 'none' ? null : o.agent;
      return call(this, 'PATCH', `/accounts/${id}/phone-numbers/${pnId}`, body(o.data, { status: o.status, default: o.default, agentId }));
    });
}

export function socialCommands(program: Command): void {
  const social = program.command('social').description('operator: social accounts (Instagram Direct)');
  social
    .command('add <accountId> <name>')
    .description('connect a social account')
    .option('--provider <provider>', 'sandbox (default) | instagram', 'sandbox')
    .option('--instagram <json>', 'instagram ids and secrets: {"igUserId","accessToken","appSecret","verifyToken"}', jsonObject)
    .option(...DATA, jsonObject)
    .action(function (this: Command, id: string, name: string, o) {
      return call(this, 'POST', `/accounts/${id}/social-accounts`, body(o.data, { name, provider: o.provider, instagram: o.instagram }));
    });
  social
    .command('list <accountId>')
    .description("the account's social accounts")
    .action(function (this: Command, id: string) {
      return call(this, 'GET', `/accounts/${id}/social-accounts`);
    });
  social
    .command('update <accountId> <socialAccountId>')
    .description('rename a social account, connect/disconnect it, or assign its AI agent')
    .option('--name <name>')
    .option('--status <status>', 'connected | disconnected')
    .option('--agent <agentId>', 'the AI agent that answers its conversations ("none" unassigns)')
    .option(...DATA, jsonObject)
    .action(function (this: Command, id: string, socialId: string, o) {
      const agentId = o.agent === undefined ? undefined : o.agent === 'none' ? null : o.agent;
      return call(this, 'PATCH', `/accounts/${id}/social-accounts/${socialId}`, body(o.data, { name: o.name, status: o.status, agentId }));
    });
  social.command('delete <accountId> <socialAccountId>').action(function (this: Command, id: string, socialId: string) {
    return call(this, 'DELETE', `/accounts/${id}/social-accounts/${socialId}`);
  });
}

export function appsCommands(program: Command): void {
  const apps = program.command('apps').description('operator: AI apps connected through MCP (docs/mcp.md)');
  apps
    .command('connect <accountId> <name>')
    .description('connect an AI app; its etk_app_ token is printed only now')
    .action(function (this: Command, id: string, name: string) {
      return call(this, 'POST', `/accounts/${id}/ai-apps`, { name });
    });
  apps.command('list <accountId>').action(function (this: Command, id: string) {
    return call(this, 'GET', `/accounts/${id}/ai-apps`);
  });
  apps
    .command('disconnect <accountId> <appId>')
    .description('disconnect an AI app (its token answers 401 at once)')
    .action(function (this: Command, id: string, appId: string) {
      return call(this, 'DELETE', `/accounts/${id}/ai-apps/${appId}`);
    });
}
