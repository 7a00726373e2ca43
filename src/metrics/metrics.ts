// The process's metrics (docs/operating.md "Metrics"): one prom-client registry per service
// container (tests start several apps in one process), counted where the work happens through
// `services.metrics`. METRICS=off gives the no-op implementation: nothing is counted.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../db/index.js';
import type { Clock } from '../lib/clock.js';
import { HttpSeries } from './http-series.js';
import { QUEUES, type QueueSnapshot, readQueues } from './queues.js';

type MessageChannel = 'whatsapp' | 'instagram';
type FailureKind = 'provider' | 'ours';
type DeliveryResult = 'delivered' | 'failed' | 'retrying';
export type LimitName =
  | 'requests_per_minute'
  | 'messages_per_minute'
  | 'quota'
  | 'ip_block'
  | 'mcp_per_app'
  | 'automation_starts'
  | 'oauth_registrations';
type LlmOutcome = 'ok' | 'error';

export interface Metrics {
  readonly enabled: boolean;
  /** One answered HTTP request: `route` is the route's pattern or `unmatched`, never a raw URL. */
  httpRequest(method: string, route: string, status: number, seconds: number): void;
  /** The provider took a message (`provider`: sandbox, cloud, instagram). */
  messageSent(channel: MessageChannel, provider: string, n?: number): void;
  /** A message ended failed: refused or reported failed by the provider, or by our own cause. */
  messageFailed(channel: MessageChannel, kind: FailureKind, n?: number): void;
  messageReceived(channel: MessageChannel): void;
  webhookDelivery(result: DeliveryResult): void;
  providerRequest(provider: string, operation: string, seconds: number): void;
  pacerWait(seconds: number): void;
  llmRequest(outcome: LlmOutcome, seconds: number): void;
  limitRefusal(limit: LimitName): void;
  /** The exposition text (empty when off). */
  scrape(): Promise<string>;
  readonly contentType: string;
}

/** METRICS=off: no registry, nothing counted (the bench's floor). */
const noMetrics: Metrics = {
  enabled: false,
  httpRequest() {},
  messageSent() {},
  messageFailed() {},
  messageReceived() {},
  webhookDelivery() {},
  providerRequest() {},
  pacerWait() {},
  llmRequest() {},
  limitRefusal() {},
  scrape: async () => '',
  contentType: 'text/plain',
};

const LLM_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const PACER_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5];

