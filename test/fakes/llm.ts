// A fake OpenAI-compatible Chat Completions server (node:http) standing in for the language model:
// tests script its answers and read what was asked. No test needs a real model.
//
//   const llm = await startFakeLlm();
//   // the app: LLM_BASE_URL=llm.url (ends in /v1), any LLM_MODEL / LLM_API_KEY
//   llm.reply({ text: 'Hola, ¿en qué te ayudo?' });        // a text answer
//   llm.toolCall('handoff', { summary: 'Quiere hablar con una persona' }); // one tool call
//   llm.toolCalls([{ name: 'a', args: {} }, { name: 'b', args: { x: 1 } }], 'optional text');
//   llm.json({ reason: 'billing', score: 80 });            // the content of a response_format answer
//   llm.fail(500);  llm.fail(429, 'slow down');            // an HTTP error with an OpenAI error body
//   llm.hang();                                           // never answers (the client times out)
//   llm.queue.push({ after: 300, answer: { text: 'ok' } });  // answers 300 ms later (a slow model)
//   llm.latencyMs = 100;                                  // every answer 100 ms later (a model's fixed latency)
//   llm.maxInFlight                                       // the most requests answered at once
//   llm.invalidToolCall('lookup', '{not json');            // a tool call whose arguments are not JSON
//   llm.respond((req) => ({ text: `eco: ${req.lastUser}` })); // computed from the request
//   llm.otherwise = (req) => ({ text: 'ok' });            // when the queue is empty (this is the default)
//   await llm.waitFor(2);                                 // at least 2 requests arrived (real time)
//   llm.requests[0].model / .system / .lastUser / .messages / .toolNames / .responseFormat / .body / .headers / .at
//   await llm.close();
//
// Each scripted answer serves one request, in order (the methods chain: llm.fail(500).reply(…)).
// Only POST /v1/chat/completions exists; anything else is a 404.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeLlmRequest {
  /** The whole parsed body. */
  body: any;
  headers: IncomingHttpHeaders;
  model: string;
  /** The messages as sent (OpenAI wire format: role, content, tool_calls, tool_call_id). */
  messages: any[];
  /** The content of the first system message, or null. */
  system: string | null;
  /** The content of the last user message, or null. */
  lastUser: string | null;
  /** Names of the function tools offered (empty without tools). */
  toolNames: string[];
  /** The `response_format` asked for (json() requests), or null. */
  responseFormat: any;
  /** When it arrived (real Date.now()). */
  at: number;
}

/** One scripted answer. */
export type FakeLlmAnswer =
  | { text: string | null; toolCalls?: { name: string; args: unknown; id?: string }[] }
  | { json: unknown }
  | { invalidToolCall: { name: string; arguments: string } }
  | { status: number; message?: string }
  | { hang: true }
  | { raw: unknown }
  /** The answer, `after` ms later (a slow model). */
  | { after: number; answer: FakeLlmAnswer };

export interface FakeLlm {
  /** Base URL for LLM_BASE_URL (http://127.0.0.1:PORT/v1). */
  url: string;
  requests: FakeLlmRequest[];
  /** Answers waiting for the next requests, in order. */
  queue: (FakeLlmAnswer | ((req: FakeLlmRequest) => FakeLlmAnswer))[];
  /** The answer when the queue is empty; default a text `ok`. */
  otherwise: (req: FakeLlmRequest) => FakeLlmAnswer;
  /** Every answer waits this long first (the model's fixed latency in benchmarks); default 0. */
  latencyMs: number;
  /** Requests being answered right now (arrived, not answered yet). */
  inFlight: number;
  /** The most requests that were being answered at once. */
  maxInFlight: number;
  reply(answer: { text: string }): FakeLlm;
  toolCall(name: string, args: unknown, text?: string | null): FakeLlm;
  toolCalls(calls: { name: string; args: unknown; id?: string }[], text?: string | null): FakeLlm;
  json(value: unknown): FakeLlm;
  fail(status: number, message?: string): FakeLlm;
  hang(): FakeLlm;
  invalidToolCall(name: string, rawArguments?: string): FakeLlm;
  respond(fn: (req: FakeLlmRequest) => FakeLlmAnswer): FakeLlm;
  /** Resolves when at least `n` requests arrived; fails after `timeoutMs` (real time) without them. */
  waitFor(n: number, timeoutMs?: number): Promise<FakeLlmRequest[]>;
  close(): Promise<void>;
}

