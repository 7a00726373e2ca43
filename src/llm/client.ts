// The language model (docs/agents.md "The language model"): the `openai` client against any
// OpenAI-compatible Chat Completions server (Ollama, vLLM, hosted), with our own retry policy.
// The client's own retries are off (maxRetries 0): a failure — timeout, network, 5xx, 429, an
// invalid tool-call arguments text, an answer that fails the schema — is tried twice more after
// 1 s and 4 s, then ModelError; any other 4xx (a wrong model name, a refused key) fails at once.
//
// json() builds its response format with the client's `zodResponseFormat` (zod 4 supported): the
// schema's root must be an object and every field required — write `.nullable()`, not
// `.optional()` (strict structured outputs refuse optional fields; that is a programming error,
// thrown at once, not a ModelError).
import type { FastifyBaseLogger } from 'fastify';
import OpenAI, { APIError, APIUserAbortError } from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { z } from 'zod';
import type { Config } from '../config.js';
import { type ChatMessage, type ChatResult, type LlmClient, ModelError, type ToolCall, type ToolSpec } from './types.js';

export interface LlmClientOptions {
  /** Waits before the second and third tries (real ms); tests pass small ones. */
  retryDelaysMs?: readonly number[];
  /** Each request's duration and outcome (chasqui_llm_request_duration_seconds). */
  observe?: (outcome: 'ok' | 'error', seconds: number) => void;
}

type LlmConfig = Pick<Config, 'LLM_BASE_URL' | 'LLM_API_KEY' | 'LLM_MODEL' | 'LLM_TIMEOUT_MS'>;

/** The model client, or null when LLM_BASE_URL is unset (no agents; classification by keywords). */
export function createLlmClient(config: LlmConfig, log: FastifyBaseLogger, options: LlmClientOptions = {}): LlmClient | null {
  if (!config.LLM_BASE_URL) return null;
  return new OpenAiLlmClient(config as LlmConfig & { LLM_BASE_URL: string }, log, options.retryDelaysMs ?? [1000, 4000], options.observe);
}

/** The model answered, but not in a usable way (no choice, invalid tool-call JSON, a refusal). */
class InvalidAnswer extends Error {}

class OpenAiLlmClient implements LlmClient {
  readonly defaultModel: string;
  private readonly openai: OpenAI;
  private readonly timeoutMs: number;
  /** A call with its retries ends (answer or ModelError) within this: LLM_TIMEOUT_MS × 3 + the waits. */
  readonly budgetMs: number;

  constructor(
    config: LlmConfig & { LLM_BASE_URL: string },
    private readonly log: FastifyBaseLogger,
    private readonly retryDelaysMs: readonly number[],
    private readonly observe: NonNullable<LlmClientOptions['observe']> = () => {},
  ) {
    this.defaultModel = config.LLM_MODEL;
    this.timeoutMs = config.LLM_TIMEOUT_MS;
    this.budgetMs = config.LLM_TIMEOUT_MS * (retryDelaysMs.length + 1) + retryDelaysMs.reduce((a, b) => a + b, 0);
    this.openai = new OpenAI({
      baseURL: config.LLM_BASE_URL,
      apiKey: config.LLM_API_KEY ?? 'none',
      timeout: config.LLM_TIMEOUT_MS,
      maxRetries: 0,
      // Only what we configure: no OPENAI_ORG_ID / OPENAI_PROJECT_ID headers from the environment,
      // and no log lines of the client's own (ours say what failed, without bodies or the key).
      organization: null,
      project: null,
      logLevel: 'off',
    });
  }

  async chat(input: { model?: string | null; messages: ChatMessage[]; tools: ToolSpec[]; budgetMs?: number }): Promise<ChatResult> {
    const model = input.model || this.defaultModel;
    const messages = input.messages.map(toWire);
    const tools = input.tools.map(toolToWire);
    return this.withRetries('chat', model, input.budgetMs, async (timeout) => {
      const completion = await this.openai.chat.completions.create(
        {
          model,
          messages,
          // An empty list is refused by some servers: no tools, no field.
          ...(tools.length > 0 ? { tools } : {}),
        },
        { timeout },
      );
      const message = completion.choices?.[0]?.message;
      if (!message) throw new InvalidAnswer('the answer has no choice');
      const toolCalls: ToolCall[] = [];
      for (const call of message.tool_calls ?? []) {
        if (call.type !== 'function') throw new InvalidAnswer(`a tool call of type ${call.type}`);
        toolCalls.push({ id: call.id, name: call.function.name, arguments: parseArguments(call.function.name, call.function.arguments) });
      }
      return { text: message.content ? message.content : null, toolCalls };
    });
  }

