import { z } from 'zod';
import { Timestamp, Uuid } from '../http/schemas.js';
import { LIMIT_KEYS, PLAN_IDS } from '../limits/plans.js';

const limitValue = z.number().int().min(0).nullable();
export const LimitsSchema = z
  .object(
    Object.fromEntries(LIMIT_KEYS.map((k) => [k, limitValue.describe(`${k}; null means unlimited`)])) as Record<
      (typeof LIMIT_KEYS)[number],
      typeof limitValue
    >,
  )
  .describe('Effective limits of the account (plan defaults with overrides)');
export const LimitsOverride = LimitsSchema.partial().strict();

export const PhoneNumberView = z.object({
  id: Uuid,
  phone: z.string().meta({ example: '5491155550000' }),
  name: z.string().nullable(),
  provider: z.string().describe('sandbox | cloud'),
  status: z.string().describe('connected | disconnected'),
  default: z.boolean(),
  throughputPerSecond: z
    .number()
    .int()
    .describe(
      'Messages a second Meta lets the number send (its tier: 80 by default, up to 1,000); its sends are paced at 93 % of it (docs/performance.md "Throughput tiers and pacing")',
    ),
});

export const AccountView = z.object({
  id: Uuid,
  name: z.string(),
  plan: z.string().describe(`One of ${PLAN_IDS.join(', ')}`),
  createdAt: Timestamp,
  limits: LimitsSchema,
  usage: z.object({
    period: z.object({ start: Timestamp, end: Timestamp }).describe('The current quota month (day 1 00:00 Argentina time)'),
    apiCalls: z.number().int(),
    webhookDeliveries: z.number().int(),
    contacts: z.number().int(),
    automationSteps: z.number().int(),
    automationHttpRequests: z.number().int(),
    aiApps: z.number().int().describe('AI apps connected through MCP now'),
  }),
  phoneNumbers: z.array(PhoneNumberView),
});
