// Webhook dispatcher (issue 4): claims due deliveries under a lease, signs and sends them with
// bounded concurrency (overall and per URL), records every attempt in batches and schedules
// retries. Woken in-process by writers (`wake()`) and by a short poll for other processes' events.
import type { Agent } from 'undici';
import type { Dispatcher, Services } from '../services.js';
import { type AttemptResult, type Claimed, claimDue, recordAttempts, releaseLeases } from './delivery-repo.js';
import { createAgent, type SendOutcome, sendAttempt } from './send.js';

export const POLL_MS = 500;
/** Attempts in flight in this process, and per URL (one slow receiver cannot starve the rest). */
export const MAX_IN_FLIGHT = 256;
export const PER_ENDPOINT = 32;
const CLAIM_BATCH = 128;
/** Longest a server-requested `Retry-After` may push an attempt. */
const MAX_RETRY_AFTER_S = 86_400;

export class WebhookDispatcher implements Dispatcher {
  private readonly agent: Agent;
  private readonly timeoutMs: number;
  private readonly leaseMs: number;
  private started = false;
  private stopping = false;
  private timer: NodeJS.Timeout | null = null;
  private pumping: Promise<void> | null = null;
  private again = false;
  /** More was due than we could take: look again when a slot frees. */
  private backlog = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly perWebhook = new Map<string, number>();
  private pending: { r: AttemptResult; done: () => void }[] = [];
  private flushing: Promise<void> | null = null;
  private readonly shutdown = new AbortController();

  constructor(private readonly s: Services) {
    this.timeoutMs = s.config.WEBHOOK_TIMEOUT_MS;
    // The lease outlives the slowest attempt plus recording it.
    this.leaseMs = this.timeoutMs + 30_000;
    this.agent = createAgent({ allowPrivate: s.config.allowPrivateWebhooks, connectionsPerOrigin: PER_ENDPOINT, timeoutMs: this.timeoutMs });
  }

  /** A writer committed new deliveries: look now instead of at the next poll. */
  wake(): void {
    if (this.started && !this.stopping) this.pump();
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.timer = setInterval(() => this.pump(), POLL_MS);
    this.timer.unref();
    this.pump();
  }