  async json<T>(input: { model?: string | null; messages: ChatMessage[]; name: string; schema: z.ZodType<T> }): Promise<T> {
    const model = input.model || this.defaultModel;
    const messages = input.messages.map(toWire);
    // Built before any request: a schema the API cannot take is a programming error, not retried.
    const responseFormat = zodResponseFormat(input.schema, input.name);
    return this.withRetries('json', model, undefined, async (timeout) => {
      // parse() reads the content as JSON and checks it with the schema (a SyntaxError or a
      // ZodError when it does not fit: retried like any failure).
      const completion = await this.openai.chat.completions.parse({ model, messages, response_format: responseFormat }, { timeout });
      const message = completion.choices?.[0]?.message;
      if (!message) throw new InvalidAnswer('the answer has no choice');
      if (message.parsed === null || message.parsed === undefined) {
        throw new InvalidAnswer(message.refusal ? 'the model refused' : 'the answer has no content');
      }
      return message.parsed as T;
    });
  }

  /**
   * Three tries in all, within one budget: LLM_TIMEOUT_MS per try and the waits between them, or
   * less when the caller says so (a turn whose customer has waited already: docs/agents.md "The
   * language model"). A try gets what is left of the budget; no wait starts past it.
   */
  private async withRetries<R>(
    what: 'chat' | 'json',
    model: string,
    budgetMs: number | undefined,
    attempt: (timeoutMs: number) => Promise<R>,
  ): Promise<R> {
    const deadline = Date.now() + Math.min(budgetMs ?? this.budgetMs, this.budgetMs);
    for (let i = 0; ; i++) {
      const started = performance.now();
      try {
        const answer = await attempt(Math.max(1, Math.min(this.timeoutMs, deadline - Date.now())));
        this.observe('ok', (performance.now() - started) / 1000);
        return answer;
      } catch (err) {
        this.observe('error', (performance.now() - started) / 1000);
        const reason = describe(err);
        const wait = this.retryDelaysMs[i] ?? 0;
        const last = i >= this.retryDelaysMs.length || Date.now() + wait >= deadline;
        if (!retryable(err) || last) {
          this.log.warn({ llm: what, model, attempts: i + 1, reason }, 'language model failed');
          throw new ModelError(`The language model failed (${reason})`, { cause: err });
        }
        this.log.info({ llm: what, model, attempt: i + 1, reason }, 'language model failed; trying again');
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }
}

/** Timeouts, network errors, 5xx, 408, 429 and unusable answers are tried again; other 4xx not. */
function retryable(err: unknown): boolean {
  if (err instanceof APIUserAbortError) return false;
  if (err instanceof APIError && typeof err.status === 'number') {
    return err.status >= 500 || err.status === 429 || err.status === 408;
  }
  // APIConnectionError (network, timeout: no status), InvalidAnswer, SyntaxError, ZodError, and the
  // client's LengthFinishReasonError / ContentFilterFinishReasonError.
  return true;
}

/** A short reason for logs and ModelError: the status or error type, never a body or the key. */
function describe(err: unknown): string {
  if (err instanceof APIError) {
    const name = err.constructor.name;
    return typeof err.status === 'number' ? `${name} ${err.status}` : name;
  }
  if (err instanceof InvalidAnswer) return err.message;
  if (err instanceof Error) return `${err.name}: an answer that does not fit`;
  return 'unknown error';
}

function parseArguments(tool: string, text: string): Record<string, unknown> {
  // Some servers send "" for a tool without parameters.
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InvalidAnswer(`invalid JSON arguments for tool ${tool}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidAnswer(`arguments for tool ${tool} are not an object`);
  }
  return value as Record<string, unknown>;
}

function toWire(m: ChatMessage): ChatCompletionMessageParam {
  switch (m.role) {
    case 'system':
      return { role: 'system', content: m.content };
    case 'user':
      return { role: 'user', content: m.content };
    case 'assistant':
      if (m.toolCalls && m.toolCalls.length > 0) {
        return {
          role: 'assistant',
          content: m.content === '' ? null : m.content,
          tool_calls: m.toolCalls.map((c) => ({
            id: c.id,
            type: 'function' as const,
            function: { name: c.name, arguments: JSON.stringify(c.arguments) },
          })),
        };
      }
      return { role: 'assistant', content: m.content };
    case 'tool':
      if (!m.toolCallId) throw new Error('A tool message needs the toolCallId it answers');
      return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
  }
}

function toolToWire(t: ToolSpec): ChatCompletionTool {
  return { type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } };
}
