// Operator commands: sales pipelines and cases.
import type { Command } from 'commander';
import { body, by, call, DATA, int, jsonObject, num, stage } from '../call.js';

export function pipelinesCommands(program: Command): void {
  const pipelines = program.command('pipelines').description('operator: sales pipelines');
  pipelines
    .command('create <accountId> <name>')
    .description('create a pipeline: --stage Consulta:open --stage Ganado:won --stage Perdido:lost')
    .option('--stage <name:kind>', 'a stage, repeatable, in order (kind: open | won | lost)', stage)
    .option('--inactivity-hours <h>', 'close cases after this long without messages (default 24)', int)
    .option('--stale-days <d>', 'move open cases without reply to the lost stage (default 30)', int)
    .option('--default', "make it the account's default pipeline")
    .option(...DATA, jsonObject)
    .action(function (this: Command, id: string, name: string, o) {
      return call(
        this,
        'POST',
        `/accounts/${id}/pipelines`,
        body(o.data, { name, stages: o.stage, inactivityHours: o.inactivityHours, staleDays: o.staleDays, default: o.default }),
      );
    });
  pipelines.command('list <accountId>').action(function (this: Command, id: string) {
    return call(this, 'GET', `/accounts/${id}/pipelines`);
  });
}

export function casesCommands(program: Command): void {
  const cases = program.command('cases').description('operator: cases (what a team member does in the app)');
  cases.command('get <accountId> <caseId>').action(function (this: Command, id: string, caseId: string) {
    return call(this, 'GET', `/accounts/${id}/cases/${caseId}`);
  });
  cases
    .command('close <accountId> <caseId>')
    .description('close a case by hand (closeReason manual)')
    .option('--by-id <id>', 'team member id')
    .option('--by-name <name>', 'team member name')
    .action(function (this: Command, id: string, caseId: string, o) {
      return call(this, 'POST', `/accounts/${id}/cases/${caseId}/close`, body(undefined, { by: by(o) }));
    });
  cases
    .command('reason <accountId> <caseId> <reason>')
    .description('classify a case by hand (reasonSource person)')
    .option('--subreason <subreason>')
    .option('--by-id <id>', 'team member id')
    .option('--by-name <name>', 'team member name')
    .action(function (this: Command, id: string, caseId: string, reason: string, o) {
      return call(this, 'POST', `/accounts/${id}/cases/${caseId}/reason`, body(undefined, { reason, subreason: o.subreason, by: by(o) }));
    });
  cases
    .command('outcome <accountId> <caseId> <result>')
    .description('mark a sale (won) or a loss (lost) by a person')
    .option('--amount <amount>', 'amount of the sale', num)
    .option('--currency <code>', 'ISO 4217, e.g. ARS')
    .option('--note <note>')
    .option('--external-id <id>', 'your own reference')
    .option('--by-id <id>', 'team member id')
    .option('--by-name <name>', 'team member name')
    .action(function (this: Command, id: string, caseId: string, result: string, o) {
      return call(
        this,
        'POST',
        `/accounts/${id}/cases/${caseId}/outcome`,
        body(undefined, { result, amount: o.amount, currency: o.currency, note: o.note, externalId: o.externalId, by: by(o) }),
      );
    });
}
