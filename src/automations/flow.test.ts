// biome-ignore-all lint/suspicious/noThenProperty: condition steps have a `then` field (automations.md), a step id, never a function
import { beforeAll, describe, expect, it } from 'vitest';
import { textFor } from '../http/messages.es-AR.js';
import { installSpanishZodMessages } from '../http/zod-es.js';
import { type FlowLookups, followingOf, nextOf, STEP_TYPES, type Step, validateFlow } from './flow.js';

beforeAll(() => installSpanishZodMessages());

const TEMPLATE = '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3e';
const STAGE = '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d3f';
const AGENT = '0196b2a4-5e1f-7c3a-9d2e-4b8f0a1c2d40';
const OTHER = '11111111-1111-1111-1111-111111111111';

/** Lookups of an account that owns TEMPLATE, STAGE and AGENT. */
const lookups = (over: Partial<FlowLookups> = {}): FlowLookups => ({
  templateOfAccount: async (id) => id === TEMPLATE,
  stageOfAccount: async (id) => id === STAGE,
  agentOfAccount: async (id) => id === AGENT,
  ...over,
});

const keyword = { type: 'keyword', keywords: ['precio'] };
/** ALLOW_PRIVATE_WEBHOOKS on (the tests' default): private URLs are not this file's concern. */
const GUARD_OFF = { refusePrivateUrls: false };

const problemsOf = async (steps: unknown, trigger: unknown = keyword, l = lookups(), options = GUARD_OFF) => {
  const r = await validateFlow({ trigger, steps }, l, options);
  if (r.ok) throw new Error('expected problems');
  return r.problems;
};

describe('a valid flow (automations.md "Steps")', () => {
  it('every step type is accepted, with the defaults filled in', async () => {
    const steps = [
      { id: 'hola', type: 'send', text: 'Hola {{contact.name}}' },
      { id: 'plantilla', type: 'send', template: { id: TEMPLATE, variables: { '1': '{{nombre}}' } } },
      { id: 'pregunta', type: 'ask', text: '¿Qué buscás?', save: 'interes', options: ['Precio', 'Envío'] },
      { id: 'cond', type: 'condition', if: { var: 'interes', op: 'equals', value: 'precio' }, then: 'consulta', else: 'atributo' },
      {
        id: 'consulta',
        type: 'http',
        method: 'POST',
        url: 'https://example.com/precios',
        headers: { 'X-Clave': '{{webhook.key}}' },
        body: { sku: '{{interes}}', n: 1 },
        save: 'precio',
        onError: 'equipo',
      },
      { id: 'atributo', type: 'set_attribute', attribute: 'interes', value: '{{interes}}' },
      { id: 'espera', type: 'wait', minutes: 60 },
      { id: 'etapa', type: 'stage', stageId: STAGE },
      { id: 'existe', type: 'condition', if: { var: 'precio.body.x', op: 'exists' }, then: 'fin', else: 'ia' },
      { id: 'ia', type: 'agent', agentId: AGENT },
      { id: 'equipo', type: 'handoff', note: 'Pidió hablar con alguien' },
      { id: 'fin', type: 'end' },
    ];
    const r = await validateFlow({ trigger: keyword, steps }, lookups(), GUARD_OFF);
    expect(r).toMatchObject({ ok: true, trigger: { type: 'keyword', keywords: ['precio'], match: 'exact' } });
    if (!r.ok) return;
    expect(new Set(r.steps.map((s) => s.type))).toEqual(new Set(STEP_TYPES));
    expect(r.steps[2]).toMatchObject({ type: 'ask', timeoutMinutes: 1440 });
    expect(r.steps[4]).toMatchObject({ type: 'http', timeoutMs: 10_000 });
  });

  it('every trigger type is accepted', async () => {
    for (const trigger of [
      { type: 'keyword', keywords: ['envío gratis'], match: 'contains' },
      { type: 'first_message' },
      { type: 'api' },
      { type: 'webhook' },
      { type: 'comment' },
      { type: 'comment', keywords: ['info'] },
    ]) {
      const r = await validateFlow({ trigger, steps: [{ id: 'a', type: 'end' }] }, lookups(), GUARD_OFF);
      expect(r.ok, JSON.stringify(trigger)).toBe(true);
    }
  });

  it('"a cycle without an ask or wait" is refused, so a loop through an ask is accepted (and one through a wait)', async () => {
    const steps = [
      { id: 'menu', type: 'ask', text: 'Elegí 1 o 2', save: 'opcion' },
      { id: 'cond', type: 'condition', if: { var: 'opcion', op: 'matches', value: '^[12]$' }, then: 'ok', else: 'menu' },
      { id: 'ok', type: 'send', text: 'Listo', next: 'espera' },
      { id: 'espera', type: 'wait', minutes: 1440, next: 'ok' },
    ];
    expect((await validateFlow({ trigger: { type: 'api' }, steps }, lookups(), GUARD_OFF)).ok).toBe(true);
  });
});

