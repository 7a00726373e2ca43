// The runtime wires the language model from the configuration (docs/agents.md "The language
// model"): a client against LLM_BASE_URL with LLM_MODEL, or none when it is unset.
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from '../fakes/llm.js';
import { startTestApp, type TestApp } from '../harness.js';

let app: TestApp | undefined;
let llm: FakeLlm | undefined;
afterEach(async () => {
  await app?.close();
  await llm?.close();
  app = undefined;
  llm = undefined;
});

describe('the language model in the running service', () => {
  it('"Not configured": without LLM_BASE_URL the services have no model', async () => {
    app = await startTestApp();
    expect(app.rt.services.llm).toBeNull();
  });

  it('with LLM_BASE_URL the services talk to that server with LLM_MODEL and LLM_API_KEY', async () => {
    llm = await startFakeLlm();
    llm.reply({ text: 'Hola' });
    app = await startTestApp({ env: { LLM_BASE_URL: llm.url, LLM_MODEL: 'qwen2.5:7b', LLM_API_KEY: 'sk-e2e-key' } });
    const model = app.rt.services.llm!;
    expect(model.defaultModel).toBe('qwen2.5:7b');
    const result = await model.chat({ messages: [{ role: 'user', content: 'Hola' }], tools: [] });
    expect(result).toEqual({ text: 'Hola', toolCalls: [] });
    expect(llm.requests[0].model).toBe('qwen2.5:7b');
    expect(llm.requests[0].headers.authorization).toBe('Bearer sk-e2e-key');
  });
});
