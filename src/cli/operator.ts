// Operator commands: thin calls to the operator API (/admin/v1, operator.md) of a running
// server. Server: --url, else CHASQUI_URL, else http://127.0.0.1:$PORT (3000). Token: --token,
// else ADMIN_TOKEN, else DATA_DIR/admin-token (written by the server's first start).
// Results are printed as JSON on stdout; a server error is printed on stderr exactly as the server
// wrote it (Spanish text, api.md §7) and the command exits with 1.
import { readFileSync } from 'node:fs';
import { type Command, InvalidArgumentError } from 'commander';

interface Target {
  base: string;
  token: string;
}

type Globals = { url?: string; token?: string };

class CliError extends Error {}

function target(globals: Globals): Target {
  const base = (globals.url ?? process.env.CHASQUI_URL ?? `http://127.0.0.1:${process.env.PORT ?? '3000'}`).replace(/\/+$/, '');
  let token = globals.token ?? process.env.ADMIN_TOKEN;
  if (!token) {
    const file = `${process.env.DATA_DIR ?? './data'}/admin-token`;
    try {
      token = readFileSync(file, 'utf8').trim();
    } catch {
      throw new CliError(
        `No operator token: pass --token, set ADMIN_TOKEN, or run where ${file} exists (the server writes it on its first start; set DATA_DIR to the server's).`,
      );
    }
  }
  return { base, token };
}

