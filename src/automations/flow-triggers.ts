// Triggers of automations (automations.md "Triggers"): the zod schema of each trigger type.
// validateFlow (flow.ts) reports their problems in Spanish.
import { z } from 'zod';
import { textFor } from '../http/messages.es-AR.js';
import { normalizeText } from './text.js';

// A min(1) failure already speaks for the empty string: this refinement only adds blank text.
const hasWords = (s: string) => s === '' || normalizeText(s) !== '';

const Keyword = z
  .string()
  .min(1)
  .max(100)
  .refine(hasWords, { message: textFor('flow_keyword_blank') });

const KeywordTrigger = z.strictObject({
  type: z.literal('keyword'),
  keywords: z.array(Keyword).min(1).max(50),
  match: z.enum(['exact', 'contains']).default('exact'),
});
const FirstMessageTrigger = z.strictObject({ type: z.literal('first_message') });
const ApiTrigger = z.strictObject({ type: z.literal('api') });
const WebhookTrigger = z.strictObject({ type: z.literal('webhook') });
const CommentTrigger = z.strictObject({ type: z.literal('comment'), keywords: z.array(Keyword).max(50).optional() });

export const TRIGGER_TYPES = ['keyword', 'first_message', 'api', 'webhook', 'comment'] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];

export const triggerSchemas = {
  keyword: KeywordTrigger,
  first_message: FirstMessageTrigger,
  api: ApiTrigger,
  webhook: WebhookTrigger,
  comment: CommentTrigger,
} satisfies Record<TriggerType, z.ZodType>;

/** What starts an automation (for route schemas and the OpenAPI; validateFlow reports its problems in Spanish). */
export const TriggerSchema = z.discriminatedUnion('type', [
  KeywordTrigger,
  FirstMessageTrigger,
  ApiTrigger,
  WebhookTrigger,
  CommentTrigger,
]);
export type Trigger = z.output<typeof TriggerSchema>;
