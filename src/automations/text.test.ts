import { describe, expect, it } from 'vitest';
import {
  type Condition,
  compilePattern,
  conditionOutcome,
  evaluateCondition,
  keywordMatches,
  lookup,
  normalizeText,
  parseNumber,
  renderJson,
  renderText,
  type TextContext,
} from './text.js';

const ctx = (over: Partial<TextContext> = {}): TextContext => ({
  variables: {
    nombre: 'Variable Ana',
    respuesta: '¿Cuál es el PRECIO?',
    monto: '1234,5',
    cantidad: 7,
    activo: true,
    webhook: { a: { b: 'profundo' }, items: [{ sku: 'X1' }, { sku: 'Y2' }] },
    http_var: { status: 200, body: { x: 42, lista: [1, 2] } },
    vacio: '   ',
    nulo: null,
  },
  attributes: { nombre: 'Atributo Ana', ciudad: 'Córdoba' },
  contact: { name: 'Ana Pérez', phone: '5491155555555' },
  ...over,
});

describe('normalizeText (automations.md "Triggers": lower case, accents and punctuation removed, spaces collapsed)', () => {
  it('"¿Precio?" → "precio", "Envío  GRATIS!!" → "envio gratis"', () => {
    expect(normalizeText('¿Precio?')).toBe('precio');
    expect(normalizeText('Envío  GRATIS!!')).toBe('envio gratis');
  });

  it('punctuation becomes a space, tabs and newlines collapse, ñ and ü lose their marks', () => {
    expect(normalizeText('hola,mundo.\n\t¡Año   pingüino!')).toBe('hola mundo ano pinguino');
    expect(normalizeText('  ...  ')).toBe('');
  });
});

describe('keywordMatches ("equals (exact) or contains as whole words (contains) a normalised keyword")', () => {
  it('exact: the whole normalised text equals a normalised keyword', () => {
    const t = { keywords: ['Precio', 'envío'], match: 'exact' as const };
    expect(keywordMatches(t, '¡PRECIO!')).toBe(true);
    expect(keywordMatches(t, 'Envio.')).toBe(true);
    expect(keywordMatches(t, 'cual es el precio')).toBe(false);
    expect(keywordMatches(t, null)).toBe(false);
  });

  it('contains: the keyword as whole words, not inside another word', () => {
    const t = { keywords: ['precio', 'envio gratis'], match: 'contains' as const };
    expect(keywordMatches(t, '¿Cuál es el precio?')).toBe(true);
    expect(keywordMatches(t, 'hay ENVÍO, gratis?')).toBe(true);
    expect(keywordMatches(t, 'los precios')).toBe(false);
    expect(keywordMatches(t, 'envio rapido gratis')).toBe(false);
  });

  it('an empty keyword (or one that normalises to nothing) never matches', () => {
    expect(keywordMatches({ keywords: ['', '??'], match: 'exact' }, '')).toBe(false);
    expect(keywordMatches({ keywords: ['', '??'], match: 'contains' }, 'hola')).toBe(false);
    expect(keywordMatches({ keywords: [], match: 'contains' }, 'hola')).toBe(false);
  });
});