/** Calls the operator API and prints the result; sets exit code 1 on an error answer. */
async function call(cmd: Command, method: string, path: string, body?: unknown): Promise<void> {
  const { base, token } = target(cmd.optsWithGlobals<Globals>());
  let res: Response;
  try {
    res = await fetch(`${base}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const code = cause?.code ?? cause?.message ?? (err as Error).message;
    throw new CliError(`Could not reach Chasqui at ${base} (${code}). Is it running (npm start)? Otherwise pass --url or set CHASQUI_URL.`);
  }
  const text = await res.text();
  if (!res.ok) {
    // As the server wrote it: the Spanish text is meant to be shown as is.
    process.stderr.write(`${text || `HTTP ${res.status}`}\n`);
    process.exitCode = 1;
    return;
  }
  if (!text) return; // 204: done, nothing to print
  try {
    process.stdout.write(`${JSON.stringify(JSON.parse(text), null, 2)}\n`);
  } catch {
    process.stdout.write(`${text}\n`);
  }
}

// ---- option parsers ------------------------------------------------------------------------

function json(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('not valid JSON.');
  }
}

function jsonObject(value: string): Record<string, unknown> {
  const v = json(value);
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new InvalidArgumentError('expected a JSON object.');
  return v as Record<string, unknown>;
}

/** Repeatable `key=value` → {key: value}. */
function pair(value: string, acc: Record<string, string> = {}): Record<string, string> {
  const i = value.indexOf('=');
  if (i <= 0) throw new InvalidArgumentError('use key=value.');
  return { ...acc, [value.slice(0, i)]: value.slice(i + 1) };
}

/** Repeatable `name:kind` (pipeline stages). */
function stage(value: string, acc: { name: string; kind: string }[] = []): { name: string; kind: string }[] {
  const i = value.lastIndexOf(':');
  if (i <= 0) throw new InvalidArgumentError('use name:kind, e.g. Consulta:open, Ganado:won, Perdido:lost.');
  return [...acc, { name: value.slice(0, i), kind: value.slice(i + 1) }];
}

/** Repeatable `name=example` or `name:label=example` (template variables). */
function variable(value: string, acc: { name: string; label: string; example: string }[] = []) {
  const i = value.indexOf('=');
  if (i <= 0) throw new InvalidArgumentError('use name=example or name:label=example.');
  const [name, label] = value.slice(0, i).split(':', 2) as [string, string | undefined];
  return [...acc, { name, label: label ?? name, example: value.slice(i + 1) }];
}

/** A JSON object read from a file (`--file flow.json`). */
function jsonFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new InvalidArgumentError(`cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}).`);
  }
  try {
    return jsonObject(text);
  } catch {
    throw new InvalidArgumentError(`${path} does not hold a JSON object.`);
  }
}

function int(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('expected an integer.');
  return n;
}

function num(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n)) throw new InvalidArgumentError('expected a number.');
  return n;
}

const list = (value: string): string[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** Drops undefined keys; `--data` (raw JSON) goes first so explicit flags win. */
function body(data: Record<string, unknown> | undefined, fields: Record<string, unknown>): Record<string, unknown> {
  return { ...(data ?? {}), ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) };
}

function by(o: { byId?: string; byName?: string }): { id: string; name: string } | undefined {
  if (o.byId === undefined && o.byName === undefined) return undefined;
  return { id: o.byId ?? '', name: o.byName ?? '' };
}

const DATA = ['--data <json>', 'extra body fields as a JSON object (flags win)'] as const;
const q = (params: Record<string, string | number | undefined>): string => {
  const s = new URLSearchParams(
    Object.entries(params)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]): [string, string] => [k, String(v)]),
  ).toString();
  return s ? `?${s}` : '';
};

// ---- commands ------------------------------------------------------------------------------

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

  const templates = program.command('templates').description('operator: message templates');
  templates
    .command('add <accountId> <name>')
    .description('create a template (status PENDING unless --status)')
    .requiredOption('--body <text>', 'text with {{variable}} placeholders')
    .requiredOption('--category <category>', 'MARKETING | UTILITY | AUTHENTICATION')
    .option('--language <code>', 'e.g. es_AR (default)')
    .option('--var <name=example>', 'a variable, repeatable: nombre=Ana or nombre:Nombre=Ana', variable)
    .option('--status <status>', 'APPROVED | PENDING | REJECTED | PAUSED | DISABLED')
    .option(...DATA, jsonObject)
    .action(function (this: Command, id: string, name: string, o) {
      return call(
        this,
        'POST',
        `/accounts/${id}/templates`,
        body(o.data, { name, body: o.body, category: o.category, language: o.language, variables: o.var, status: o.status }),
      );
    });
  templates
    .command('update <accountId> <templateId>')
    .description("move a template's status (the channel's approval)")
    .requiredOption('--status <status>', 'APPROVED | PENDING | REJECTED | PAUSED | DISABLED')
    .action(function (this: Command, id: string, tid: string, o) {
      return call(this, 'PATCH', `/accounts/${id}/templates/${tid}`, { status: o.status });
    });
  templates
    .command('delete <accountId> <templateId>')
    .description('delete a template (sending it then answers 404)')
    .action(function (this: Command, id: string, tid: string) {
      return call(this, 'DELETE', `/accounts/${id}/templates/${tid}`);
    });
  templates
    .command('sync <accountId>')
    .description('import the templates of the WhatsApp Business Account (cloud numbers)')
    .action(function (this: Command, id: string) {
      return call(this, 'POST', `/accounts/${id}/templates/sync`);
    });

  const webhooks = program.command('webhooks').description('operator: webhook URLs and deliveries');
  webhooks
    .command('add <accountId> <url>')
    .description('register a URL; prints its secret whsec_…')
    .option('--events <kinds>', 'comma-separated event kinds (default: all)', list)
    .action(function (this: Command, id: string, url: string, o) {
      return call(this, 'POST', `/accounts/${id}/webhooks`, body(undefined, { url, events: o.events }));
    });
  webhooks.command('list <accountId>').action(function (this: Command, id: string) {
    return call(this, 'GET', `/accounts/${id}/webhooks`);
  });
  webhooks
    .command('update <accountId> <webhookId>')
    .description('change URL or events; enable or disable')
    .option('--new-url <url>', 'the new URL')
    .option('--events <kinds>', 'comma-separated event kinds; "all" for every kind', list)
    .option('--enable', 'enable it (undelivered events can be replayed)')
    .option('--disable', 'disable it')
    .option(...DATA, jsonObject)
    .action(function (this: Command, id: string, wid: string, o) {
      if (o.enable && o.disable) throw new CliError('Use --enable or --disable, not both.');
      const events = o.events && o.events.length === 1 && o.events[0] === 'all' ? null : o.events;
      const enabled = o.enable ? true : o.disable ? false : undefined;
      return call(this, 'PATCH', `/accounts/${id}/webhooks/${wid}`, body(o.data, { url: o.newUrl, events, enabled }));
    });
  webhooks.command('delete <accountId> <webhookId>').action(function (this: Command, id: string, wid: string) {
    return call(this, 'DELETE', `/accounts/${id}/webhooks/${wid}`);
  });
  webhooks
    .command('test <accountId> <webhookId>')
    .description('queue a test message.received (test: true)')
    .action(function (this: Command, id: string, wid: string) {
      return call(this, 'POST', `/accounts/${id}/webhooks/${wid}/test`);
    });
  webhooks
    .command('rotate-secret <accountId> <webhookId>')
    .description('new secret; the old one keeps signing too for 24 h')
    .action(function (this: Command, id: string, wid: string) {
      return call(this, 'POST', `/accounts/${id}/webhooks/${wid}/rotate-secret`);
    });
  webhooks
    .command('deliveries <accountId> <webhookId> [deliveryId]')
    .description('list deliveries, or one delivery with every attempt')
    .option('--limit <n>', '1 to 200', int)
    .option('--after <deliveryId>', 'the last id of the previous page')
    .action(function (this: Command, id: string, wid: string, did: string | undefined, o) {
      const path = `/accounts/${id}/webhooks/${wid}/deliveries`;
      return did ? call(this, 'GET', `${path}/${did}`) : call(this, 'GET', `${path}${q({ limit: o.limit, after: o.after })}`);
    });
  webhooks
    .command('redeliver <accountId> <webhookId> <deliveryId>')
    .description('send a delivery again')
    .action(function (this: Command, id: string, wid: string, did: string) {
      return call(this, 'POST', `/accounts/${id}/webhooks/${wid}/deliveries/${did}/redeliver`);
    });

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

  const campaigns = program.command('campaigns').description('operator: campaigns');
  campaigns
    .command('create <accountId> <name> <templateId>')
    .description('create a campaign; sending starts at --scheduled-at, or at once')
    .option('--var <name=value>', 'a template variable, repeatable', pair)
    .option('--attr <key=value>', 'audience filter: contacts whose attribute equals the value, repeatable', pair)
    .option('--phone-number-id <id>', 'number to send from (default: the account default)')
    .option('--scheduled-at <iso>', 'when sending starts, ISO 8601')
    .option(...DATA, jsonObject)
    .action(function (this: Command, id: string, name: string, templateId: string, o) {
      return call(
        this,
        'POST',
        `/accounts/${id}/campaigns`,
        body(o.data, {
          name,
          templateId,
          variables: o.var,
          audience: o.attr ? { attributes: o.attr } : undefined,
          phoneNumberId: o.phoneNumberId,
          scheduledAt: o.scheduledAt,
        }),
      );
    });
  campaigns.command('list <accountId>').action(function (this: Command, id: string) {
    return call(this, 'GET', `/accounts/${id}/campaigns`);
  });
  campaigns.command('get <accountId> <campaignId>').action(function (this: Command, id: string, cid: string) {
    return call(this, 'GET', `/accounts/${id}/campaigns/${cid}`);
  });
  campaigns.command('cancel <accountId> <campaignId>').action(function (this: Command, id: string, cid: string) {
    return call(this, 'POST', `/accounts/${id}/campaigns/${cid}/cancel`);
  });

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

  const conversations = program.command('conversations').description('operator: what the team does in a conversation');
  conversations
    .command('reply <accountId> <conversationId>')
    .description('a team member replies (cancels a running automation; the team handles the conversation)')
    .option('--text <text>', 'free text (inside the 24-hour window)')
    .option('--by-name <name>', 'team member name', 'Equipo')
    .option('--by-id <id>', 'team member id')
    .option(...DATA, jsonObject)
    .action(function (this: Command, id: string, cid: string, o) {
      const who = { ...(o.byId !== undefined ? { id: o.byId } : {}), name: o.byName };
      return call(this, 'POST', `/accounts/${id}/conversations/${cid}/messages`, body(o.data, { text: o.text, by: who }));
    });
  conversations
    .command('notes <accountId> <conversationId>')
    .description("the conversation's internal notes (an automation's handoff note)")
    .action(function (this: Command, id: string, cid: string) {
      return call(this, 'GET', `/accounts/${id}/conversations/${cid}/notes`);
    });

  const jobs = program.command('jobs').description('operator: periodic jobs');
  jobs
    .command('run <name>')
    .description(
      'run a periodic job now: automations | case-timeouts | campaigns | classification | agent-reviews | webhooks | idempotency-keys | sandbox-statuses | reconcile-sends',
    )
    .action(function (this: Command, name: string) {
      return call(this, 'POST', `/jobs/${name}/run`);
    });

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