  /** Stops claiming, waits for attempts in flight (bounded), records them, closes the pool. */
  async stop(graceMs = Math.min(this.timeoutMs, 10_000)): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.pumping;
    const all = Promise.allSettled([...this.inFlight]);
    let t: NodeJS.Timeout | undefined;
    const late = await Promise.race([all.then(() => false), new Promise<boolean>((r) => (t = setTimeout(() => r(true), graceMs)))]);
    clearTimeout(t);
    if (late) {
      this.shutdown.abort();
      await all;
    }
    await this.flush();
    await this.agent.close().catch(() => {});
  }

  /** One pass now (POST /admin/v1/jobs/webhooks/run): sends everything due, returns attempts made. */
  async runOnce(): Promise<number> {
    let n = 0;
    for (;;) {
      const k = await this.claimAndStart();
      n += k;
      if (k === 0 || this.inFlight.size >= MAX_IN_FLIGHT) break;
    }
    await Promise.allSettled([...this.inFlight]);
    return n;
  }

  private pump(): void {
    if (this.stopping) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = (async () => {
      do {
        this.again = false;
        while (!this.stopping && (await this.claimAndStart()) > 0 && this.backlog);
      } while (this.again && !this.stopping);
    })()
      .catch((err) => this.s.log.warn({ err: { message: (err as Error).message } }, 'webhook dispatcher: claim failed'))
      .finally(() => {
        this.pumping = null;
      });
  }

  /** Claims what fits and starts sending it; returns how many attempts started. */
  private async claimAndStart(): Promise<number> {
    const room = Math.min(CLAIM_BATCH, MAX_IN_FLIGHT - this.inFlight.size);
    if (room <= 0) {
      this.backlog = true;
      return 0;
    }
    const saturated = [...this.perWebhook].filter(([, k]) => k >= PER_ENDPOINT).map(([w]) => w);
    const now = this.s.clock.now();
    const lease = new Date(now.getTime() + this.leaseMs);
    const rows = await claimDue(this.s.db, now, lease, room, saturated);
    this.backlog = rows.length === room;
    const surplus: { id: string; lease: Date }[] = [];
    let started = 0;
    for (const c of rows) {
      const busy = this.perWebhook.get(c.webhook_id) ?? 0;
      if (busy >= PER_ENDPOINT || this.stopping) {
        surplus.push({ id: c.id, lease });
        this.backlog = true;
        continue;
      }
      this.perWebhook.set(c.webhook_id, busy + 1);
      const p: Promise<void> = this.attempt(c, lease).finally(() => {
        this.inFlight.delete(p);
        const left = (this.perWebhook.get(c.webhook_id) ?? 1) - 1;
        if (left <= 0) this.perWebhook.delete(c.webhook_id);
        else this.perWebhook.set(c.webhook_id, left);
        if (this.backlog) this.pump();
      });
      this.inFlight.add(p);
      started += 1;
    }
    await releaseLeases(this.s.db, surplus);
    return started;
  }

  private async attempt(c: Claimed, lease: Date): Promise<void> {
    const at = this.s.clock.now();
    const out = await sendAttempt(this.agent, c, at, this.timeoutMs, this.s.config.allowPrivateWebhooks, this.shutdown.signal);
    if (out.aborted) {
      await releaseLeases(this.s.db, [{ id: c.id, lease }]).catch(() => {});
      return;
    }
    const r = this.outcome(c, lease, at, out);
    if (r.status !== 'succeeded')
      this.s.log.info(
        { webhookId: c.webhook_id, deliveryId: c.id, attempt: r.attemptNumber, statusCode: out.statusCode, error: out.error },
        'webhook attempt failed',
      );
    await new Promise<void>((done) => {
      this.pending.push({ r, done });
      this.scheduleFlush();
    });
  }

  /** What this attempt means for the delivery: done, retry (when), or given up. */
  private outcome(c: Claimed, lease: Date, at: Date, out: SendOutcome): AttemptResult {
    const code = out.statusCode;
    const ok = code !== null && code >= 200 && code < 300;
    const gone = code === 410;
    const base: Omit<AttemptResult, 'status' | 'nextAttemptAt'> = {
      deliveryId: c.id,
      webhookId: c.webhook_id,
      lease,
      attemptNumber: c.attempts + 1,
      trigger: c.next_trigger,
      at,
      statusCode: code,
      durationMs: out.durationMs,
      excerpt: out.excerpt,
      error: out.error,
      gone,
    };
    if (ok) return { ...base, status: 'succeeded', nextAttemptAt: null };
    const schedule = this.s.config.WEBHOOK_RETRY_SCHEDULE;
    const delayS = schedule[c.attempts - c.schedule_start];
    if (gone || delayS === undefined) return { ...base, status: 'failed', nextAttemptAt: null };
    let waitS = delayS * (0.8 + 0.4 * Math.random()); // ±20 % jitter
    if (out.retryAfterS !== null) waitS = Math.max(waitS, Math.min(out.retryAfterS, MAX_RETRY_AFTER_S));
    return { ...base, status: 'pending', nextAttemptAt: new Date(at.getTime() + Math.round(waitS * 1000)) };
  }

  private scheduleFlush(): void {
    if (!this.flushing) this.flushing = this.flushLoop().finally(() => (this.flushing = null));
  }

  /** Writes finished attempts in batches: whatever piled up while the previous batch was written. */
  private async flushLoop(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      try {
        await recordAttempts(
          this.s.db,
          batch.map((b) => b.r),
          this.s.clock.now(),
        );
      } catch (err) {
        // The leases expire and the deliveries are attempted again: at-least-once.
        this.s.log.error({ err: { message: (err as Error).message }, n: batch.length }, 'webhook dispatcher: recording attempts failed');
      }
      for (const b of batch) b.done();
    }
  }

  private async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
  }
}
