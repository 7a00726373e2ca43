// Operator commands: templates, webhooks, campaigns and the team's replies in a conversation.
import type { Command } from 'commander';
import { body, CliError, call, DATA, int, jsonObject, list, pair, q, variable } from '../call.js';

export function templatesCommands(program: Command): void {
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
}

export function webhooksCommands(program: Command): void {
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
}

export function campaignsCommands(program: Command): void {
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
}

export function conversationsCommands(program: Command): void {
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
}