describe('validateFlow problems (automations.md: "A flow is validated when saved … 400 with the list of problems")', () => {
  it('the trigger: unknown type, missing type, bad keywords and unknown fields, with their paths', async () => {
    const end = [{ id: 'a', type: 'end' }];
    expect(await problemsOf(end, { type: 'cron' })).toEqual([
      { path: ['trigger', 'type'], message: textFor('flow_trigger_type', { types: 'keyword, first_message, api, webhook, comment' }) },
    ]);
    expect((await problemsOf(end, {}))[0].path).toEqual(['trigger', 'type']);
    expect((await problemsOf(end, 'keyword'))[0]).toEqual({ path: ['trigger'], message: 'Tiene que ser un objeto.' });
    expect(await problemsOf(end, { type: 'keyword', keywords: [], match: 'fuzzy', extra: 1 })).toEqual([
      { path: ['trigger', 'keywords'], message: 'Tiene que tener al menos 1 elementos.' },
      { path: ['trigger', 'match'], message: 'Tiene que ser uno de: exact, contains.' },
      { path: ['trigger', 'extra'], message: textFor('unknown_field') },
    ]);
    expect(await problemsOf(end, { type: 'comment', keywords: ['ok', '¿?'] })).toEqual([
      { path: ['trigger', 'keywords', 1], message: textFor('flow_keyword_blank') },
    ]);
  });

  it('steps must be a list of 1–200 (entries of a longer list are not checked one by one)', async () => {
    expect(await problemsOf([])).toEqual([{ path: ['steps'], message: 'Tiene que tener al menos 1 elementos.' }]);
    expect(await problemsOf({})).toEqual([{ path: ['steps'], message: 'Tiene que ser una lista.' }]);
    const many = Array.from({ length: 201 }, (_, i) => ({ id: `s${i}`, type: 'nope' }));
    expect(await problemsOf(many)).toEqual([{ path: ['steps'], message: 'Tiene que tener como máximo 200 elementos.' }]);
  });

  it('"unknown step types or fields": the type lists the valid ones, each unknown field is a problem at its path', async () => {
    const problems = await problemsOf([
      { id: 'a', type: 'email', to: 'x' },
      { id: 'b', type: 'end', color: 'rojo', size: 2 },
      { id: 'c' },
      'end',
    ]);
    expect(problems).toEqual([
      { path: ['steps', 0, 'type'], message: textFor('flow_step_type', { types: STEP_TYPES.join(', ') }) },
      { path: ['steps', 1, 'color'], message: textFor('unknown_field') },
      { path: ['steps', 1, 'size'], message: textFor('unknown_field') },
      { path: ['steps', 2, 'type'], message: textFor('flow_type_missing', { types: STEP_TYPES.join(', ') }) },
      { path: ['steps', 3], message: 'Tiene que ser un objeto.' },
    ]);
    expect(problems[0].message).toContain('send, ask, condition, http, set_attribute, wait, stage, agent, handoff, end');
  });

  it('field rules of each step type, in Spanish, at their paths', async () => {
    const problems = await problemsOf([
      { id: '', type: 'send' },
      { id: 's2', type: 'send', text: 'hola', template: { id: TEMPLATE } },
      { id: 'a', type: 'ask', text: '   ', save: '1nombre', options: [], timeoutMinutes: 10_081 },
      { id: 'c', type: 'condition', if: { var: 'x', op: 'like' } },
      { id: 'c2', type: 'condition', if: { var: 'x', op: 'gt' } },
      { id: 'h', type: 'http', method: 'HEAD', url: 'ftp://x', headers: { 'Mal nombre': 'x' }, timeoutMs: 20_000, save: 'a-b' },
      { id: 'at', type: 'set_attribute', attribute: 'mi atributo', value: 'x'.repeat(1001) },
      { id: 'w', type: 'wait', minutes: 1.5 },
      { id: 'st', type: 'stage', stageId: 'etapa' },
      { id: 'x'.repeat(65), type: 'handoff', note: 'n'.repeat(2001) },
    ]);
    expect(problems).toEqual([
      { path: ['steps', 0, 'id'], message: 'Tiene que tener al menos 1 caracteres.' },
      { path: ['steps', 0, 'text'], message: textFor('flow_send_text_or_template') },
      { path: ['steps', 1, 'template'], message: textFor('flow_send_text_or_template') },
      { path: ['steps', 2, 'text'], message: textFor('text_blank') },
      { path: ['steps', 2, 'save'], message: textFor('flow_variable_name') },
      { path: ['steps', 2, 'options'], message: 'Tiene que tener al menos 1 elementos.' },
      { path: ['steps', 2, 'timeoutMinutes'], message: 'Tiene que ser menor o igual a 10080.' },
      { path: ['steps', 3, 'if', 'op'], message: 'Tiene que ser uno de: equals, not_equals, contains, exists, gt, lt, matches.' },
      { path: ['steps', 4, 'if', 'value'], message: textFor('flow_condition_value') },
      { path: ['steps', 5, 'method'], message: 'Tiene que ser uno de: GET, POST, PUT, PATCH, DELETE.' },
      { path: ['steps', 5, 'url'], message: textFor('flow_http_url') },
      { path: ['steps', 5, 'headers', 'Mal nombre'], message: textFor('flow_http_header_name') },
      { path: ['steps', 5, 'save'], message: textFor('flow_variable_name') },
      { path: ['steps', 5, 'timeoutMs'], message: 'Tiene que ser menor o igual a 15000.' },
      { path: ['steps', 6, 'attribute'], message: textFor('attribute_key_invalid') },
      { path: ['steps', 6, 'value'], message: 'Tiene que tener como máximo 1000 caracteres.' },
      { path: ['steps', 7, 'minutes'], message: 'Tiene que ser un número entero.' },
      { path: ['steps', 8, 'stageId'], message: 'Tiene que ser un UUID.' },
      { path: ['steps', 9, 'id'], message: 'Tiene que tener como máximo 64 caracteres.' },
      { path: ['steps', 9, 'note'], message: 'Tiene que tener como máximo 2000 caracteres.' },
    ]);
  });

  it('an http url may start with a {{template}}; headers are at most 30', async () => {
    const headers = Object.fromEntries(Array.from({ length: 31 }, (_, i) => [`X-H${i}`, 'v']));
    expect(
      await problemsOf([
        { id: 'h1', type: 'http', method: 'GET', url: '{{{webhook.callback}}}' },
        { id: 'h2', type: 'http', method: 'GET', url: 'HTTP://example.com', headers },
      ]),
    ).toEqual([{ path: ['steps', 1, 'headers'], message: textFor('flow_http_headers_many', { max: 30 }) }]);
  });

  it('"duplicate ids" and "a next/then/else/onError/timeoutNext naming no step"', async () => {
    const problems = await problemsOf([
      { id: 'a', type: 'send', text: 'hola', next: 'zeta' },
      { id: 'a', type: 'ask', text: '¿?', save: 'r', timeoutNext: 'nadie' },
      { id: 'c', type: 'condition', if: { var: 'r', op: 'exists' }, then: 'uno', else: 'dos' },
      { id: 'h', type: 'http', method: 'GET', url: 'https://x.test', onError: 'falla' },
      { id: 'fin', type: 'end', next: '  ' },
    ]);
    expect(problems).toEqual([
      { path: ['steps', 4, 'next'], message: textFor('flow_step_id_blank') },
      { path: ['steps', 1, 'id'], message: textFor('flow_step_id_duplicate', { id: 'a' }) },
      { path: ['steps', 0, 'next'], message: textFor('flow_step_unknown', { id: 'zeta' }) },
      { path: ['steps', 1, 'timeoutNext'], message: textFor('flow_step_unknown', { id: 'nadie' }) },
      { path: ['steps', 2, 'then'], message: textFor('flow_step_unknown', { id: 'uno' }) },
      { path: ['steps', 2, 'else'], message: textFor('flow_step_unknown', { id: 'dos' }) },
      { path: ['steps', 3, 'onError'], message: textFor('flow_step_unknown', { id: 'falla' }) },
    ]);
  });

  it('"a template or stage or agent of another account" (each id asked once)', async () => {
    const asked: string[] = [];
    const problems = await problemsOf(
      [
        { id: 't', type: 'send', template: { id: OTHER } },
        { id: 't2', type: 'send', template: { id: OTHER } },
        { id: 's', type: 'stage', stageId: OTHER },
        { id: 'g', type: 'agent', agentId: OTHER },
      ],
      keyword,
      lookups({
        templateOfAccount: async (id) => {
          asked.push(id);
          return false;
        },
      }),
    );
    expect(problems).toEqual([
      { path: ['steps', 0, 'template', 'id'], message: textFor('flow_template_not_found') },
      { path: ['steps', 1, 'template', 'id'], message: textFor('flow_template_not_found') },
      { path: ['steps', 2, 'stageId'], message: textFor('flow_stage_not_found') },
      { path: ['steps', 3, 'agentId'], message: textFor('agent_ref_not_found') },
    ]);
    expect(asked).toEqual([OTHER]);
  });

  it('a matches regex longer than 100 characters, or that does not compile', async () => {
    const cond = (value: string, id = `c${value.length}`) => ({ id, type: 'condition', if: { var: 'r', op: 'matches', value } });
    const problems = await problemsOf([cond('a'.repeat(101)), cond('(abc'), cond('^\\d{4}$')]);
    expect(problems).toEqual([
      { path: ['steps', 0, 'if', 'value'], message: textFor('flow_regex_too_long', { max: 100 }) },
      { path: ['steps', 1, 'if', 'value'], message: textFor('flow_regex_invalid') },
    ]);
  });

  it('a matches regex RE2 cannot express (lookahead, lookbehind, backreference, huge repeats) is refused in Spanish', async () => {
    const unsupported = ['(?=a)', '(?!a)b', '(?<=a)b', '(?<!a)b', '(a)\\1', '(a{100}){100}'];
    const problems = await problemsOf(
      unsupported.map((value, i) => ({ id: `c${i}`, type: 'condition', if: { var: 'r', op: 'matches', value } })),
    );
    expect(problems).toEqual(
      unsupported.map((_, i) => ({ path: ['steps', i, 'if', 'value'], message: textFor('flow_regex_unsupported') })),
    );
    expect(textFor('flow_regex_unsupported')).toMatch(/^La expresión regular usa algo que no aceptamos.*Reescribila/);
  });

  it('nested repetitions are not refused: RE2 matches them in linear time', async () => {
    const cond = (value: string, id: string) => ({ id, type: 'condition', if: { var: 'r', op: 'matches', value } });
    const steps = [cond('(a|a)*b', 'a'), cond('(a+)+b', 'b'), cond('(x+x+)+y', 'c')];
    expect((await validateFlow({ trigger: keyword, steps }, lookups(), GUARD_OFF)).ok).toBe(true);
  });

  it('"a cycle without an ask or wait in it": each one named by its step ids, self-loops included', async () => {
    const problems = await problemsOf([
      { id: 'inicio', type: 'send', text: 'hola' },
      { id: 'loop1', type: 'set_attribute', attribute: 'a', value: '1' },
      { id: 'loop2', type: 'http', method: 'GET', url: 'https://x.test', onError: 'loop1', next: 'fin' },
      { id: 'solo', type: 'condition', if: { var: 'a', op: 'exists' }, then: 'solo', else: 'fin' },
      { id: 'fin', type: 'end' },
    ]);
    expect(problems).toEqual([
      { path: ['steps', 1], message: textFor('flow_cycle', { ids: '"loop1", "loop2"', count: 2 }) },
      { path: ['steps', 3], message: textFor('flow_cycle', { ids: '"solo"', count: 1 }) },
    ]);
    expect(problems[0].message).toContain('Los pasos "loop1", "loop2" forman un ciclo sin ask ni wait');
  });

  it('a loop that skips the ask of a bigger loop is still a cycle without an ask', async () => {
    const problems = await problemsOf([
      { id: 'a', type: 'send', text: 'hola' },
      { id: 'b', type: 'condition', if: { var: 'r', op: 'exists' }, then: 'a', else: 'c' },
      { id: 'c', type: 'ask', text: '¿?', save: 'r', next: 'a' },
    ]);
    expect(problems).toEqual([{ path: ['steps', 0], message: textFor('flow_cycle', { ids: '"a", "b"', count: 2 }) }]);
  });

  it('end, handoff and agent stop the flow: no cycle through them', async () => {
    const r = await validateFlow(
      {
        trigger: keyword,
        steps: [
          { id: 'a', type: 'send', text: 'hola' },
          { id: 'b', type: 'handoff', next: 'a' },
          { id: 'c', type: 'end', next: 'c' },
        ],
      },
      lookups(),
      GUARD_OFF,
    );
    expect(r.ok).toBe(true);
  });

  it('all problems are reported together: trigger, fields, ids, references, lookups and cycles in one answer', async () => {
    const problems = await problemsOf(
      [
        { id: 'a', type: 'send', template: { id: OTHER }, next: 'b' },
        { id: 'b', type: 'wait', minutes: 0, next: 'a' },
        { id: 'b', type: 'set_attribute', attribute: 'x', value: 'y', next: 'loop' },
        { id: 'loop', type: 'send', text: 'de nuevo', next: 'loop' },
        { id: 'c', type: 'condition', if: { var: 'x', op: 'matches', value: '(x)\\1' }, then: 'nada' },
        { id: 'g', type: 'agent', agentId: AGENT },
        { id: 'z', type: 'magia' },
      ],
      { type: 'keyword', keywords: ['ok'], match: 'casi' },
      lookups({ agentOfAccount: async () => false }),
    );
    expect(problems.map((p) => p.path.join('.'))).toEqual([
      'trigger.match',
      'steps.1.minutes',
      'steps.4.if.value',
      'steps.6.type',
      'steps.2.id',
      'steps.4.then',
      'steps.0.template.id',
      'steps.5.agentId',
      'steps.3',
    ]);
  });
});