class PromMetrics implements Metrics {
  readonly enabled = true;
  private readonly registry = new Registry();
  private readonly http = new HttpSeries();
  private readonly sent: Counter<'channel' | 'provider'>;
  private readonly failed: Counter<'channel' | 'kind'>;
  private readonly received: Counter<'channel'>;
  private readonly deliveries: Counter<'result'>;
  private readonly provider: Histogram<'provider' | 'operation'>;
  private readonly pacer: Histogram;
  private readonly llm: Histogram<'outcome'>;
  private readonly refusals: Counter<'limit'>;
  /** One read of the queues per scrape, shared by the three gauges' collect(). */
  private reading: Promise<QueueSnapshot | null> | null = null;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly onReadFailure: (err: unknown) => void,
  ) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    // The per-request series are kept outside prom-client's label hashing (http-series.ts).
    for (const m of this.http.metrics('chasqui_http_requests_total', 'chasqui_http_request_duration_seconds'))
      this.registry.registerMetric(m);
    this.sent = new Counter({
      name: 'chasqui_messages_sent_total',
      help: 'Messages the provider took',
      labelNames: ['channel', 'provider'],
      registers,
    });
    this.failed = new Counter({
      name: 'chasqui_messages_failed_total',
      help: 'Messages that ended failed: provider = refused or reported failed by the provider, ours = our own cause',
      labelNames: ['channel', 'kind'],
      registers,
    });
    this.received = new Counter({
      name: 'chasqui_messages_received_total',
      help: 'Customer messages stored (duplicates not counted)',
      labelNames: ['channel'],
      registers,
    });
    this.deliveries = new Counter({
      name: 'chasqui_webhook_deliveries_total',
      help: 'Webhook delivery attempts by result: delivered, failed (given up), retrying',
      labelNames: ['result'],
      registers,
    });
    this.provider = new Histogram({
      name: 'chasqui_provider_request_duration_seconds',
      help: 'Requests to the channel providers (Graph, Instagram) by operation',
      labelNames: ['provider', 'operation'],
      registers,
    });
    this.pacer = new Histogram({
      name: 'chasqui_pacer_wait_seconds',
      help: "How long a send waited for its number's slot",
      buckets: PACER_BUCKETS,
      registers,
    });
    this.llm = new Histogram({
      name: 'chasqui_llm_request_duration_seconds',
      help: 'Requests to the language model (each try), by outcome',
      labelNames: ['outcome'],
      buckets: LLM_BUCKETS,
      registers,
    });
    this.refusals = new Counter({
      name: 'chasqui_limit_refusals_total',
      help: 'Requests or calls refused by a limit',
      labelNames: ['limit'],
      registers,
    });
    // Read at scrape time (queues.ts: one statement for all of them).
    const snapshot = () => this.snapshot();
    new Gauge({
      name: 'chasqui_queue_depth',
      help: 'Items waiting in each durable queue',
      labelNames: ['queue'],
      registers,
      async collect() {
        const s = await snapshot();
        this.reset();
        if (s) for (const q of QUEUES) this.set({ queue: q }, s.depth[q]);
      },
    });
    new Gauge({
      name: 'chasqui_queue_oldest_age_seconds',
      help: 'How long the oldest due item of each queue has waited (0 when none is due)',
      labelNames: ['queue'],
      registers,
      async collect() {
        const s = await snapshot();
        this.reset();
        if (s) for (const q of QUEUES) this.set({ queue: q }, s.oldestAgeSeconds[q]);
      },
    });
    new Gauge({
      name: 'chasqui_dead_letters',
      help: 'Dead letters kept, by queue',
      labelNames: ['queue'],
      registers,
      async collect() {
        const s = await snapshot();
        this.reset();
        if (s) for (const [q, n] of Object.entries(s.dead)) this.set({ queue: q }, n);
      },
    });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  httpRequest(method: string, route: string, status: number, seconds: number): void {
    this.http.record(method, route, status, seconds);
  }
  messageSent(channel: MessageChannel, provider: string, n = 1): void {
    if (n > 0) this.sent.inc({ channel, provider }, n);
  }
  messageFailed(channel: MessageChannel, kind: FailureKind, n = 1): void {
    if (n > 0) this.failed.inc({ channel, kind }, n);
  }
  messageReceived(channel: MessageChannel): void {
    this.received.inc({ channel });
  }
  webhookDelivery(result: DeliveryResult): void {
    this.deliveries.inc({ result });
  }
  providerRequest(provider: string, operation: string, seconds: number): void {
    this.provider.observe({ provider, operation }, seconds);
  }
  pacerWait(seconds: number): void {
    this.pacer.observe(seconds);
  }
  llmRequest(outcome: LlmOutcome, seconds: number): void {
    this.llm.observe({ outcome }, seconds);
  }
  limitRefusal(limit: LimitName): void {
    this.refusals.inc({ limit });
  }

  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  /** The registry's gauges are collected together: the first starts the read, the others share it. */
  private snapshot(): Promise<QueueSnapshot | null> {
    this.reading ??= readQueues(this.db, this.clock.now())
      .catch((err: unknown) => {
        // The database is away: the gauges are left out of this scrape (readyz says why).
        this.onReadFailure(err);
        return null;
      })
      .finally(() => {
        this.reading = null;
      });
    return this.reading;
  }
}

export function createMetrics(on: boolean, db: Db, clock: Clock, onReadFailure: (err: unknown) => void): Metrics {
  return on ? new PromMetrics(db, clock, onReadFailure) : noMetrics;
}
