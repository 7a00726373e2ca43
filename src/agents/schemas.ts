// Agent request and response shapes (docs/operator.md "AI agents", docs/api.md "Agent").
import { z } from 'zod';
import { textFor } from '../http/messages.es-AR.js';
import { Timestamp, Uuid } from '../http/schemas.js';

export const AGENT_STATUSES = ['active', 'paused'] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/** What `handoff.phrases` is when a body leaves it out: these pass the conversation to a person without asking the model. */
export const DEFAULT_HANDOFF_PHRASES = ['hablar con una persona', 'humano', 'asesor', 'operador'] as const;

/** A goal field's name: a variable-like name (it becomes a key of the data gathered). */
export const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** Adds a 400 problem on every item whose `name` repeats an earlier one. */
function uniqueNames(items: { name: string }[], ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  items.forEach((item, i) => {
    if (seen.has(item.name)) {
      ctx.addIssue({ code: 'custom', path: [i, 'name'], message: textFor('agent_name_duplicate', { name: item.name }) });
    }
    seen.add(item.name);
  });
}

const GoalField = z.strictObject({
  name: z
    .string()
    .regex(FIELD_NAME, { message: textFor('agent_field_name') })
    .describe('A key of the data gathered (letters, digits, _)'),
  description: z.string().max(500).default('').describe('What the field holds, for the model'),
  required: z.boolean().default(false).describe('The goal is reached only with it (default false)'),
});

export const GoalInput = z
  .strictObject({
    description: z.string().max(2000).describe('What the agent must obtain'),
    fields: z.array(GoalField).max(20).superRefine(uniqueNames).default([]).describe('At most 20, names unique'),
  })
  .describe('What the agent must obtain (e.g. a purchase intent with producto, cantidad, direccion)');

export const HandoffInput = z
  .strictObject({
    rules: z.array(z.string().max(500)).max(20).default([]).describe('When to pass to a person (read by the model)'),
    phrases: z
      .array(z.string().max(100))
      .max(50)
      .optional()
      .describe(
        'Customer phrases that pass to a person without asking the model; absent: "hablar con una persona", "humano", "asesor", "operador"',
      ),
  })
  .describe('When the agent passes the conversation to a person');

const Criterion = z.strictObject({
  name: z.string().trim().min(1).max(120),
  description: z.string().max(2000).default(''),
  kind: z.enum(['pass_fail', 'score']).describe('pass_fail: success/failure/unknown; score: 1–5'),
});
const Extract = z.strictObject({
  name: z.string().trim().min(1).max(120).describe('A key of `extracted` in the review'),
  description: z.string().max(2000).default(''),
});

export const ReviewInput = z
  .strictObject({
    criteria: z.array(Criterion).max(20).superRefine(uniqueNames).default([]),
    extract: z.array(Extract).max(30).superRefine(uniqueNames).default([]),
  })
  .describe('Present: an advanced agent whose stretches are reviewed');

const Name = z.string().trim().min(1).max(120);
const Instructions = z.string().max(20_000).describe('Tone, what it sells, what it must not do (at most 20,000 characters)');
const Model = z.string().trim().min(1).max(200).nullable().describe('Overrides LLM_MODEL; null: the server default');
const MaxTurns = z.number().int().min(1).max(100).describe('Model turns per stretch; past it, the agent hands off (1–100)');

export const AgentCreate = z.strictObject({
  name: Name,
  status: z.enum(AGENT_STATUSES).optional().describe('Default paused; active needs a language model configured (else 409)'),
  instructions: Instructions.optional().describe('Default empty'),
  goal: GoalInput.nullable().optional(),
  handoff: HandoffInput.optional().describe('Default {rules: [], phrases: the defaults}'),
  review: ReviewInput.nullable().optional(),
  model: Model.optional(),
  maxTurns: MaxTurns.optional().describe('Default 30'),
});
export type AgentCreate = z.infer<typeof AgentCreate>;

export const AgentPatch = z.strictObject({
  name: Name.optional(),
  status: z.enum(AGENT_STATUSES).optional().describe('active needs a language model configured (else 409)'),
  instructions: Instructions.optional(),
  goal: GoalInput.nullable().optional().describe('null removes the goal'),
  handoff: HandoffInput.optional().describe('Replaces the whole handoff; phrases absent: the defaults'),
  review: ReviewInput.nullable().optional().describe('null: no longer an advanced agent'),
  model: Model.optional(),
  maxTurns: MaxTurns.optional(),
});
export type AgentPatch = z.infer<typeof AgentPatch>;

export const AgentView = z
  .object({
    id: Uuid,
    name: z.string(),
    status: z.enum(AGENT_STATUSES),
    version: z.string().describe('"1" at creation; +1 on every change of instructions, goal, handoff, review, model or maxTurns'),
    instructions: z.string(),
    goal: z
      .object({
        description: z.string(),
        fields: z.array(z.object({ name: z.string(), description: z.string(), required: z.boolean() })),
      })
      .nullable(),
    handoff: z.object({ rules: z.array(z.string()), phrases: z.array(z.string()) }),
    review: z
      .object({
        criteria: z.array(z.object({ name: z.string(), description: z.string(), kind: z.enum(['pass_fail', 'score']) })),
        extract: z.array(z.object({ name: z.string(), description: z.string() })),
      })
      .nullable(),
    model: z.string().nullable(),
    maxTurns: z.number().int(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .describe('Agent');
export type AgentView = z.infer<typeof AgentView>;

/** GET /api/v1/agents shows who the agents are, not how they work. */
export const PublicAgentView = AgentView.pick({ id: true, name: true, status: true, version: true }).describe('Agent');
export type PublicAgentView = z.infer<typeof PublicAgentView>;
