// Operator commands: automations (flows) and their executions.
import type { Command } from 'commander';
import { body, call, int, jsonFile, pair, q } from '../call.js';

export function automationsCommands(program: Command): void {
  const automations = program.command('automations').description('operator: automations (flows) and their executions');
  automations
    .command('create <accountId>')
    .description('create an automation from a JSON file: {name, status?, trigger, steps, phoneNumberId?}')
    .requiredOption('--file <path>', 'the flow, a JSON object (docs/automations.md)', jsonFile)
    .option('--name <name>', 'overrides the file')
    .option('--status <status>', 'draft (default) | active | paused; overrides the file')
    .action(function (this: Command, id: string, o) {
      return call(this, 'POST', `/accounts/${id}/automations`, body(o.file, { name: o.name, status: o.status }));
    });
  automations
    .command('list <accountId>')
    .description("the account's automations, newest first")
    .action(function (this: Command, id: string) {
      return call(this, 'GET', `/accounts/${id}/automations`);
    });
  automations
    .command('get <accountId> <automationId>')
    .description('one automation with its steps and webhook URL')
    .action(function (this: Command, id: string, aid: string) {
      return call(this, 'GET', `/accounts/${id}/automations/${aid}`);
    });
  automations
    .command('update <accountId> <automationId>')
    .description('change name, status, trigger, steps or number (--file: any of those fields as JSON)')
    .option('--file <path>', 'fields to change, a JSON object', jsonFile)
    .option('--status <status>', 'draft | active | paused (leaving active cancels running executions)')
    .option('--name <name>')
    .action(function (this: Command, id: string, aid: string, o) {
      return call(this, 'PATCH', `/accounts/${id}/automations/${aid}`, body(o.file, { name: o.name, status: o.status }));
    });
  automations
    .command('delete <accountId> <automationId>')
    .description('delete an automation (its running executions are cancelled)')
    .action(function (this: Command, id: string, aid: string) {
      return call(this, 'DELETE', `/accounts/${id}/automations/${aid}`);
    });
  for (const [name, status, what] of [
    ['activate', 'active', 'start answering (status active)'],
    ['pause', 'paused', 'stop answering (status paused; running executions are cancelled)'],
  ] as const) {
    automations
      .command(`${name} <accountId> <automationId>`)
      .description(what)
      .action(function (this: Command, id: string, aid: string) {
        return call(this, 'PATCH', `/accounts/${id}/automations/${aid}`, { status });
      });
  }
  automations
    .command('rotate-webhook <accountId> <automationId>')
    .description('a new incoming-webhook URL (the old one stops working at once)')
    .action(function (this: Command, id: string, aid: string) {
      return call(this, 'POST', `/accounts/${id}/automations/${aid}/rotate-webhook`);
    });
  automations
    .command('test <accountId> <automationId> <to>')
    .description('run the flow for real as a test (any status; counts no quota, emits no event)')
    .option('--var <name=value>', 'a variable the flow reads as {{name}}, repeatable', pair)
    .action(function (this: Command, id: string, aid: string, to: string, o) {
      return call(this, 'POST', `/accounts/${id}/automations/${aid}/test`, body(undefined, { to, variables: o.var }));
    });
  automations
    .command('executions <accountId> <automationId> [executionId]')
    .description('list executions, or one execution with its step log')
    .option('--status <status>', 'running | completed | handed_off | failed | cancelled')
    .option('--limit <n>', '1 to 200', int)
    .option('--after <executionId>', 'the last id of the previous page')
    .action(function (this: Command, id: string, aid: string, eid: string | undefined, o) {
      const path = `/accounts/${id}/automations/${aid}/executions`;
      return eid
        ? call(this, 'GET', `${path}/${eid}`)
        : call(this, 'GET', `${path}${q({ status: o.status, limit: o.limit, after: o.after })}`);
    });
  automations
    .command('cancel <accountId> <automationId> <executionId>')
    .description('stop a running execution (no event)')
    .action(function (this: Command, id: string, aid: string, eid: string) {
      return call(this, 'POST', `/accounts/${id}/automations/${aid}/executions/${eid}/cancel`);
    });
}