describe('templates (automations.md "Steps": text fields are templates)', () => {
  it('"{{name}} is replaced by the execution variable name, else the contact attribute name"', () => {
    expect(renderText('Hola {{nombre}}', ctx())).toBe('Hola Variable Ana');
    expect(renderText('Vivís en {{ ciudad }}', ctx())).toBe('Vivís en Córdoba');
    const noVar = ctx({ variables: {} });
    expect(renderText('Hola {{nombre}}', noVar)).toBe('Hola Atributo Ana');
    // A variable that is null falls back to the attribute too.
    expect(renderText('{{nulo}}', ctx({ attributes: { nulo: 'attr' } }))).toBe('attr');
  });

  it('"{{contact.name}} and {{contact.phone}} read the contact"', () => {
    expect(renderText('{{contact.name}} ({{ contact.phone }})', ctx())).toBe('Ana Pérez (5491155555555)');
    expect(renderText('[{{contact.name}}]', ctx({ contact: { name: null, phone: null } }))).toBe('[]');
  });

  it('"{{webhook.a.b}} and {{http_var.body.x}} read nested values", array indexes as .0', () => {
    expect(renderText('{{webhook.a.b}}', ctx())).toBe('profundo');
    expect(renderText('{{http_var.body.x}}', ctx())).toBe('42');
    expect(renderText('{{webhook.items.1.sku}}', ctx())).toBe('Y2');
    expect(renderText('{{http_var.status}}', ctx())).toBe('200');
  });

  it('"a missing value is """, and only own keys are read', () => {
    expect(renderText('a{{nada}}b{{webhook.a.zz}}c{{webhook.items.9}}d{{contact.email}}e', ctx())).toBe('abcde');
    expect(renderText('{{webhook.constructor}}{{webhook.a.b.length}}{{}}', ctx())).toBe('');
  });

  it('strings as they are, numbers and booleans as written, objects and lists as JSON', () => {
    expect(renderText('{{cantidad}} {{activo}}', ctx())).toBe('7 true');
    expect(renderText('{{webhook.a}}', ctx())).toBe('{"b":"profundo"}');
    expect(renderText('{{http_var.body.lista}}', ctx())).toBe('[1,2]');
    expect(renderText('sin llaves {nombre} {{ nombre }}', ctx())).toBe('sin llaves {nombre} Variable Ana');
  });

  it('renderJson renders every string inside a JSON value, keys untouched', () => {
    const body = { '{{nombre}}': '{{nombre}}', n: 3, ok: false, nada: null, lista: ['{{contact.phone}}', { x: '{{http_var.body.x}}' }] };
    expect(renderJson(body, ctx())).toEqual({
      '{{nombre}}': 'Variable Ana',
      n: 3,
      ok: false,
      nada: null,
      lista: ['5491155555555', { x: '42' }],
    });
    expect(renderJson('{{cantidad}}', ctx())).toBe('7');
  });

  it('lookup returns the value itself (conditions read it)', () => {
    expect(lookup('webhook.a', ctx())).toEqual({ b: 'profundo' });
    expect(lookup('cantidad', ctx())).toBe(7);
    expect(lookup('nada', ctx())).toBeUndefined();
  });
});

