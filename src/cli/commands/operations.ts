// Operator commands: periodic jobs, dead letters, the audit trail, the secrets key and the sandbox channel.
import type { Command } from 'commander';
import { body, call, DATA, int, jsonObject, q } from '../call.js';

export function jobsCommands(program: Command): void {
  const jobs = program.command('jobs').description('operator: periodic jobs');
  jobs
    .command('run <name>')
    .description(
      'run a periodic job now: automations | case-timeouts | campaigns | classification | agent-reviews | webhooks | idempotency-keys | sandbox-statuses | reconcile-sends',
    )
    .action(function (this: Command, name: string) {
      return call(this, 'POST', `/jobs/${name}/run`);
    });
}

export function deadLetterCommands(program: Command): void {
  const dead = program
    .command('dead-letters')
    .description('operator: items that failed on every try of QUEUE_RETRY_SCHEDULE, parked (docs/operating.md "Dead letters")');
  dead
    .command('list')
    .description('the dead letters, oldest first')
    .option('--queue <queue>', 'only one queue: inbound | webhook_deliveries | executions | agent_turns | classification')
    .option('--limit <n>', 'page size, 1 to 200')
    .option('--after <id>', 'the last id of the previous page')
    .action(function (this: Command, o: { queue?: string; limit?: string; after?: string }) {
      return call(this, 'GET', `/dead-letters${q({ queue: o.queue, limit: o.limit, after: o.after })}`);
    });
  dead
    .command('retry <id>')
    .description('put one back in its queue (processed once more, with the same dedupe)')
    .action(function (this: Command, id: string) {
      return call(this, 'POST', `/dead-letters/${id}/retry`);
    });
  dead
    .command('discard <id>')
    .description('discard one (logged)')
    .action(function (this: Command, id: string) {
      return call(this, 'DELETE', `/dead-letters/${id}`);
    });
}

export function auditCommands(program: Command): void {
  program
    .command('audit [accountId]')
    .description(
      'operator: the account\'s audit trail, newest first; without an account, the installation\'s own (docs/privacy.md "Audit trail")',
    )
    .option('--action <action>', 'only one action, e.g. webhook.created')
    .option('--limit <n>', 'page size, 1 to 200')
    .option('--after <id>', 'the last id of the previous page')
    .action(function (this: Command, accountId: string | undefined, o: { action?: string; limit?: string; after?: string }) {
      const path = accountId === undefined ? '/audit' : `/accounts/${accountId}/audit`;
      return call(this, 'GET', `${path}${q({ action: o.action, limit: o.limit, after: o.after })}`);
    });
}

export function secretsCommands(program: Command): void {
  const secrets = program
    .command('secrets')
    .description('operator: stored credentials, sealed at rest (docs/operating.md "The secrets key")');
  secrets
    .command('rotate')
    .description('re-seal every stored credential with the first key of SECRETS_KEYS (then an old key can be removed)')
    .action(function (this: Command) {
      return call(this, 'POST', '/secrets/rotate');
    });
}

export function sandboxCommands(program: Command): void {
  const sandbox = program.command('sandbox').description('operator: the sandbox channel (CHANNEL_PROVIDER=sandbox)');
  sandbox
    .command('inbound <accountId> <from> [text]')
    .description('a customer writes (runs the real inbound path)')
    .option('--socialchat', '<from> is a social-channel user id, not a phone')
    .option('--name <name>', 'profile name')
    .option('--type <type>', 'text (default), image, button, …')
    .option('--timestamp <iso>', 'when the customer wrote (default now; may be in the past)')
    .option('--phone-number-id <id>', 'the receiving number (default: the account default)')
    .option(...DATA, jsonObject)
    .action(function (this: Command, accountId: string, from: string, text: string | undefined, o) {
      return call(
        this,
        'POST',
        '/sandbox/inbound',
        body(o.data, {
          accountId,
          ...(o.socialchat ? { socialchat: from } : { from }),
          text,
          name: o.name,
          type: o.type,
          timestamp: o.timestamp,
          phoneNumberId: o.phoneNumberId,
        }),
      );
    });
  sandbox
    .command('social-inbound <socialAccountId> <userId> <text>')
    .description('a customer writes a direct message to a social account (runs the real inbound path)')
    .option('--username <username>', 'the Instagram username')
    .option('--mid <mid>', 'the Instagram message id (the same one twice is stored once)')
    .option(...DATA, jsonObject)
    .action(function (this: Command, socialAccountId: string, userId: string, text: string, o) {
      return call(
        this,
        'POST',
        '/sandbox/social-inbound',
        body(o.data, { socialAccountId, userId, username: o.username, text, mid: o.mid }),
      );
    });
  sandbox
    .command('status <wamid> <status>')
    .description('the provider reports a status: sent | delivered | read | failed')
    .option('--code <code>', 'provider code (with failed)', int)
    .option('--timestamp <iso>', 'when it happened (default now)')
    .action(function (this: Command, wamid: string, status: string, o) {
      return call(this, 'POST', '/sandbox/status', body(undefined, { wamid, status, code: o.code, timestamp: o.timestamp }));
    });
}
