// Assembles one Chasqui process: database (migrated), services, HTTP app and workers.
// main.ts, the CLI and the test harness all start the service through here.

import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { type DestinationStream, type Logger, pino } from 'pino';
import { AccountViewCache } from './accounts/view-cache.js';
import { stopReviews } from './agents/reviews.js';
import { AgentRunner } from './agents/runner.js';
import { buildApp } from './app.js';
import { AutomationRunner } from './automations/runner.js';
import { stopCampaignSends } from './campaigns/sender.js';
import { CloudProvider } from './channel/cloud/provider.js';
import { processQueuedCloud } from './channel/cloud/receiver.js';
import { HotReads } from './channel/hot-reads.js';
import { InboundWorker } from './channel/inbound-queue.js';
import { instagramThrottled } from './channel/instagram/errors.js';
import { InstagramProvider } from './channel/instagram/send.js';
import { Channels } from './channel/registry.js';
import { SandboxProvider } from './channel/sandbox/provider.js';
import { SandboxSocialProvider } from './channel/sandbox/social.js';
import { stopClassifier } from './classification/queue.js';
import type { Config } from './config.js';
import { EventBus } from './console/bus.js';
import { type OpenDb, openDatabase } from './db/index.js';
import { migrate } from './db/migrate.js';
import { JobScheduler } from './jobs/scheduler.js';
import { keyAuthenticator } from './keys/service.js';
import { type Clock, systemClock } from './lib/clock.js';
import { serializeErr } from './lib/log-err.js';
import { createLimiter, createPacer } from './limits/index.js';
import { DbUsageMeter } from './limits/usage.js';
import { createLlmClient } from './llm/client.js';
import { appAuthenticator } from './mcp/apps.js';
import { SentMarks } from './messages/sent-marks.js';
import { createMetrics } from './metrics/metrics.js';
import type { Keyring } from './secrets/keyring.js';
import { loadKeyring } from './secrets/load.js';
import { keyIdsInUse, resealAll } from './secrets/reseal.js';
import { type DemoSeed, seedDemoIfEmpty } from './seed.js';
import type { Services } from './services.js';
import { WebhookDispatcher } from './webhooks/dispatcher.js';

export interface RuntimeOptions {
  clock?: Clock;
  /** PGlite data-directory dump to start from (tests start from a migrated template). */
  loadDataDir?: Blob;
  /** Background workers (dispatcher, job scheduler); tests may turn them off. */
  workers?: boolean;
  /** Usage batch period; 0 turns the timer off (tests flush explicitly). */
  usageFlushMs?: number;
  /** Where log lines go (default stdout; tests read them). */
  logDestination?: DestinationStream;
}

export interface Runtime {
  app: FastifyInstance;
  services: Services;
  database: OpenDb;
  dispatcher: WebhookDispatcher;
  automations: AutomationRunner;
  scheduler: JobScheduler;
  channels: Channels;
  demo: DemoSeed | null;
  adminTokenGenerated: boolean;
  listen(): Promise<string>;
  close(): Promise<void>;
}

function resolveAdminToken(config: Config): { token: string; generated: boolean } {
  if (config.ADMIN_TOKEN) return { token: config.ADMIN_TOKEN, generated: false };
  const file = `${config.DATA_DIR}/admin-token`;
  try {
    return { token: readFileSync(file, 'utf8').trim(), generated: false };
  } catch {
    const token = `adm_${randomBytes(24).toString('base64url')}`;
    mkdirSync(config.DATA_DIR, { recursive: true });
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    return { token, generated: true };
  }
}

/** The start pass: values a version before sealing wrote in plain text are sealed; a failure is logged, never fatal. */
async function sealPlaintext(db: OpenDb['db'], ring: Keyring, log: Logger): Promise<void> {
  try {
    const r = await resealAll(db, ring, 'plaintext', log);
    if (r.resealed > 0) log.info({ sealed: r.resealed }, 'secrets: sealed values stored in plain text');
    // Said once at the start, not first by a failed send: values this ring cannot open.
    const missing = (await keyIdsInUse(db)).filter((id) => !ring.has(id));
    if (missing.length > 0)
      log.error(
        { missingKeyIds: missing, keyIds: ring.keys.map((k) => k.id) },
        'secrets: stored values are sealed by keys this server was not started with; add them to SECRETS_KEYS and restart (docs/operating.md "The secrets key")',
      );
  } catch (err) {
    log.error({ err }, 'secrets: the start pass failed; plain values stay readable and are sealed on the next start');
  }
}

/** This process's own base URL (without PUBLIC_URL): a wildcard host is reached on loopback. */
function ownUrl(host: string, port: number): string {
  const h = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
  return `http://${h}:${port}`;
}