export async function startFakeLlm(): Promise<FakeLlm> {
  const hanging = new Set<ServerResponse>();
  const waiters = new Set<() => void>();
  let calls = 0;

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        send(res, 404, { error: { message: `No route ${req.method} ${req.url}`, type: 'invalid_request_error' } });
        return;
      }
      let body: any;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        send(res, 400, { error: { message: 'Invalid JSON body', type: 'invalid_request_error' } });
        return;
      }
      const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
      const text = (m: any): string | null =>
        m === undefined ? null : typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
      const request: FakeLlmRequest = {
        body,
        headers: req.headers,
        model: body?.model,
        messages,
        system: text(messages.find((m) => m.role === 'system')),
        lastUser: text(messages.findLast((m) => m.role === 'user')),
        toolNames: Array.isArray(body?.tools) ? body.tools.map((t: any) => t?.function?.name) : [],
        responseFormat: body?.response_format ?? null,
        at: Date.now(),
      };
      fake.requests.push(request);
      for (const wake of waiters) wake();
      const next = fake.queue.shift() ?? fake.otherwise;
      const answer = typeof next === 'function' ? next(request) : next;
      fake.inFlight += 1;
      fake.maxInFlight = Math.max(fake.maxInFlight, fake.inFlight);
      res.once('close', () => {
        fake.inFlight -= 1;
      });
      if (fake.latencyMs > 0) setTimeout(() => answerWith(res, request, answer), fake.latencyMs);
      else answerWith(res, request, answer);
    });
  });

  function send(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  function completion(request: FakeLlmRequest, message: Record<string, unknown>, finish: string): unknown {
    calls++;
    return {
      id: `chatcmpl-fake-${calls}`,
      object: 'chat.completion',
      created: 1_700_000_000,
      model: request.model,
      choices: [{ index: 0, message: { role: 'assistant', refusal: null, ...message }, logprobs: null, finish_reason: finish }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    };
  }

  function answerWith(res: ServerResponse, request: FakeLlmRequest, answer: FakeLlmAnswer): void {
    if ('after' in answer) {
      setTimeout(() => answerWith(res, request, answer.answer), answer.after);
      return;
    }
    if ('hang' in answer) {
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return;
    }
    if ('status' in answer) {
      const type = answer.status === 429 ? 'rate_limit_error' : answer.status >= 500 ? 'server_error' : 'invalid_request_error';
      send(res, answer.status, { error: { message: answer.message ?? `Fake error ${answer.status}`, type, code: null } });
      return;
    }
    if ('raw' in answer) {
      send(res, 200, answer.raw);
      return;
    }
    if ('json' in answer) {
      send(res, 200, completion(request, { content: JSON.stringify(answer.json) }, 'stop'));
      return;
    }
    if ('invalidToolCall' in answer) {
      const { name, arguments: args } = answer.invalidToolCall;
      const toolCalls = [{ id: `call_${calls + 1}_0`, type: 'function', function: { name, arguments: args } }];
      send(res, 200, completion(request, { content: null, tool_calls: toolCalls }, 'tool_calls'));
      return;
    }
    const toolCalls = (answer.toolCalls ?? []).map((c, i) => ({
      id: c.id ?? `call_${calls + 1}_${i}`,
      type: 'function',
      function: { name: c.name, arguments: JSON.stringify(c.args) },
    }));
    const message = toolCalls.length > 0 ? { content: answer.text, tool_calls: toolCalls } : { content: answer.text };
    send(res, 200, completion(request, message, toolCalls.length > 0 ? 'tool_calls' : 'stop'));
  }

  const fake: FakeLlm = {
    url: '',
    requests: [],
    queue: [],
    otherwise: () => ({ text: 'ok' }),
    latencyMs: 0,
    inFlight: 0,
    maxInFlight: 0,
    reply(answer) {
      fake.queue.push({ text: answer.text });
      return fake;
    },
    toolCall(name, args, text = null) {
      fake.queue.push({ text, toolCalls: [{ name, args }] });
      return fake;
    },
    toolCalls(list, text = null) {
      fake.queue.push({ text, toolCalls: list });
      return fake;
    },
    json(value) {
      fake.queue.push({ json: value });
      return fake;
    },
    fail(status, message) {
      fake.queue.push({ status, message });
      return fake;
    },
    hang() {
      fake.queue.push({ hang: true });
      return fake;
    },
    invalidToolCall(name, rawArguments = '{"unterminated": ') {
      fake.queue.push({ invalidToolCall: { name, arguments: rawArguments } });
      return fake;
    },
    respond(fn) {
      fake.queue.push(fn);
      return fake;
    },
    waitFor(n, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (fake.requests.length < n) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(fake.requests);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`fake LLM: ${fake.requests.length} of ${n} requests after ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return fake;
}
