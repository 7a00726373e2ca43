// What the service asks of a language model (docs/agents.md "The language model"): a chat turn
// with tools, and an answer shaped by a JSON schema. One implementation (client.ts, the `openai`
// client against any OpenAI-compatible server); `null` in the services when LLM_BASE_URL is unset.
import type { z } from 'zod';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** assistant turns that called tools */
  toolCalls?: ToolCall[];
  /** tool results answer one call */
  toolCallId?: string;
}

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON schema of the arguments */
  parameters: Record<string, unknown>;
}

export interface ToolCall {
  id: string;
  name: string;
  /** Parsed JSON arguments (an invalid JSON text is a model failure, retried). */
  arguments: Record<string, unknown>;
}

export interface ChatResult {
  text: string | null;
  toolCalls: ToolCall[];
}

/** A model failure after its retries (timeout, 5xx, invalid tool call or JSON). */
export class ModelError extends Error {}

export interface LlmClient {
  /** The model used when none is given (LLM_MODEL). */
  readonly defaultModel: string;
  /** The most a call with its retries takes: LLM_TIMEOUT_MS × 3 + the waits (1 s, 4 s). */
  readonly budgetMs: number;
  /**
   * One chat completion with tools; retried twice (1 s, 4 s) on failure, then ModelError — all
   * within `budgetMs` when given (at most the client's own budget).
   */
  chat(input: { model?: string | null; messages: ChatMessage[]; tools: ToolSpec[]; budgetMs?: number }): Promise<ChatResult>;
  /** One completion whose answer follows `schema` (JSON-schema response format); retried like chat. */
  json<T>(input: { model?: string | null; messages: ChatMessage[]; name: string; schema: z.ZodType<T> }): Promise<T>;
}
