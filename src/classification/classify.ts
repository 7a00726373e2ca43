// Deciding a case's reason and score from its first inbound messages (spec agents.md
// "Classification and score of cases"): the keyword rules (pure), and the one model call with a
// JSON-schema answer whose ids are checked against the catalogue.
import { z } from 'zod';
import { normalizeText } from '../automations/text.js';
import type { ReasonRow } from '../db/types.js';
import type { LlmClient } from '../llm/types.js';

/** A classification's outcome: the chosen reason (or none) with its confidence, and the scoring answers. */
export interface Verdict {
  reason: { id: string; name: string } | null;
  subreason: { id: string; name: string } | null;
  confidence: number;
  /** One per scoring question of the chosen reason, in the catalogue's order. */
  detail: ScoreLine[];
  via: 'keywords' | 'model';
}

export interface ScoreLine {
  question: string;
  weight: number;
  probability: number;
}

/** How many distinct keywords occur in the normalised text as whole words ("" keywords never). */
export function keywordHits(keywords: string[], said: string): number {
  if (said === '') return 0;
  const padded = ` ${said} `;
  const seen = new Set<string>();
  for (const k of keywords) {
    const n = normalizeText(k);
    if (n !== '' && padded.includes(` ${n} `)) seen.add(n);
  }
  return seen.size;
}

/** confidence = 0.5 + 0.1 × matches, capped at 0.9 (one match → 0.6). */
export const keywordConfidence = (matches: number): number => Math.min(0.9, Math.round((0.5 + 0.1 * matches) * 10) / 10);

/** score = round(100 × Σ wᵢpᵢ / Σ wᵢ); null when there are no questions or every weight is 0. */
export function scoreOf(detail: ScoreLine[]): number | null {
  const total = detail.reduce((a, d) => a + d.weight, 0);
  if (detail.length === 0 || total === 0) return null;
  return Math.round((100 * detail.reduce((a, d) => a + d.weight * d.probability, 0)) / total);
}

/** A question's probability by keywords: 1 when one of its keywords appears, else 0. */
export const keywordAnswers = (reason: ReasonRow, said: string): ScoreLine[] =>
  (reason.scoring?.questions ?? []).map((q) => ({
    question: q.question,
    weight: q.weight,
    probability: keywordHits(q.keywords, said) > 0 ? 1 : 0,
  }));

/**
 * The keyword rules over the messages' texts: the reason whose keywords match most (ties: the
 * older reason of the catalogue), confidence 0.5 + 0.1 × matches capped at 0.9; the sub-reason
 * likewise among its sub-reasons. No match: no reason, confidence 0.
 */
export function classifyByKeywords(catalogue: ReasonRow[], texts: string[]): Verdict {
  const said = normalizeText(texts.join('\n'));
  let best: ReasonRow | null = null;
  let bestHits = 0;
  for (const r of catalogue) {
    const hits = keywordHits(r.keywords, said);
    if (hits > bestHits) {
      best = r;
      bestHits = hits;
    }
  }
  if (!best) return { reason: null, subreason: null, confidence: 0, detail: [], via: 'keywords' };
  let sub: { id: string; name: string } | null = null;
  let subHits = 0;
  for (const s of best.subreasons) {
    const hits = keywordHits(s.keywords, said);
    if (hits > subHits) {
      sub = { id: s.id, name: s.name };
      subHits = hits;
    }
  }
  return {
    reason: { id: best.id, name: best.name },
    subreason: sub,
    confidence: keywordConfidence(bestHits),
    detail: keywordAnswers(best, said),
    via: 'keywords',
  };
}

/** The model's answer (a JSON-schema response). */
export const ModelAnswer = z.object({
  reasonId: z.string().nullable(),
  subreasonId: z.string().nullable(),
  confidence: z.number().min(0).max(1),
  answers: z.array(z.object({ question: z.string(), probability: z.number().min(0).max(1) })),
});
export type ModelAnswer = z.infer<typeof ModelAnswer>;

/** The system prompt: the catalogue with ids, sub-reasons and scoring questions (Spanish). */
export function systemPrompt(catalogue: ReasonRow[]): string {
  const lines = [
    'Sos un clasificador de conversaciones de WhatsApp de un negocio argentino.',
    'Leé los mensajes del cliente y elegí el motivo por el que escribe, de este catálogo (usá los ids tal cual):',
    '',
  ];
  for (const r of catalogue) {
    lines.push(`- Motivo "${r.name}" (id ${r.id})${r.keywords.length ? `; palabras clave: ${r.keywords.join(', ')}` : ''}`);
    for (const s of r.subreasons) {
      lines.push(`  - Submotivo "${s.name}" (id ${s.id})${s.keywords.length ? `; palabras clave: ${s.keywords.join(', ')}` : ''}`);
    }
    for (const q of r.scoring?.questions ?? []) lines.push(`  - Pregunta de puntaje: "${q.question}"`);
  }
  lines.push(
    '',
    'Respondé con JSON: reasonId (el id del motivo, o null si ninguno encaja), subreasonId (el id de un submotivo de ese motivo, o null),',
    'confidence (de 0 a 1: qué tan seguro estás), y answers: para cada pregunta de puntaje del motivo elegido,',
    '{question (el texto de la pregunta tal cual), probability (de 0 a 1: la probabilidad de que la respuesta sea sí)}.',
  );
  return lines.join('\n');
}

/**
 * One model call over the messages; its ids are checked against the catalogue (an unknown
 * reason id is no reason; an unknown sub-reason id, or one of another reason, is no sub-reason)
 * and each scoring question takes the probability the model gave it (0 when it gave none).
 * Throws ModelError when the model fails (the caller falls back to the keyword rules).
 */
export async function classifyByModel(llm: LlmClient, catalogue: ReasonRow[], texts: string[]): Promise<Verdict> {
  const answer = await llm.json({
    name: 'case_classification',
    schema: ModelAnswer,
    messages: [
      { role: 'system', content: systemPrompt(catalogue) },
      { role: 'user', content: texts.map((t, i) => `Mensaje ${i + 1}: ${t}`).join('\n') },
    ],
  });
  const reason = catalogue.find((r) => r.id === answer.reasonId) ?? null;
  if (!reason) return { reason: null, subreason: null, confidence: 0, detail: [], via: 'model' };
  const sub = reason.subreasons.find((s) => s.id === answer.subreasonId) ?? null;
  const given = new Map(answer.answers.map((a) => [a.question.trim(), a.probability]));
  const detail = (reason.scoring?.questions ?? []).map((q) => ({
    question: q.question,
    weight: q.weight,
    probability: given.get(q.question.trim()) ?? 0,
  }));
  return {
    reason: { id: reason.id, name: reason.name },
    subreason: sub ? { id: sub.id, name: sub.name } : null,
    confidence: answer.confidence,
    detail,
    via: 'model',
  };
}