export async function startRuntime(config: Config, opts: RuntimeOptions = {}): Promise<Runtime> {
  const clock = opts.clock ?? systemClock;
  const log = pino(
    {
      level: config.LOG_LEVEL,
      redact: [
        'req.headers.authorization',
        '*.accessToken',
        '*.appSecret',
        '*.key',
        '*.secret',
        'LLM_API_KEY',
        '*.LLM_API_KEY',
        '*.apiKey',
      ],
      serializers: { err: serializeErr },
    },
    // Written as they happen: an asynchronous line could land after text the CLI prints on the
    // same stdout (the start banner) although it was logged first. Tests may pass their own.
    opts.logDestination ?? pino.destination({ dest: 1, sync: true }),
  );
  // Before the database: production without SECRETS_KEYS refuses to start (secretTexts.requiredInProduction).
  const secrets = loadKeyring(config);
  if (secrets.generatedFile)
    log.warn(
      { file: secrets.generatedFile },
      'secrets: made the key that seals stored credentials; keep it safe and apart from the backups (docs/operating.md "The secrets key")',
    );
  const database = await openDatabase(config.database, { loadDataDir: opts.loadDataDir });
  await migrate(database.db);
  const admin = resolveAdminToken(config);
  const metrics = createMetrics(config.METRICS, database.db, clock, (err) =>
    log.warn({ err: { message: (err as Error)?.message } }, 'metrics: queue gauges not read'),
  );
  // Every send of a number takes its slot first (docs/performance.md "Throughput tiers and pacing").
  const channels = new Channels(createPacer(config, clock, log), (seconds) => metrics.pacerWait(seconds));
  const usage = new DbUsageMeter(database.db, clock, opts.usageFlushMs);
  const services: Services = {
    config,
    db: database.db,
    dbKind: database.kind,
    clock,
    log,
    limiter: createLimiter(config, clock, (accountId, period) => usage.recordedApiCalls(accountId, period), log),
    usage,
    auth: keyAuthenticator(database.db, clock),
    apps: appAuthenticator(database.db, clock, () => `${services.publicUrl}/mcp`),
    accountViews: new AccountViewCache(database.db, usage, clock),
    channels,
    dispatcher: { wake() {}, runOnce: async () => 0 },
    automations: { wake() {}, runOnce: async () => 0, drive: async () => {} },
    agents: { wake() {}, runOnce: async () => 0 },
    inbound: { wake() {}, runOnce: async () => 0 },
    hotReads: new HotReads(database, config.database.kind === 'postgres' ? config.database.url : null, clock, log),
    liveEvents: new EventBus(database, config.database.kind === 'postgres' ? config.database.url : null, log),
    sentMarks: new SentMarks(database.db),
    publicUrl: config.PUBLIC_URL ?? ownUrl(config.HOST, config.PORT),
    llm: createLlmClient(config, log, { observe: (outcome, seconds) => metrics.llmRequest(outcome, seconds) }),
    secrets: secrets.keyring,
    adminToken: admin.token,
    metrics,
    draining: false,
  };
  // Another process revoked a key, disconnected an app or changed a plan: forget it here too.
  services.limiter.onForget((accountId) => {
    services.auth.forgetAccount(accountId);
    services.apps.forgetAccount(accountId);
  });
  const dispatcher = new WebhookDispatcher(services);
  services.dispatcher = dispatcher;
  const automations = new AutomationRunner(services);
  services.automations = automations;
  const agents = new AgentRunner(services);
  services.agents = agents;
  const inbound = new InboundWorker(services, { cloud: processQueuedCloud });
  services.inbound = inbound;
  channels.register(new SandboxProvider(services));
  channels.register(new CloudProvider(services));
  channels.registerSocial(new SandboxSocialProvider());
  channels.registerSocial(new InstagramProvider(services), instagramThrottled);

  const demo = config.seedDemo ? await seedDemoIfEmpty(database.db, clock.now()) : null;
  // After the seed, whose automation is written without the keyring.
  await sealPlaintext(database.db, secrets.keyring, log);
  const app = await buildApp(services);
  // Open connections (tracked per connection, not per request), so a shutdown can tell the
  // keep-alive connections of requests in flight to close after their answer.
  const sockets = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const scheduler = new JobScheduler(services);
  if (opts.workers !== false) {
    dispatcher.start();
    automations.start();
    agents.start();
    inbound.start();
    scheduler.start();
  }

  let closed = false;
  return {
    app,
    services,
    database,
    dispatcher,
    automations,
    scheduler,
    channels,
    demo,
    adminTokenGenerated: admin.generated,
    async listen() {
      const address = await app.listen({ port: config.PORT, host: config.HOST });
      const port = app.server.address();
      if (!config.PUBLIC_URL && port && typeof port === 'object') services.publicUrl = ownUrl(config.HOST, port.port);
      return address;
    },
    async close() {
      if (closed) return;
      closed = true;
      // Draining (docs/operating.md "Health checks"): /readyz answers 503 while requests are still
      // served, so a load balancer stops sending traffic before the server stops accepting. A
      // server that never listened (the port was taken) has nobody to tell.
      services.draining = true;
      if (config.shutdownDrainMs > 0 && app.server.listening) await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs));
      // Keep-alive connections of requests in flight would otherwise stay open after their answer
      // (up to the keep-alive timeout) and hold the shutdown: answer them with Connection: close,
      // and close every connection that turns idle.
      // The response a connection is serving is node:http's `_httpMessage` (the same property
      // http-terminator and stoppable read).
      for (const socket of sockets) {
        const res = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
        if (res && !res.headersSent) res.setHeader('Connection', 'close');
      }
      const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
      sweep.unref();
      // Stop accepting and finish in-flight requests first, then the workers, then the database.
      try {
        await app.close();
      } finally {
        clearInterval(sweep);
      }
      // A campaign run in progress gives its unsent slices back and writes its outcomes first.
      stopCampaignSends(services);
      await scheduler.stop();
      await inbound.stop();
      await stopClassifier(services);
      await stopReviews(services);
      await automations.stop();
      await agents.stop();
      await dispatcher.stop();
      await channels.close();
      await services.usage.close();
      await services.limiter.close();
      await services.liveEvents.close();
      await services.hotReads.close();
      await database.close();
    },
  };
}
