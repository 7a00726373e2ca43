// Operator commands: AI agents and their reviews.
import type { Command } from 'commander';
import { body, call, int, jsonFile, q } from '../call.js';

export function agentsCommands(program: Command): void {
  const agents = program.command('agents').description('operator: AI agents (docs/agents.md)');
  agents
    .command('create <accountId>')
    .description('create an agent from a JSON file: {name, status?, instructions, goal?, handoff?, review?, model?, maxTurns?}')
    .requiredOption('--file <path>', 'the agent, a JSON object (docs/agents.md)', jsonFile)
    .option('--name <name>', 'overrides the file')
    .option('--status <status>', 'paused (default) | active; overrides the file')
    .action(function (this: Command, id: string, o) {
      return call(this, 'POST', `/accounts/${id}/agents`, body(o.file, { name: o.name, status: o.status }));
    });
  agents.command('list <accountId>').action(function (this: Command, id: string) {
    return call(this, 'GET', `/accounts/${id}/agents`);
  });
  agents.command('get <accountId> <agentId>').action(function (this: Command, id: string, agentId: string) {
    return call(this, 'GET', `/accounts/${id}/agents/${agentId}`);
  });
  agents
    .command('update <accountId> <agentId>')
    .description('change any field (--file: the fields as JSON); a change of what it does adds 1 to its version')
    .option('--file <path>', 'fields to change, a JSON object', jsonFile)
    .option('--status <status>', 'active | paused')
    .option('--name <name>')
    .action(function (this: Command, id: string, agentId: string, o) {
      return call(this, 'PATCH', `/accounts/${id}/agents/${agentId}`, body(o.file, { name: o.name, status: o.status }));
    });
  agents.command('delete <accountId> <agentId>').action(function (this: Command, id: string, agentId: string) {
    return call(this, 'DELETE', `/accounts/${id}/agents/${agentId}`);
  });
  agents
    .command('test <accountId> <agentId> <text>')
    .description('one test turn: runs the model, sends nothing, emits nothing')
    .option('--conversation <id>', 'continue this test conversation')
    .action(function (this: Command, id: string, agentId: string, text: string, o) {
      return call(this, 'POST', `/accounts/${id}/agents/${agentId}/test`, body(undefined, { text, conversationId: o.conversation }));
    });
  agents
    .command('reviews <accountId> <agentId>')
    .description("the reviews of an advanced agent's stretches, newest first")
    .option('--limit <n>', '1 to 200', int)
    .option('--after <reviewId>', 'the last id of the previous page')
    .action(function (this: Command, id: string, agentId: string, o) {
      return call(this, 'GET', `/accounts/${id}/agents/${agentId}/reviews${q({ limit: o.limit, after: o.after })}`);
    });
  agents
    .command('rerun-review <accountId> <agentId> <reviewId>')
    .description('run a review again now (one model call; emits agent.conversation_reviewed again)')
    .action(function (this: Command, id: string, agentId: string, reviewId: string) {
      return call(this, 'POST', `/accounts/${id}/agents/${agentId}/reviews/${reviewId}/rerun`);
    });
}
