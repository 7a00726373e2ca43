// Operator commands: thin calls to the operator API (/admin/v1, operator.md) of a running
// server, one module per concern in commands/; the call and the option parsers are in call.ts.
import type { Command } from 'commander';
import { accountsCommands, appsCommands, keysCommands, numbersCommands, socialCommands } from './commands/accounts.js';
import { agentsCommands } from './commands/agents.js';
import { automationsCommands } from './commands/automations.js';
import { casesCommands, pipelinesCommands } from './commands/cases.js';
import { membersCommands } from './commands/members.js';
import { campaignsCommands, conversationsCommands, templatesCommands, webhooksCommands } from './commands/messaging.js';
import { auditCommands, deadLetterCommands, jobsCommands, sandboxCommands, secretsCommands } from './commands/operations.js';

export function operatorCommands(program: Command): void {
  program
    .option('--url <url>', 'server of the operator commands (default: CHASQUI_URL, else http://127.0.0.1:$PORT)')
    .option('--token <token>', 'operator token (default: ADMIN_TOKEN, else the file $DATA_DIR/admin-token)')
    .addHelpText(
      'after',
      `
Environment (read by serve and by the operator commands alike):
  PORT         the server's port (default 3000); operator commands call http://127.0.0.1:$PORT
  DATA_DIR     the embedded database and the operator token file admin-token (default ./data)
  CHASQUI_URL  the server of the operator commands, when it is not http://127.0.0.1:$PORT
  ADMIN_TOKEN  the operator token, instead of the file $DATA_DIR/admin-token
A server started with another PORT or DATA_DIR needs the same for its operator commands:
  PORT=3001 DATA_DIR=/tmp/chasqui npx chasqui accounts list`,
    );
  // In this order: it is the order of `chasqui --help`.
  accountsCommands(program);
  keysCommands(program);
  membersCommands(program);
  numbersCommands(program);
  socialCommands(program);
  templatesCommands(program);
  webhooksCommands(program);
  pipelinesCommands(program);
  casesCommands(program);
  campaignsCommands(program);
  agentsCommands(program);
  appsCommands(program);
  automationsCommands(program);
  conversationsCommands(program);
  jobsCommands(program);
  deadLetterCommands(program);
  auditCommands(program);
  secretsCommands(program);
  sandboxCommands(program);
}
