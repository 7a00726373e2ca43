// Operator commands: members of an account (docs/console.md "Members").
import type { Command } from 'commander';
import { body, call, DATA, jsonObject } from '../call.js';

export function membersCommands(program: Command): void {
  const members = program.command('members').description('operator: members of an account (console logins)');
  members
    .command('add <accountId> <email>')
    .description('add a member; without --password it prints the one-use invite link (inviteUrl, 7 days)')
    .requiredOption('--role <role>', 'owner | admin | agent')
    .option('--name <name>')
    .option('--password <password>', '12 to 256 characters: the member is active at once (no invite link)')
    .option(...DATA, jsonObject)
    .action(function (this: Command, id: string, email: string, o) {
      return call(this, 'POST', `/accounts/${id}/members`, body(o.data, { email, role: o.role, name: o.name, password: o.password }));
    });
  members
    .command('list <accountId>')
    .description('list the members')
    .action(function (this: Command, id: string) {
      return call(this, 'GET', `/accounts/${id}/members`);
    });
  members
    .command('update <accountId> <memberId>')
    .description('change name, role or status (active | disabled; disabling ends their sessions)')
    .option('--name <name>')
    .option('--role <role>', 'owner | admin | agent')
    .option('--status <status>', 'active | disabled')
    .action(function (this: Command, id: string, memberId: string, o) {
      return call(this, 'PATCH', `/accounts/${id}/members/${memberId}`, body(undefined, { name: o.name, role: o.role, status: o.status }));
    });
  members
    .command('remove <accountId> <memberId>')
    .description('remove a member (the last active owner stays)')
    .action(function (this: Command, id: string, memberId: string) {
      return call(this, 'DELETE', `/accounts/${id}/members/${memberId}`);
    });
}
