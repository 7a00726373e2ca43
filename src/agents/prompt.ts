// The pieces of one agent turn (docs/agents.md "Trying an agent"; spec agents.md "A stretch"): the
// Spanish system prompt, the three tools the model may call, how its tool calls are read, and the
// handoff phrases that pass to a person without asking the model. Pure functions: no database, no
// clock (the caller passes `now`). The stretch engine (turns.ts) and the operator's test turn use them.
import { keywordMatches } from '../automations/text.js';
import type { AgentRow } from '../db/types.js';
import { storableText } from '../http/storable.js';
import type { ToolCall, ToolSpec } from '../llm/types.js';

type AgentLike = Pick<AgentRow, 'instructions' | 'goal' | 'handoff'>;

export interface PromptContext {
  contactName: string | null;
  attributes: Record<string, string>;
  /** The goal's fields obtained so far in the stretch. */
  gathered: Record<string, string>;
  now: Date;
}

const TIME_ZONE = 'America/Argentina/Buenos_Aires';

/** Built once: constructing a formatter costs more than a whole prompt. */
const DAY_IN_ARGENTINA = new Intl.DateTimeFormat('es-AR', {
  timeZone: TIME_ZONE,
  weekday: 'long',
  day: 'numeric',
  month: 'long',
  year: 'numeric',
});

/** "martes 25 de noviembre de 2026": the day in Argentina. */
export function argentineDate(now: Date): string {
  const parts = DAY_IN_ARGENTINA.formatToParts(now);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  return `${part('weekday')} ${part('day')} de ${part('month')} de ${part('year')}`;
}

/** The system prompt of one turn, in Spanish. */
export function systemPrompt(agent: AgentLike, ctx: PromptContext): string {
  const out: string[] = [];
  out.push('Sos un agente que atiende a un cliente por WhatsApp en nombre de la empresa.');
  out.push('', '## Instrucciones', agent.instructions.trim() || '(sin instrucciones particulares)');

  out.push('', '## Objetivo');
  if (agent.goal) {
    out.push(agent.goal.description.trim() || '(sin descripción)');
    if (agent.goal.fields.length > 0) {
      out.push('', 'Datos a obtener:');
      for (const f of agent.goal.fields) {
        const got = ctx.gathered[f.name];
        const state = got !== undefined ? `ya obtenido: "${got}"` : 'falta';
        out.push(`- ${f.name} (${f.required ? 'obligatorio' : 'opcional'})${f.description ? `: ${f.description}` : ''} — ${state}`);
      }
    }
  } else {
    out.push('Este agente no tiene un objetivo que cumplir: respondé y ayudá al cliente.');
  }

  out.push('', '## Cuándo pasar a una persona');
  if (agent.handoff.rules.length > 0) {
    for (const r of agent.handoff.rules) out.push(`- ${r}`);
  } else {
    out.push('- (sin reglas particulares)');
  }
  out.push('- Siempre que el cliente pida hablar con una persona.');

  out.push('', '## El cliente');
  out.push(`Nombre: ${ctx.contactName?.trim() || '(no lo sabemos)'}`);
  const attrs = Object.entries(ctx.attributes);
  if (attrs.length > 0) {
    out.push('Datos del cliente:');
    for (const [k, v] of attrs) out.push(`- ${k}: ${v}`);
  }

  out.push('', '## Fecha', `Hoy es ${argentineDate(ctx.now)} (hora de Argentina).`);

  out.push('', '## Cómo responder');
  out.push('- Escribile al cliente solo con la herramienta reply({text}); podés llamarla varias veces, en orden.');
  if (agent.goal) {
    out.push(
      '- Cuando tengas todos los datos obligatorios del objetivo, llamá a goal_reached({data, summary}) con los datos obtenidos y un resumen breve. Si la llamás sin todos los obligatorios, guardamos los que mandes y la conversación sigue.',
    );
  }
  out.push(
    '- Cuando se cumpla una de las reglas para pasar a una persona, o el cliente pida hablar con una persona, llamá a hand_off({reason, summary}).',
  );
  out.push('- No inventes datos: si algo no lo sabés, preguntá o pasá la conversación a una persona.');
  return out.join('\n');
}

