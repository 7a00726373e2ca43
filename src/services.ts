// The service container: everything a route or job needs, built once in main.ts (or a test).
import type { FastifyBaseLogger } from 'fastify';
import type { AccountViewCache } from './accounts/view-cache.js';
import type { HotReads } from './channel/hot-reads.js';
import type { ChannelRegistry } from './channel/types.js';
import type { Config } from './config.js';
import type { EventBus } from './console/bus.js';
import type { Db } from './db/index.js';
import type { KeyAuthenticator } from './keys/service.js';
import type { Clock } from './lib/clock.js';
import type { Limiter, UsageMeter } from './limits/types.js';
import type { LlmClient } from './llm/types.js';
import type { AppAuthenticator } from './mcp/apps.js';
import type { SentMarks } from './messages/sent-marks.js';
import type { Metrics } from './metrics/metrics.js';
import type { Keyring } from './secrets/keyring.js';

export interface Dispatcher {
  /** A writer committed new deliveries: look now instead of at the next poll. */
  wake(): void;
  /** Attempts everything due now and records it; resolves with how many attempts were made. */
  runOnce(): Promise<number>;
}

/** The automation runner of this process (automations/runner.ts). */
export interface AutomationWorker {
  /** An execution was started or given input: look now instead of at the next poll. */
  wake(): void;
  /** Runs everything due now until nothing is; resolves with the transitions made. */
  runOnce(): Promise<number>;
  /** Runs one execution now if due and free; waits until it rests or `maxMs` passes. */
  drive(executionId: string, maxMs: number): Promise<void>;
}

/** The agent runner of this process (agents/runner.ts). */
export interface AgentWorker {
  /** A stretch started or got a message: look now instead of at the next poll. */
  wake(): void;
  /** Runs every turn due now until none is; resolves with the steps taken. */
  runOnce(): Promise<number>;
}

/** The inbound worker of this process (channel/inbound-queue.ts): Meta's queued webhook batches. */
export interface InboundQueueWorker {
  /** A batch was queued: look now instead of at the next poll. */
  wake(): void;
  /** Processes every batch due now until none is; resolves with how many ran. */
  runOnce(): Promise<number>;
}

export interface Services {
  config: Config;
  db: Db;
  dbKind: 'pglite' | 'memory' | 'postgres';
  clock: Clock;
  log: FastifyBaseLogger;
  limiter: Limiter;
  usage: UsageMeter;
  auth: KeyAuthenticator;
  /** AI app tokens (etk_app_) of the MCP server, cached like the keys (mcp/apps.ts). */
  apps: AppAuthenticator;
  /** GET /me views; `changed(accountId)` after a write of the account through this process. */
  accountViews: AccountViewCache;
  channels: ChannelRegistry;
  dispatcher: Dispatcher;
  automations: AutomationWorker;
  agents: AgentWorker;
  inbound: InboundQueueWorker;
  /** An account's numbers and templates as sends read them, kept while unchanged (channel/hot-reads.ts). */
  hotReads: HotReads;
  /** The console's live events of this process (console/bus.ts). */
  liveEvents: EventBus;
  /** Sends' `sent` marks, written together per turn of the event loop (messages/sent-marks.ts). */
  sentMarks: SentMarks;
  /**
   * Where clients reach this service (incoming webhook URLs): PUBLIC_URL, else this process's own
   * address once it listens (http://HOST:PORT, the port the system chose when PORT is 0).
   */
  publicUrl: string;
  /** The language model (LLM_BASE_URL); null when none is configured (docs/agents.md). */
  llm: LlmClient | null;
  /** Seals and opens stored credentials (SECRETS_KEYS, or DATA_DIR/secrets-key; secrets/keyring.ts). */
  secrets: Keyring;
  /** Operator bearer token (ADMIN_TOKEN, or generated and kept in DATA_DIR). */
  adminToken: string;
  /** Counters and histograms of GET /metrics (metrics/metrics.ts); a no-op when METRICS=off. */
  metrics: Metrics;
  /** Set once shutdown began (SIGTERM): GET /readyz answers 503 `draining`. */
  draining: boolean;
}
