// The one place that reads process.env (operator.md, "Configuration").
import { z } from 'zod';
import { parseKeyring, type SecretKey } from './secrets/keyring.js';

const onOff = z.enum(['on', 'off', 'true', 'false', '1', '0']).transform((v) => v === 'on' || v === 'true' || v === '1');

const schedule = z
  .string()
  .regex(/^\d+(\.\d+)?(,\d+(\.\d+)?)*$/, 'a comma-separated list of seconds')
  .transform((s) => s.split(',').map(Number));

const ConfigSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  /** Where clients reach this service (an automation's incoming webhook URL); default http://HOST:PORT. */
  PUBLIC_URL: z.string().url().optional(),
  DATABASE_URL: z.string().optional(),
  DATA_DIR: z.string().default('./data'),
  REDIS_URL: z.string().optional(),
  /** Prefix of every Redis key (processes sharing limits use the same one). */
  REDIS_KEY_PREFIX: z.string().min(1).default('chasqui'),
  ADMIN_TOKEN: z.string().min(16).optional(),
  /**
   * The keyring that seals stored credentials (docs/privacy.md "Secrets sealed at rest"):
   * comma-separated `id:base64(32 bytes)`, the first seals, all open. Unset: DATA_DIR/secrets-key
   * (made on the first start), except with NODE_ENV=production, which refuses to start.
   */
  SECRETS_KEYS: z
    .string()
    .optional()
    .transform((text, ctx): SecretKey[] | undefined => {
      if (text === undefined) return undefined;
      const r = parseKeyring(text);
      if ('keys' in r) return r.keys;
      ctx.addIssue({ code: 'custom', message: r.problem });
      return z.NEVER;
    }),
  CHANNEL_PROVIDER: z.enum(['sandbox', 'cloud']).default('sandbox'),
  /** Graph base URL; a version segment (/v24.0) is added when it has none (docs/cloud.md). */
  GRAPH_API_URL: z.string().url().default('https://graph.facebook.com/v24.0'),
  /** Whole Graph request (connect to last byte); sends are never retried, a timeout is a temporary 502. */
  GRAPH_TIMEOUT_MS: z.coerce.number().int().min(10).max(120_000).default(15_000),
  /** Instagram API with Instagram Login (the social channel's sends), used as is: it carries the version. */
  INSTAGRAM_API_URL: z.string().url().default('https://graph.instagram.com/v22.0'),
  SANDBOX_AUTO_STATUS: onOff.default(true),
  TRUST_PROXY: z.string().optional(),
  WEBHOOK_RETRY_SCHEDULE: schedule.default([5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]),
  /**
   * Seconds before each new try of an item of a durable queue that failed for our own reason
   * (docs/operating.md "Dead letters"): after the last, the item is parked as a dead letter.
   */
  QUEUE_RETRY_SCHEDULE: schedule.default([5, 30, 120, 600, 1800, 3600]),
  /** Seconds before each new try of a campaign send refused for a temporary reason (then failed). */
  CAMPAIGN_RETRY_SCHEDULE: schedule.default([60, 300, 900]),
  SEED_DEMO: onOff.optional(),
  NODE_ENV: z.string().default('development'),
  ALLOW_PRIVATE_WEBHOOKS: onOff.optional(),
  /** Per-attempt webhook timeout (decisions.md: 15 s); tests use a small one. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(10).max(120_000).default(15_000),
  /** Slow clients (decisions.md): headers complete within this time, else 408 and closed. */
  HEADERS_TIMEOUT_MS: z.coerce.number().int().min(50).max(600_000).default(10_000),
  /** …and a body complete within this time after its headers, else 408 and closed. */
  BODY_TIMEOUT_MS: z.coerce.number().int().min(50).max(600_000).default(30_000),
  /** `off` admits every request without caps, quota or IP block: only to measure their cost (bench). */
  LIMITS: onOff.default(true),
  /** An OpenAI-compatible Chat Completions API (…/v1); unset: no language model (docs/agents.md). */
  LLM_BASE_URL: z.string().url().optional(),
  /** Sent as `Authorization: Bearer …`; never logged. Local servers (Ollama) need none. */
  LLM_API_KEY: z.string().optional(),
  /** The model used when an agent names none (Ollama's tag by default). */
  LLM_MODEL: z.string().min(1).default('llama3.1'),
  /** One model request, connect to last byte; a timeout is a model failure (retried). */
  LLM_TIMEOUT_MS: z.coerce.number().int().min(10).max(600_000).default(30_000),
  /** `off`: no metrics hook, nothing counted, GET /metrics answers 404 (the bench's floor). */
  METRICS: onOff.default(true),
  /** A Bearer token for GET /metrics only (the operator token is accepted too). */
  METRICS_TOKEN: z.string().min(16).optional(),
  /**
   * After SIGTERM, GET /readyz answers 503 `draining` this long while requests are still served,
   * so a load balancer stops sending traffic before the server stops accepting. Default: 5 s when
   * NODE_ENV=production, 0 otherwise.
   */
  SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).max(60_000).optional(),
  /** A comment line on every console stream this often (docs/console.md "Live updates"); tests use a short one. */
  CONSOLE_KEEPALIVE_MS: z.coerce.number().int().min(50).max(600_000).default(15_000),
  /** Days an audit line is kept (docs/privacy.md "Audit trail"); the `audit` job deletes older ones. */
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(400),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Config = z.infer<typeof ConfigSchema> & {
  /** Which database the URL selects: embedded on disk, embedded in memory, or PostgreSQL. */
  database: { kind: 'pglite'; dataDir: string } | { kind: 'memory' } | { kind: 'postgres'; url: string };
  /** Private/loopback webhook URLs allowed (tests, sandbox) or refused (SSRF guard). */
  allowPrivateWebhooks: boolean;
  trustProxy: boolean;
  seedDemo: boolean;
  /** SHUTDOWN_DRAIN_MS, or its default for NODE_ENV. */
  shutdownDrainMs: number;
};

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = ConfigSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Invalid configuration: ${problems}`);
  }
  const c = parsed.data;
  const url = c.DATABASE_URL;
  const database: Config['database'] =
    !url || url.startsWith('pglite://') || url.startsWith('file://')
      ? { kind: 'pglite', dataDir: url ? url.replace(/^(pglite|file):\/\//, '') : `${c.DATA_DIR}/pglite` }
      : url === 'memory://'
        ? { kind: 'memory' }
        : { kind: 'postgres', url };
  return {
    ...c,
    database,
    allowPrivateWebhooks: c.ALLOW_PRIVATE_WEBHOOKS ?? c.NODE_ENV !== 'production',
    trustProxy: c.TRUST_PROXY !== undefined && !['0', 'false', 'off'].includes(c.TRUST_PROXY),
    seedDemo: c.SEED_DEMO ?? database.kind !== 'postgres',
    shutdownDrainMs: c.SHUTDOWN_DRAIN_MS ?? (c.NODE_ENV === 'production' ? 5_000 : 0),
  };
}
