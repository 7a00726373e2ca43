// The language-model client against a fake OpenAI-compatible server (test/fakes/llm.ts), without
// the app: docs/agents.md "The language model" (spec agents.md, same section).
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type FakeLlm, startFakeLlm } from '../../test/fakes/llm.js';
import { loadConfig } from '../config.js';
import { createLlmClient, type LlmClientOptions } from './client.js';
import { type LlmClient, ModelError } from './types.js';

let llm: FakeLlm;
let logLines: string[];

beforeEach(async () => {
  llm = await startFakeLlm();
  logLines = [];
});
afterEach(() => llm.close());

function client(env: Record<string, string> = {}, options: LlmClientOptions = { retryDelaysMs: [10, 40] }): LlmClient {
  const config = loadConfig({ LLM_BASE_URL: llm.url, LLM_MODEL: 'llama3.1', ...env });
  const log = pino({ level: 'debug' }, { write: (line: string) => logLines.push(line) }) as unknown as FastifyBaseLogger;
  const c = createLlmClient(config, log, options);
  if (!c) throw new Error('expected a client');
  return c;
}

const tools = [
  {
    name: 'handoff',
    description: 'Pass the conversation to a person',
    parameters: { type: 'object', properties: { summary: { type: 'string' } } },
  },
  { name: 'lookup_order', description: 'Find an order', parameters: { type: 'object', properties: { id: { type: 'string' } } } },
];