/** reply, goal_reached (only for an agent with a goal; `data` has exactly the goal's fields) and hand_off. */
export function agentTools(agent: AgentLike): ToolSpec[] {
  const tools: ToolSpec[] = [
    {
      name: 'reply',
      description: 'Envía un mensaje de texto al cliente.',
      parameters: {
        type: 'object',
        properties: { text: { type: 'string', description: 'El texto para el cliente' } },
        required: ['text'],
        additionalProperties: false,
      },
    },
  ];
  if (agent.goal) {
    const fields = agent.goal.fields;
    tools.push({
      name: 'goal_reached',
      description: 'El objetivo se cumplió: se obtuvieron los datos obligatorios.',
      parameters: {
        type: 'object',
        properties: {
          data: {
            type: 'object',
            properties: Object.fromEntries(fields.map((f) => [f.name, { type: 'string', description: f.description }])),
            required: fields.filter((f) => f.required).map((f) => f.name),
            additionalProperties: false,
          },
          summary: { type: 'string', description: 'Un resumen breve de la conversación' },
        },
        required: ['data', 'summary'],
        additionalProperties: false,
      },
    });
  }
  tools.push({
    name: 'hand_off',
    description: 'Pasa la conversación a una persona del equipo.',
    parameters: {
      type: 'object',
      properties: {
        reason: { type: 'string', description: 'Por qué pasa a una persona' },
        summary: { type: 'string', description: 'Un resumen breve de la conversación' },
      },
      required: ['reason', 'summary'],
      additionalProperties: false,
    },
  });
  return tools;
}

export interface TurnOutcome {
  /** Texts for the customer, in order (blank ones dropped). */
  replies: string[];
  goal: { data: Record<string, string>; summary: string } | null;
  handoff: { reason: string; summary: string } | null;
  /** Calls not acted on: unknown tools, a reply without text, goal/handoff after the first of them. */
  ignored: ToolCall[];
}

/** A model's text as we can store and send it (no NUL, no lone surrogate: http/storable.ts). */
const str = (v: unknown): string => (typeof v === 'string' ? storableText(v).trim() : '');

/**
 * What the model's tool calls mean: replies in order; `goal_reached`'s data trimmed to the goal's
 * field names with string values (blank ones dropped); the first goal_reached or hand_off wins;
 * anything else is ignored (and listed).
 */
export function interpretToolCalls(agent: AgentLike, toolCalls: ToolCall[]): TurnOutcome {
  const out: TurnOutcome = { replies: [], goal: null, handoff: null, ignored: [] };
  const names = new Set(agent.goal?.fields.map((f) => f.name) ?? []);
  for (const call of toolCalls) {
    const args = call.arguments ?? {};
    if (call.name === 'reply') {
      const text = str(args.text);
      if (text) out.replies.push(text);
      else out.ignored.push(call);
    } else if (call.name === 'goal_reached' && agent.goal && !out.goal && !out.handoff) {
      const raw =
        args.data !== null && typeof args.data === 'object' && !Array.isArray(args.data) ? (args.data as Record<string, unknown>) : {};
      const data: Record<string, string> = {};
      for (const [k, v] of Object.entries(raw)) {
        const value = str(v);
        if (names.has(k) && value) data[k] = value;
      }
      out.goal = { data, summary: str(args.summary) };
    } else if (call.name === 'hand_off' && !out.goal && !out.handoff) {
      out.handoff = { reason: str(args.reason), summary: str(args.summary) };
    } else {
      out.ignored.push(call);
    }
  }
  return out;
}

/** Whether the customer's text contains one of the agent's handoff phrases (normalised, whole words). */
export function matchesHandoffPhrase(agent: Pick<AgentRow, 'handoff'>, text: string): boolean {
  return keywordMatches({ keywords: agent.handoff.phrases, match: 'contains' }, text);
}
