// The review of an advanced agent's stretch (docs/agents.md "Review"): the Spanish prompt, the
// JSON schema the model answers with, and how its answer becomes the stored and emitted shape.
// Pure functions: no database, no clock.
import { z } from 'zod';
import type { AgentRow, ReviewCriterionResult } from '../db/types.js';
import type { ChatMessage } from '../llm/types.js';

type ReviewConfig = NonNullable<AgentRow['review']>;

/** The model's answer. Strict structured outputs refuse optional fields and records with dynamic keys: every field is required (nullable), and criteria and extracted data are arrays of named items. */
export const ReviewAnswer = z.object({
  summary: z.string().nullable(),
  criteria: z.array(
    z.object({
      name: z.string(),
      result: z.enum(['success', 'failure', 'unknown']).nullable(),
      score: z.number().nullable(),
    }),
  ),
  extracted: z.array(z.object({ name: z.string(), value: z.string().nullable() })),
});
export type ReviewAnswer = z.infer<typeof ReviewAnswer>;

/** One message of the stretch, as the review shows it. */
export interface ReviewedMessage {
  direction: 'inbound' | 'outbound';
  type: string;
  text: string | null;
  template_name?: string | null;
}

/** A summary longer than this is cut (the spec asks for one or two sentences). */
const MAX_SUMMARY = 1000;
/** An extracted value longer than this is cut. */
const MAX_VALUE = 1000;

/** The system prompt: what to evaluate, each criterion with its kind, what to extract. */
export function reviewSystemPrompt(agent: Pick<AgentRow, 'name' | 'goal'>, review: ReviewConfig): string {
  const out: string[] = [];
  out.push(
    `Sos un revisor de calidad. Leé una conversación de WhatsApp entre un cliente y la empresa, atendida por el agente de IA "${agent.name}", y evaluala.`,
  );
  if (agent.goal?.description.trim()) out.push('', '## Objetivo del agente', agent.goal.description.trim());

  out.push('', '## Resumen', 'En summary escribí en una o dos oraciones qué pasó en la conversación (null si no hay nada que resumir).');

  out.push('', '## Criterios');
  if (review.criteria.length === 0) {
    out.push('No hay criterios: devolvé criteria como una lista vacía.');
  } else {
    out.push('Para cada criterio devolvé un elemento de criteria con su name tal cual:');
    for (const c of review.criteria) {
      const how =
        c.kind === 'pass_fail'
          ? 'de aprobado o no: result "success" si se cumplió, "failure" si no, "unknown" si la conversación no alcanza para saberlo; score null'
          : 'de puntaje: score un número entero de 1 (muy mal) a 5 (excelente); result null';
      out.push(`- "${c.name}" (${how})${c.description.trim() ? `: ${c.description.trim()}` : ''}`);
    }
  }

  out.push('', '## Datos a extraer');
  if (review.extract.length === 0) {
    out.push('No hay datos a extraer: devolvé extracted como una lista vacía.');
  } else {
    out.push(
      'Para cada dato devolvé un elemento de extracted con su name tal cual y value: el valor como texto, o null si el cliente no lo dio.',
    );
    for (const e of review.extract) out.push(`- "${e.name}"${e.description.trim() ? `: ${e.description.trim()}` : ''}`);
  }
  out.push('', 'Usá solo lo que dice la conversación: no inventes datos.');
  return out.join('\n');
}

/** A line of the transcript: the customer's messages are "Cliente", the business's "Empresa"; without text, the template or the type. */
function line(m: ReviewedMessage): string {
  const who = m.direction === 'inbound' ? 'Cliente' : 'Empresa';
  const text = m.text?.trim() ? m.text.trim() : m.template_name ? `[plantilla ${m.template_name}]` : `[${m.type}]`;
  return `${who}: ${text}`;
}

/** The model's messages: the system prompt, and the stretch's messages as one transcript (oldest first). */
export function reviewMessages(agent: Pick<AgentRow, 'name' | 'goal'>, review: ReviewConfig, messages: ReviewedMessage[]): ChatMessage[] {
  const transcript = messages.length > 0 ? messages.map(line).join('\n') : '(la conversación no tiene mensajes)';
  return [
    { role: 'system', content: reviewSystemPrompt(agent, review) },
    { role: 'user', content: `La conversación:\n\n${transcript}` },
  ];
}

/** Names compared without case or surrounding spaces (the model may echo them loosely). */
const key = (name: string) => name.trim().toLowerCase();

/** Finds the item named `name`: exact first, then without case or surrounding spaces. */
function byName<T extends { name: string }>(items: T[], name: string): T | undefined {
  return items.find((i) => i.name === name) ?? items.find((i) => key(i.name) === key(name));
}

/** A score 1–5: rounded and clamped; not a finite number → null. */
function scoreOf(v: number | null | undefined): number | null {
  if (typeof v !== 'number' || !Number.isFinite(v)) return null;
  return Math.min(5, Math.max(1, Math.round(v)));
}

export interface ReviewOutcome {
  summary: string | null;
  criteria: ReviewCriterionResult[];
  extracted: Record<string, string | null>;
}

/**
 * The answer in the agent's terms: one result per criterion of the agent, in its order
 * (`pass_fail`: result success/failure/unknown — missing → unknown — and score null; `score`:
 * result null and score 1–5 or null); `extracted` holds every extract name (null when not found),
 * names the agent does not have are dropped.
 */
export function normalizeReview(review: ReviewConfig, answer: ReviewAnswer): ReviewOutcome {
  const summary = answer.summary?.trim() ? answer.summary.trim().slice(0, MAX_SUMMARY) : null;
  const criteria = review.criteria.map((c): ReviewCriterionResult => {
    const got = byName(answer.criteria, c.name);
    if (c.kind === 'pass_fail') return { name: c.name, result: got?.result ?? 'unknown', score: null };
    return { name: c.name, result: null, score: scoreOf(got?.score) };
  });
  // fromEntries defines own keys: a name like "__proto__" stays a plain key.
  const extracted: Record<string, string | null> = Object.fromEntries(
    review.extract.map((e) => {
      const value = byName(answer.extracted, e.name)?.value?.trim();
      return [e.name, value ? value.slice(0, MAX_VALUE) : null];
    }),
  );
  return { summary, criteria, extracted };
}