describe('the language model client', () => {
  it('"not configured": without LLM_BASE_URL there is no client', () => {
    const config = loadConfig({});
    expect(config.LLM_BASE_URL).toBeUndefined();
    expect(config.LLM_MODEL).toBe('llama3.1');
    expect(config.LLM_TIMEOUT_MS).toBe(30_000);
    expect(createLlmClient(config, pino({ level: 'silent' }) as unknown as FastifyBaseLogger)).toBeNull();
  });

  it('a chat turn answers text, with the model, messages and tools sent', async () => {
    llm.reply({ text: 'Hola, ¿en qué te ayudo?' });
    const c = client();
    expect(c.defaultModel).toBe('llama3.1');
    const result = await c.chat({
      messages: [
        { role: 'system', content: 'Sos un asistente.' },
        { role: 'user', content: 'Hola' },
      ],
      tools,
    });
    expect(result).toEqual({ text: 'Hola, ¿en qué te ayudo?', toolCalls: [] });
    expect(llm.requests).toHaveLength(1);
    const [req] = llm.requests;
    expect(req.model).toBe('llama3.1');
    expect(req.system).toBe('Sos un asistente.');
    expect(req.lastUser).toBe('Hola');
    expect(req.toolNames).toEqual(['handoff', 'lookup_order']);
    expect(req.body.tools[0]).toEqual({ type: 'function', function: tools[0] });
    expect(req.headers.authorization).toBe('Bearer none');
  });

  it('a model named in the call wins over LLM_MODEL; no tools sends no tools field', async () => {
    await client().chat({ model: 'qwen2.5:7b', messages: [{ role: 'user', content: 'Hola' }], tools: [] });
    expect(llm.requests[0].model).toBe('qwen2.5:7b');
    expect('tools' in llm.requests[0].body).toBe(false);
  });

  it('LLM_API_KEY is sent as a bearer token and never logged', async () => {
    const key = 'sk-test-secret-key-123456';
    llm.fail(500).reply({ text: 'ok' });
    await client({ LLM_API_KEY: key }).chat({ messages: [{ role: 'user', content: 'Hola' }], tools: [] });
    expect(llm.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${key}`, `Bearer ${key}`]);
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join('\n')).not.toContain(key);
  });

  it('tool calls come back with their arguments parsed', async () => {
    llm.toolCalls([
      { name: 'lookup_order', args: { id: 'A-17' }, id: 'call_a' },
      { name: 'handoff', args: { summary: 'Quiere hablar con una persona' }, id: 'call_b' },
    ]);
    const result = await client().chat({ messages: [{ role: 'user', content: '¿Dónde está mi pedido?' }], tools });
    expect(result).toEqual({
      text: null,
      toolCalls: [
        { id: 'call_a', name: 'lookup_order', arguments: { id: 'A-17' } },
        { id: 'call_b', name: 'handoff', arguments: { summary: 'Quiere hablar con una persona' } },
      ],
    });
  });

  it('messages map to the wire format: an assistant turn with tool calls and the tool results', async () => {
    await client().chat({
      messages: [
        { role: 'system', content: 'Sos un asistente.' },
        { role: 'user', content: '¿Dónde está mi pedido?' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'call_a', name: 'lookup_order', arguments: { id: 'A-17' } }] },
        { role: 'tool', toolCallId: 'call_a', content: '{"status":"shipped"}' },
        { role: 'assistant', content: 'Ya salió.' },
      ],
      tools,
    });
    expect(llm.requests[0].messages).toEqual([
      { role: 'system', content: 'Sos un asistente.' },
      { role: 'user', content: '¿Dónde está mi pedido?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'lookup_order', arguments: '{"id":"A-17"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"status":"shipped"}' },
      { role: 'assistant', content: 'Ya salió.' },
    ]);
  });

  it('"invalid tool call": arguments that are not JSON are tried twice more, then ModelError', async () => {
    llm.invalidToolCall('lookup_order').invalidToolCall('lookup_order', '[1]').invalidToolCall('lookup_order');
    const err = await client()
      .chat({ messages: [{ role: 'user', content: 'Hola' }], tools })
      .catch((e) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(llm.requests).toHaveLength(3);
  });

  it('an invalid tool call followed by a good one succeeds on the retry', async () => {
    llm.invalidToolCall('lookup_order').toolCall('lookup_order', { id: 'A-1' });
    const result = await client().chat({ messages: [{ role: 'user', content: 'Hola' }], tools });
    expect(result.toolCalls).toEqual([{ id: expect.any(String), name: 'lookup_order', arguments: { id: 'A-1' } }]);
    expect(llm.requests).toHaveLength(2);
  });

  const Classification = z.object({ reason: z.string(), score: z.number().int().min(0).max(100), note: z.string().nullable() });

  it('json() asks for a JSON-schema answer and returns it checked by the zod schema', async () => {
    llm.json({ reason: 'billing', score: 80, note: null });
    const value = await client().json({
      messages: [{ role: 'user', content: 'Me cobraron dos veces' }],
      name: 'classification',
      schema: Classification,
    });
    expect(value).toEqual({ reason: 'billing', score: 80, note: null });
    const format = llm.requests[0].responseFormat;
    expect(format.type).toBe('json_schema');
    expect(format.json_schema.name).toBe('classification');
    expect(format.json_schema.schema.properties.score).toMatchObject({ type: 'integer', minimum: 0, maximum: 100 });
    expect(format.json_schema.schema.required).toEqual(['reason', 'score', 'note']);
  });

  it('json(): an answer that fails the schema is tried twice more, then ModelError', async () => {
    llm.json({ reason: 'billing', score: 300, note: null });
    llm.reply({ text: 'not json at all' });
    llm.json({ reason: 'billing' });
    const err = await client()
      .json({ messages: [{ role: 'user', content: 'x' }], name: 'classification', schema: Classification })
      .catch((e) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(llm.requests).toHaveLength(3);
  });

  it('json(): a bad answer then a good one returns the good one', async () => {
    llm.json({ reason: 'billing', score: -1, note: null }).json({ reason: 'billing', score: 10, note: 'x' });
    const value = await client().json({ messages: [{ role: 'user', content: 'x' }], name: 'classification', schema: Classification });
    expect(value).toEqual({ reason: 'billing', score: 10, note: 'x' });
  });

  it('"a model failure (5xx) is tried twice more": 500, 503 then an answer', async () => {
    llm.fail(500).fail(503).reply({ text: 'por fin' });
    const result = await client().chat({ messages: [{ role: 'user', content: 'Hola' }], tools: [] });
    expect(result.text).toBe('por fin');
    expect(llm.requests).toHaveLength(3);
  });

  it('three 500s in a row: ModelError after three requests', async () => {
    llm.fail(500).fail(500).fail(500).reply({ text: 'too late' });
    const err = await client()
      .chat({ messages: [{ role: 'user', content: 'Hola' }], tools: [] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(err.message).toContain('500');
    expect(llm.requests).toHaveLength(3);
  });

  it('429 is tried again', async () => {
    llm.fail(429).reply({ text: 'ok' });
    expect((await client().chat({ messages: [{ role: 'user', content: 'Hola' }], tools: [] })).text).toBe('ok');
    expect(llm.requests).toHaveLength(2);
  });

  it('"a model failure (timeout) is tried twice more": a hang times out at LLM_TIMEOUT_MS and is retried', async () => {
    llm.hang().hang().reply({ text: 'ok' });
    const started = Date.now();
    const result = await client({ LLM_TIMEOUT_MS: '150' }).chat({ messages: [{ role: 'user', content: 'Hola' }], tools: [] });
    expect(result.text).toBe('ok');
    expect(llm.requests).toHaveLength(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it('three hangs: ModelError', async () => {
    llm.hang().hang().hang();
    const err = await client({ LLM_TIMEOUT_MS: '100' })
      .chat({ messages: [{ role: 'user', content: 'Hola' }], tools: [] })
      .catch((e) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(llm.requests).toHaveLength(3);
  });

  it('"tried twice more (1 s, 4 s)": the waits follow the delays in order', async () => {
    llm.fail(500).fail(500).reply({ text: 'ok' });
    await client({}, { retryDelaysMs: [100, 400] }).chat({ messages: [{ role: 'user', content: 'Hola' }], tools: [] });
    const at = llm.requests.map((r) => r.at);
    expect(llm.requests).toHaveLength(3);
    const first = at[1] - at[0];
    const second = at[2] - at[1];
    expect(first).toBeGreaterThanOrEqual(90);
    expect(first).toBeLessThan(380);
    expect(second).toBeGreaterThanOrEqual(390);
  });

  it('the default delays are 1 s then 4 s', async () => {
    const config = loadConfig({ LLM_BASE_URL: llm.url });
    const c = createLlmClient(config, pino({ level: 'silent' }) as unknown as FastifyBaseLogger)!;
    llm.fail(500).reply({ text: 'ok' });
    const started = Date.now();
    await c.chat({ messages: [{ role: 'user', content: 'Hola' }], tools: [] });
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(990);
    expect(waited).toBeLessThan(3900);
  });

  it('a 400 (or any 4xx but 429) fails at once, not retried', async () => {
    llm.fail(400, 'model does not support tools').reply({ text: 'never' });
    const err = await client()
      .chat({ messages: [{ role: 'user', content: 'Hola' }], tools })
      .catch((e) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(err.message).toContain('400');
    expect(llm.requests).toHaveLength(1);
  });

  it('a 404 (an unknown model) to json() fails at once too', async () => {
    llm.fail(404, 'model not found').json({ reason: 'never', score: 1, note: null });
    const err = await client()
      .json({ messages: [{ role: 'user', content: 'x' }], name: 'classification', schema: Classification })
      .catch((e) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(err.message).toContain('404');
    expect(llm.requests).toHaveLength(1);
  });

  it('a schema the API cannot take (an optional field) is a programming error, thrown before any request', async () => {
    await expect(
      client().json({ messages: [{ role: 'user', content: 'x' }], name: 'x', schema: z.object({ a: z.string().optional() }) }),
    ).rejects.not.toBeInstanceOf(ModelError);
    expect(llm.requests).toHaveLength(0);
  });
});

describe('"every customer gets a hand-off within LLM_TIMEOUT_MS × 3 + 5 s": one budget for a call and its retries', () => {
  const hello = [{ role: 'user' as const, content: 'Hola' }];

  it('the whole budget is LLM_TIMEOUT_MS × 3 + the waits', () => {
    expect(client({ LLM_TIMEOUT_MS: '200' }, { retryDelaysMs: [100, 400] }).budgetMs).toBe(1_100);
  });

  it('a smaller budget given by the caller: the last try gets what is left (three hangs end within it)', async () => {
    llm.hang().hang().hang();
    const started = Date.now();
    const err = await client({ LLM_TIMEOUT_MS: '200' }, { retryDelaysMs: [100, 400] })
      .chat({ messages: hello, tools: [], budgetMs: 1_000 })
      .catch((e) => e);
    const took = Date.now() - started;
    expect(err).toBeInstanceOf(ModelError);
    expect(llm.requests).toHaveLength(3);
    expect(took).toBeLessThan(1_090);
    expect(took).toBeGreaterThanOrEqual(950);
  });

  it('no wait starts past the budget: a first failure with no room for the next try ends the call', async () => {
    llm.fail(500).reply({ text: 'tarde' });
    const err = await client({ LLM_TIMEOUT_MS: '200' }, { retryDelaysMs: [300, 400] })
      .chat({ messages: hello, tools: [], budgetMs: 250 })
      .catch((e) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect(llm.requests).toHaveLength(1);
  });
});