describe('conditions (automations.md "condition": compares text after normalising as for keywords)', () => {
  const is = (cond: Condition, c = ctx()) => evaluateCondition(cond, c);

  it('equals / not_equals compare normalised text; value may be a template; var may be written with braces', () => {
    expect(is({ var: 'respuesta', op: 'equals', value: 'cual es el precio' })).toBe(true);
    expect(is({ var: '{{ respuesta }}', op: 'equals', value: 'CUÁL ES EL PRECIO...' })).toBe(true);
    expect(is({ var: 'respuesta', op: 'equals', value: 'precio' })).toBe(false);
    expect(is({ var: 'respuesta', op: 'not_equals', value: 'precio' })).toBe(true);
    expect(is({ var: 'respuesta', op: 'not_equals', value: '¿cuál es el precio?' })).toBe(false);
    expect(is({ var: 'nombre', op: 'equals', value: '{{nombre}}' })).toBe(true);
    expect(is({ var: 'nada', op: 'equals', value: '' })).toBe(true);
  });

  it('contains is a substring of the whole normalised text; a value that normalises to nothing contains nothing', () => {
    expect(is({ var: 'respuesta', op: 'contains', value: 'PRECIO' })).toBe(true);
    expect(is({ var: 'respuesta', op: 'contains', value: 'es el' })).toBe(true);
    expect(is({ var: 'respuesta', op: 'contains', value: 'envio' })).toBe(false);
    expect(is({ var: 'respuesta', op: 'contains', value: '??' })).toBe(false);
  });

  it('exists: present and not blank', () => {
    expect(is({ var: 'nombre', op: 'exists' })).toBe(true);
    expect(is({ var: 'cantidad', op: 'exists' })).toBe(true);
    expect(is({ var: 'ciudad', op: 'exists' })).toBe(true);
    expect(is({ var: 'vacio', op: 'exists' })).toBe(false);
    expect(is({ var: 'nada', op: 'exists' })).toBe(false);
    expect(is({ var: 'webhook.a.zz', op: 'exists' })).toBe(false);
  });

  it('gt / lt are numeric (a decimal comma is accepted); a side that is not a number is false', () => {
    expect(is({ var: 'monto', op: 'gt', value: '1234' })).toBe(true);
    expect(is({ var: 'monto', op: 'lt', value: '1234.6' })).toBe(true);
    expect(is({ var: 'monto', op: 'gt', value: ' 2000 ' })).toBe(false);
    expect(is({ var: 'cantidad', op: 'gt', value: '6,99' })).toBe(true);
    expect(is({ var: 'http_var.body.x', op: 'lt', value: '100' })).toBe(true);
    expect(is({ var: 'nombre', op: 'gt', value: '1' })).toBe(false);
    expect(is({ var: 'nombre', op: 'lt', value: '1' })).toBe(false);
    expect(is({ var: 'monto', op: 'gt', value: 'mucho' })).toBe(false);
    expect(is({ var: 'nada', op: 'lt', value: '1' })).toBe(false);
    expect(parseNumber('1234,5')).toBe(1234.5);
    expect(parseNumber('-3')).toBe(-3);
    expect(parseNumber('1.234,5')).toBeNull();
    expect(parseNumber('')).toBeNull();
  });

  it('matches: a case-insensitive regex over the normalised text, cut to 1,000 characters', () => {
    expect(is({ var: 'respuesta', op: 'matches', value: '^cual .* PRECIO$' })).toBe(true);
    expect(is({ var: 'respuesta', op: 'matches', value: '\\d+' })).toBe(false);
    expect(is({ var: 'monto', op: 'matches', value: '^\\d+ \\d$' })).toBe(true);
    expect(is({ var: 'respuesta', op: 'matches', value: '(' })).toBe(false);
    const long = ctx({ variables: { t: `${'a'.repeat(1000)}zzz` } });
    expect(is({ var: 't', op: 'matches', value: 'z' }, long)).toBe(false);
    expect(is({ var: 't', op: 'matches', value: '^a{1000}$' }, long)).toBe(true);
  });

  it('matches runs in linear time: (a|a)*b, (a+)+b, (x+x+)+y against 100,000 characters answer at once', () => {
    for (const [pattern, text] of [
      ['(a|a)*b', 'a'.repeat(100_000)],
      ['(a+)+b', 'a'.repeat(100_000)],
      ['(x+x+)+y', 'x'.repeat(100_000)],
    ]) {
      const compiled = compilePattern(pattern);
      if (!compiled.ok) throw new Error(`${pattern} no compila`);
      compiled.re.matcher('a'.repeat(1000)).find(); // warm-up
      const t = performance.now();
      expect(compiled.re.matcher(text).find()).toBe(false);
      // Measured 10–60 ms for 100,000 characters on a shared 2-core machine; a backtracking engine
      // takes minutes for 30.
      expect(performance.now() - t).toBeLessThan(500);
      const start = performance.now();
      expect(is({ var: 't', op: 'matches', value: pattern }, ctx({ variables: { t: text } }))).toBe(false);
      expect(performance.now() - start).toBeLessThan(50); // the condition reads 1,000 characters
    }
  });

  it('matches: ordinary patterns still match as before (case-insensitive, over the normalised text)', () => {
    const said = (t: string) => ctx({ variables: { t } });
    expect(is({ var: 't', op: 'matches', value: '^\\d{4}$' }, said('1234'))).toBe(true);
    expect(is({ var: 't', op: 'matches', value: '^\\d{4}$' }, said('12345'))).toBe(false);
    expect(is({ var: 't', op: 'matches', value: 'pedido\\s*#?\\d+' }, said('Mi PEDIDO #4521 no llegó'))).toBe(true);
    expect(is({ var: 't', op: 'matches', value: 'pedido\\s*#?\\d+' }, said('pedido#77'))).toBe(true);
    expect(is({ var: 't', op: 'matches', value: 'pedido\\s*#?\\d+' }, said('un pedido'))).toBe(false);
    expect(is({ var: 't', op: 'matches', value: 'ENVIO' }, said('¿Cuánto sale el envío?'))).toBe(true);
  });

  it('a matches regex RE2 cannot compile (saved before, e.g. a lookahead) is false, with the why', () => {
    expect(conditionOutcome({ var: 'respuesta', op: 'matches', value: '(?=cual)' }, ctx())).toEqual({ yes: false, problem: 'unsupported' });
    expect(conditionOutcome({ var: 'respuesta', op: 'matches', value: '(' }, ctx())).toEqual({ yes: false, problem: 'invalid' });
    expect(conditionOutcome({ var: 'respuesta', op: 'matches', value: 'precio' }, ctx())).toEqual({ yes: true });
    expect(compilePattern('(a)\\1')).toEqual({ ok: false, problem: 'unsupported' });
    expect(compilePattern('(?<=a)b')).toEqual({ ok: false, problem: 'unsupported' });
  });
});
