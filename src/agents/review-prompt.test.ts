// The review's pure parts (docs/agents.md "Review"): the JSON schema strict structured outputs
// accept, the Spanish prompt, and the normalisation of the model's answer into the agent's terms.
import { zodResponseFormat } from 'openai/helpers/zod';
import { describe, expect, it } from 'vitest';
import { normalizeReview, ReviewAnswer, reviewMessages, reviewSystemPrompt } from './review-prompt.js';

const REVIEW = {
  criteria: [
    { name: 'saludo', description: 'Saludó al cliente', kind: 'pass_fail' as const },
    { name: 'amabilidad', description: 'Qué tan amable fue', kind: 'score' as const },
  ],
  extract: [
    { name: 'producto', description: 'Qué quiere comprar' },
    { name: 'email', description: 'Su correo' },
  ],
};
const AGENT = { name: 'Ventas', goal: { description: 'Una intención de compra', fields: [] } };

describe('"one model call with a JSON-schema response reviews it"', () => {
  it('the schema is one strict structured outputs accept: every field required, no dynamic keys', () => {
    const format = zodResponseFormat(ReviewAnswer, 'review');
    expect(format.type).toBe('json_schema');
    expect(format.json_schema.strict).toBe(true);
    const schema = format.json_schema.schema as any;
    expect(schema.required).toEqual(['summary', 'criteria', 'extracted']);
    expect(schema.properties.criteria.items.required).toEqual(['name', 'result', 'score']);
    expect(schema.properties.extracted.items.required).toEqual(['name', 'value']);
  });

  it('the prompt is in Spanish and names each criterion with its kind and description, and each name to extract', () => {
    const p = reviewSystemPrompt(AGENT, REVIEW);
    expect(p).toContain('Sos un revisor de calidad');
    expect(p).toContain('Una intención de compra');
    expect(p).toContain('- "saludo" (de aprobado o no: result "success" si se cumplió');
    expect(p).toContain(': Saludó al cliente');
    expect(p).toContain(
      '- "amabilidad" (de puntaje: score un número entero de 1 (muy mal) a 5 (excelente); result null): Qué tan amable fue',
    );
    expect(p).toContain('- "producto": Qué quiere comprar');
    expect(p).toContain('- "email": Su correo');
  });

  it('the stretch goes as one transcript, the customer as "Cliente" and the business as "Empresa", media by type', () => {
    const m = reviewMessages(AGENT, REVIEW, [
      { direction: 'inbound', type: 'text', text: 'Hola, quiero yerba' },
      { direction: 'outbound', type: 'text', text: '¡Hola! ¿Cuántos kilos?' },
      { direction: 'inbound', type: 'image', text: null },
    ]);
    expect(m.map((x) => x.role)).toEqual(['system', 'user']);
    expect(m[1]?.content).toBe('La conversación:\n\nCliente: Hola, quiero yerba\nEmpresa: ¡Hola! ¿Cuántos kilos?\nCliente: [image]');
  });
});

describe('"result is success/failure/unknown for pass_fail criteria and null for score ones; score is 1–5 for score criteria and null otherwise; data holds every extract name, null when not found"', () => {
  it("criteria follow the agent's order, one per criterion; scores are rounded and clamped; unknown names are dropped", () => {
    const out = normalizeReview(REVIEW, {
      summary: '  Compró yerba.  ',
      criteria: [
        { name: 'amabilidad', result: 'success', score: 7.4 },
        { name: 'inventado', result: 'failure', score: 2 },
        { name: 'Saludo ', result: 'failure', score: 3 },
      ],
      extracted: [
        { name: 'producto', value: ' yerba ' },
        { name: 'telefono', value: '123' },
      ],
    });
    expect(out).toEqual({
      summary: 'Compró yerba.',
      criteria: [
        { name: 'saludo', result: 'failure', score: null },
        { name: 'amabilidad', result: null, score: 5 },
      ],
      extracted: { producto: 'yerba', email: null },
    });
  });

  it('a missing or null pass_fail result is unknown; a missing score is null; a blank summary or value is null', () => {
    const out = normalizeReview(REVIEW, {
      summary: ' ',
      criteria: [
        { name: 'saludo', result: null, score: null },
        { name: 'amabilidad', result: null, score: 0.2 },
      ],
      extracted: [{ name: 'email', value: '' }],
    });
    expect(out.summary).toBeNull();
    expect(out.criteria).toEqual([
      { name: 'saludo', result: 'unknown', score: null },
      { name: 'amabilidad', result: null, score: 1 },
    ]);
    expect(normalizeReview(REVIEW, { summary: null, criteria: [], extracted: [] })).toEqual({
      summary: null,
      criteria: [
        { name: 'saludo', result: 'unknown', score: null },
        { name: 'amabilidad', result: null, score: null },
      ],
      extracted: { producto: null, email: null },
    });
    expect(out.extracted).toEqual({ producto: null, email: null });
  });

  it('an extract named like an object property stays a plain key', () => {
    const out = normalizeReview(
      { criteria: [], extract: [{ name: '__proto__', description: '' }] },
      {
        summary: null,
        criteria: [],
        extracted: [{ name: '__proto__', value: 'x' }],
      },
    );
    expect(Object.keys(out.extracted)).toEqual(['__proto__']);
    expect(JSON.parse(JSON.stringify(out.extracted))).toEqual(JSON.parse('{"__proto__":"x"}'));
  });
});