describe('the private-address guard at save (issue 25 item 5: "a flow saved with a literal private URL is refused at save")', () => {
  const http = (url: string) => [{ id: 'h', type: 'http', method: 'GET', url }];
  const GUARD_ON = { refusePrivateUrls: true };

  it('a literal loopback, private or link-local host is a problem at steps.N.url; the guard off lets it be', async () => {
    for (const url of [
      'http://127.0.0.1/',
      'http://[::1]:8080/x',
      'http://10.0.0.5/{{pedido}}',
      'http://169.254.169.254/',
      'http://0177.0.0.1/',
    ]) {
      expect(await problemsOf(http(url), keyword, lookups(), GUARD_ON), url).toEqual([
        { path: ['steps', 0, 'url'], message: textFor('flow_http_url_private') },
      ]);
      expect((await validateFlow({ trigger: keyword, steps: http(url) }, lookups(), GUARD_OFF)).ok, url).toBe(true);
    }
  });

  it('a public literal, a host name and a URL that starts with {{{var}}} are saved (names and variables are checked when the step runs)', async () => {
    for (const url of ['https://93.184.216.34/x', 'https://api.tienda.com.ar/pedidos', '{{{base}}}/api', 'http://{{host}}/x']) {
      expect((await validateFlow({ trigger: keyword, steps: http(url) }, lookups(), GUARD_ON)).ok, url).toBe(true);
    }
  });
});

describe('walking a flow (the runner): "each step\'s next or the following one"', () => {
  const steps = [
    { id: 'a', type: 'send', text: 'x' },
    { id: 'b', type: 'send', text: 'y', next: 'd' },
    { id: 'c', type: 'end' },
    { id: 'd', type: 'wait', minutes: 1 },
  ] as Step[];

  it('followingOf: the explicit next, else the following step, else null (the flow ends completed)', () => {
    expect(followingOf(steps, 0)).toBe('b');
    expect(followingOf(steps, 1)).toBe('d');
    expect(followingOf(steps, 3)).toBeNull();
  });

  it('nextOf finds the step by its id', () => {
    expect(nextOf(steps[0], steps)).toBe('b');
    expect(nextOf(steps[1], steps)).toBe('d');
    expect(nextOf(steps[3], steps)).toBeNull();
  });
});
