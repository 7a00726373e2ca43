// An app talking to the fake language model (test/fakes/llm.ts), as the agent and classification
// tests need it: LLM_BASE_URL at the fake, and the same client with short waits between its three
// tries (the default is 1 s then 4 s).
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { createLlmClient } from '../src/llm/client.js';
import type { LlmClient } from '../src/llm/types.js';
import type { FakeLlm } from './fakes/llm.js';
import { type StartOptions, startTestApp, type TestApp } from './harness.js';

export async function startAppWithModel(llm: FakeLlm, opts: StartOptions = {}): Promise<TestApp> {
  const app = await startTestApp({ ...opts, env: { LLM_BASE_URL: llm.url, LLM_MODEL: 'llama3.1', ...opts.env } });
  app.rt.services.llm = createLlmClient(loadConfig(app.env), pino({ level: 'silent' }) as unknown as FastifyBaseLogger, {
    retryDelaysMs: [1, 1],
    observe: (outcome, seconds) => app.rt.services.metrics.llmRequest(outcome, seconds),
  }) as LlmClient;
  return app;
}
