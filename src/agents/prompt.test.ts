// The pieces of an agent turn (spec agents.md "A stretch"): the system prompt, the tools and how
// the model's tool calls are read; the handoff phrases. Pure functions, no app.
import { describe, expect, it } from 'vitest';
import type { ToolCall } from '../llm/types.js';
import { agentTools, argentineDate, interpretToolCalls, matchesHandoffPhrase, systemPrompt } from './prompt.js';

const agent = {
  instructions: 'Sos la vendedora de la tienda. No prometas envíos gratis.',
  goal: {
    description: 'Una intención de compra',
    fields: [
      { name: 'producto', description: 'Qué quiere comprar', required: true },
      { name: 'cantidad', description: 'Cuántas unidades', required: true },
      { name: 'direccion', description: 'Dónde entregar', required: false },
    ],
  },
  handoff: { rules: ['Si pide un descuento'], phrases: ['hablar con una persona', 'humano', 'asesor'] },
};

// 2026-11-25 02:00 UTC is still Tuesday the 24th in Buenos Aires (UTC−3).
const ctx = {
  contactName: 'Ana Pérez',
  attributes: { ciudad: 'Rosario', plan: 'oro' },
  gathered: { producto: 'yerba' },
  now: new Date('2026-11-25T02:00:00Z'),
};

let n = 0;
const call = (name: string, args: Record<string, unknown>): ToolCall => ({ id: `c${++n}`, name, arguments: args });

describe('"system prompt (instructions, goal, fields gathered so far, handoff rules, the contact\'s name and attributes, today\'s date in Argentina)"', () => {
  const prompt = systemPrompt(agent, ctx);

  it('holds the instructions, the goal and each field with whether it was gathered', () => {
    expect(prompt).toContain('Sos la vendedora de la tienda. No prometas envíos gratis.');
    expect(prompt).toContain('Una intención de compra');
    expect(prompt).toMatch(/- producto \(obligatorio\): Qué quiere comprar — ya obtenido: "yerba"/);
    expect(prompt).toMatch(/- cantidad \(obligatorio\): Cuántas unidades — falta/);
    expect(prompt).toMatch(/- direccion \(opcional\): Dónde entregar — falta/);
  });

  it('holds the handoff rules, the contact and the tools to use', () => {
    expect(prompt).toContain('- Si pide un descuento');
    expect(prompt).toContain('Nombre: Ana Pérez');
    expect(prompt).toContain('- ciudad: Rosario');
    expect(prompt).toContain('- plan: oro');
    expect(prompt).toContain('reply({text})');
    expect(prompt).toContain('goal_reached({data, summary})');
    expect(prompt).toContain('hand_off({reason, summary})');
  });

  it("today's date in Argentina, in Spanish", () => {
    expect(prompt).toContain('Hoy es martes 24 de noviembre de 2026');
    expect(argentineDate(new Date('2026-11-25T15:00:00Z'))).toBe('miércoles 25 de noviembre de 2026');
  });

  it('an agent without a goal, a contact without a name: said so, and no goal_reached', () => {
    const p = systemPrompt({ ...agent, goal: null, handoff: { rules: [], phrases: [] } }, { ...ctx, contactName: null, attributes: {} });
    expect(p).toContain('no tiene un objetivo');
    expect(p).toContain('Nombre: (no lo sabemos)');
    expect(p).not.toContain('goal_reached');
  });
});

describe('"tools: reply({text}), goal_reached({data, summary}), hand_off({reason, summary})"', () => {
  it("the three tools; goal_reached.data lists exactly the goal's fields, as strings", () => {
    const tools = agentTools(agent);
    expect(tools.map((t) => t.name)).toEqual(['reply', 'goal_reached', 'hand_off']);
    expect(tools[0].parameters).toMatchObject({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
    const data = (tools[1].parameters as any).properties.data;
    expect(Object.keys(data.properties)).toEqual(['producto', 'cantidad', 'direccion']);
    for (const p of Object.values(data.properties)) expect(p).toMatchObject({ type: 'string' });
    expect(data.required).toEqual(['producto', 'cantidad']);
    expect((tools[1].parameters as any).required).toEqual(['data', 'summary']);
    expect(tools[2].parameters).toMatchObject({ properties: { reason: { type: 'string' }, summary: { type: 'string' } } });
  });

  it('an agent without a goal is offered reply and hand_off only', () => {
    expect(agentTools({ ...agent, goal: null }).map((t) => t.name)).toEqual(['reply', 'hand_off']);
  });
});

describe('"Replies are sent in order"; "`data` keeps only the goal\'s field names"', () => {
  it('replies in order, blank ones dropped (and listed as ignored)', () => {
    const blank = call('reply', { text: '   ' });
    const out = interpretToolCalls(agent, [call('reply', { text: 'Hola' }), blank, call('reply', { text: ' ¿Qué buscás? ' })]);
    expect(out.replies).toEqual(['Hola', '¿Qué buscás?']);
    expect(out.ignored).toEqual([blank]);
    expect(out.goal).toBeNull();
    expect(out.handoff).toBeNull();
  });

  it('texts the database cannot store are cleaned: NUL dropped, a lone surrogate as U+FFFD', () => {
    const out = interpretToolCalls(agent, [
      call('reply', { text: 'Ho\u0000la \ud800' }),
      call('goal_reached', { data: { producto: 'ye\u0000rba' }, summary: 'a\u0000b' }),
    ]);
    expect(out.replies).toEqual(['Hola \ufffd']);
    expect(out.goal).toEqual({ data: { producto: 'yerba' }, summary: 'ab' });
  });

  it('goal data keeps only the goal field names with string values', () => {
    const out = interpretToolCalls(agent, [
      call('reply', { text: 'Listo, te lo anoto.' }),
      call('goal_reached', {
        data: { producto: 'yerba', cantidad: 3, direccion: ' Mitre 123 ', color: 'rojo', constructor: 'x' },
        summary: 'Quiere yerba',
      }),
    ]);
    expect(out.replies).toEqual(['Listo, te lo anoto.']);
    expect(out.goal).toEqual({ data: { producto: 'yerba', direccion: 'Mitre 123' }, summary: 'Quiere yerba' });
  });

  it('unknown tools are ignored and listed; the first of goal/handoff wins', () => {
    const unknown = call('lookup_order', { id: 'A-1' });
    const later = call('goal_reached', { data: { producto: 'yerba' }, summary: 's' });
    const out = interpretToolCalls(agent, [unknown, call('hand_off', { reason: 'Pide descuento', summary: 'Quiere 20%' }), later]);
    expect(out.handoff).toEqual({ reason: 'Pide descuento', summary: 'Quiere 20%' });
    expect(out.goal).toBeNull();
    expect(out.ignored).toEqual([unknown, later]);
  });

  it('goal_reached from an agent without a goal is ignored', () => {
    const g = call('goal_reached', { data: {}, summary: 's' });
    expect(interpretToolCalls({ ...agent, goal: null }, [g])).toEqual({ replies: [], goal: null, handoff: null, ignored: [g] });
  });
});

describe('"`phrases` match without asking the model"', () => {
  it('normalised, whole words', () => {
    expect(matchesHandoffPhrase(agent, '¡Quiero HABLAR con una PERSONA!')).toBe(true);
    expect(matchesHandoffPhrase(agent, 'pasame con un Asesor, por favor')).toBe(true);
    expect(matchesHandoffPhrase(agent, 'Sos humano?')).toBe(true);
    expect(matchesHandoffPhrase(agent, 'inhumano el precio')).toBe(false);
    expect(matchesHandoffPhrase(agent, 'Quiero yerba')).toBe(false);
  });
});
