// What every send checks before anything is stored (docs/decisions.md "Outbound text"): the text
// fits the channel's limit (text-limits.ts), and a send of an automation or an AI agent takes the
// account's message minute cap (api.md §8), the same counter POST /messages and the AI apps use.
import type { AccountRow } from '../db/types.js';
import { invalid } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import { WINDOW_MS, windowStart } from '../limits/caps.js';
import { effectiveLimits } from '../limits/plans.js';
import type { Services } from '../services.js';
import { TEXT_BOUNDS, type TextChannel } from './text-limits.js';

const CHANNEL_NAMES: Record<TextChannel, string> = { whatsapp: 'WhatsApp', instagram: 'Instagram' };
const count = (n: number): string => n.toLocaleString('es-AR');

/** A 400 at `text` when it is longer than the channel allows; nothing was stored. */
export function checkTextLength(text: string, channel: TextChannel): void {
  const bound = TEXT_BOUNDS[channel];
  const length = bound.measure(text);
  if (length <= bound.max) return;
  const params = { length: count(length), limit: count(bound.max), channel: CHANNEL_NAMES[channel] };
  throw invalid(['text'], textFor(bound.unit === 'bytes' ? 'text_too_long_bytes' : 'text_too_long', params));
}

/**
 * A 400 at the variable when a template variable's value is longer than a WhatsApp text may be
 * (4,096): no message carries more, and nothing that long is stored.
 */
export function checkTemplateVariables(variables: Record<string, string>): void {
  const max = TEXT_BOUNDS.whatsapp.max;
  for (const [name, value] of Object.entries(variables)) {
    if (typeof value !== 'string' || value.length <= max) continue;
    throw invalid(
      ['template', 'variables', name],
      textFor('template_variable_too_long', { name, length: count(value.length), limit: count(max) }),
    );
  }
}

/**
 * The account's message minute cap is full: an automated send waits, it is not lost. The caller
 * (an execution's step, an agent's turn) gives its claim back, due again at `until` (the next
 * minute window), and sends then. Nothing was stored.
 */
export class MessageCapFull extends Error {
  constructor(readonly until: Date) {
    super('message minute cap full');
  }
}

/**
 * A send of an automation or an AI agent counts against the account's messages per minute like
 * POST /messages (docs/decisions.md "Outbound text"); past the cap, MessageCapFull. A team
 * member's reply is a person at the operator's app: not counted.
 */
export async function admitAutomatedSend(s: Services, account: AccountRow, source: 'automation' | 'agent' | 'team'): Promise<void> {
  if (source === 'team') return;
  const limits = effectiveLimits(account.plan, account.limits);
  if (limits.messagesPerMinute === null) return;
  const refused = await s.limiter.admitMessage({ accountId: account.id, plan: account.plan, limits });
  if (refused) throw new MessageCapFull(new Date(windowStart(s.clock.ms()) + WINDOW_MS));
}
