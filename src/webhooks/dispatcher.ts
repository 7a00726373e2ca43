// Webhook dispatcher: claims due deliveries under a lease, signs and sends them with
// bounded concurrency (overall and per URL), records every attempt in batches and schedules
// retries. Woken in-process by writers (`wake()`) and by a short poll for other processes' events.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Agent } from 'undici';
import { type Db, type OpenDb, openDatabase } from '../db/index.js';
import { describeFailure, LAPSED, logDeath, maxTries, retryAt } from '../jobs/dead-letters.js';
import { quotaPeriod } from '../limits/period.js';
import { SecretKeyMissing } from '../secrets/keyring.js';
import type { Dispatcher, Services } from '../services.js';
import { type AttemptResult, type Claimed, claimDue, failDelivery, recordAttempts, releaseLeases } from './delivery-repo.js';
import { countsAtFirstAttempt } from './outbox.js';
import { createAgent, openSecrets, type SendOutcome, sendAttempt } from './send.js';

export const POLL_MS = 500;
/** Attempts in flight in this process, and per URL (one slow receiver cannot starve the rest). */
export const MAX_IN_FLIGHT = 256;
export const PER_ENDPOINT = 32;
/**
 * Claimed deliveries held here (in flight or waiting for a slot of their URL), overall and per URL;
 * a waiting one that could no longer finish inside its lease is given back (see startWaiting).
 */
const MAX_HELD = 1024;
const HELD_PER_ENDPOINT = 512;
const CLAIM_BATCH = 256;
/** Claim again when fewer than this many wait (batches, not one claim per finished attempt). */
const LOW_WATER = 256;
/**
 * Finished attempts are recorded together: up to this many, gathered for up to this long. The
 * wait delays only the log (the slot is free and the lease covers it), but a process killed
 * meanwhile sends those attempts again after restart: a short wait keeps those repeats few
 * (docs/performance.md).
 */
const FLUSH_BATCH = 256;
const FLUSH_WAIT_MS = 20;
/**
 * Claims made to follow wakes start at most this often: at hundreds of commits a second a claim
 * per commit spent more CPU (a round trip each, on a machine the requests share) than it saved.
 */
const CLAIM_GAP_MS = 20;
/** Longest a server-requested `Retry-After` may push an attempt. */
const MAX_RETRY_AFTER_S = 86_400;
/**
 * PostgreSQL connections of the dispatcher's own pool: one for the claim loop, one for the
 * recording loop (each runs one statement at a time), so neither waits behind request traffic.
 */
const OWN_POOL_SIZE = 2;

/**
 * How long a claim holds a delivery: a held delivery waits at most about one attempt for a slot,
 * then its own attempt, then the recording. A crashed process's deliveries wait this long.
 */
export const leaseMsFor = (timeoutMs: number): number => 2 * timeoutMs + 30_000;

export class WebhookDispatcher implements Dispatcher {
  private readonly agent: Agent;
  private readonly timeoutMs: number;
  private readonly leaseMs: number;
  private started = false;
  private stopping = false;
  private timer: NodeJS.Timeout | null = null;
  private pumping: Promise<void> | null = null;
  private again = false;
  private lastClaimAt = 0;
  /** More was due than we could hold: look again when a slot frees. */
  private backlog = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly perWebhook = new Map<string, number>();
  /** Claimed, waiting for a free slot of their URL (or of the process). */
  private readonly waiting = new Map<string, { c: Claimed; lease: Date }[]>();
  private waitingCount = 0;
  private pending: AttemptResult[] = [];
  private flushing: Promise<void> | null = null;
  private readonly shutdown = new AbortController();
  /**
   * The dispatcher's own small pool on PostgreSQL: on the shared pool a claim would queue behind
   * the requests' transactions, and that wait comes before every send.
   */
  private own: OpenDb | null = null;
  private opening: Promise<void> | null = null;

  constructor(private readonly s: Services) {
    this.timeoutMs = s.config.WEBHOOK_TIMEOUT_MS;
    this.leaseMs = leaseMsFor(this.timeoutMs);
    this.agent = createAgent({
      allowPrivate: s.config.allowPrivateWebhooks,
      connectionsPerOrigin: PER_ENDPOINT,
      timeoutMs: this.timeoutMs,
    });
  }

  /** A writer committed new deliveries: look now instead of at the next poll. */
  wake(): void {
    if (this.started && !this.stopping) this.pump();
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.openOwnPool();
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
    await this.releaseWaiting();
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
    await this.opening;
    await this.own?.close().catch(() => {});
    this.own = null;
  }

  /** Where the dispatcher's statements go: its own pool once open, else the shared one. */
  private get db(): Db {
    return this.own?.db ?? this.s.db;
  }

  /** PostgreSQL only: the embedded databases have one connection, shared by design. */
  private openOwnPool(): void {
    const database = this.s.config.database;
    if (database.kind !== 'postgres') return;
    // Until it is open (or if it cannot open) the shared pool serves: nothing waits for it.
    this.opening = openDatabase(database, { poolSize: OWN_POOL_SIZE })
      .then((d) => {
        if (this.stopping) return d.close();
        this.own = d;
      })
      .catch((err) => this.s.log.warn({ err: { message: (err as Error).message } }, 'webhook dispatcher: own pool not opened'));
  }

  /** One pass now (POST /admin/v1/jobs/webhooks/run): sends everything due, returns attempts made. */
  async runOnce(): Promise<number> {
    // Attempts that finished but wait for their batch are written first: a clock moved past
    // their lease (tests, the operator's job) must not make them look due again.
    await this.flush();
    let n = 0;
    for (;;) {
      const k = await this.claim();
      n += k;
      if (k === 0) break;
      // Let what this pass holds finish before claiming more.
      while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    }
    await this.flush();
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
        await this.gap();
        this.again = false;
        while (!this.stopping && (await this.claim()) > 0 && this.backlog);
      } while (this.again && !this.stopping);
    })()
      .catch((err) => this.s.log.warn({ err: { message: (err as Error).message } }, 'webhook dispatcher: claim failed'))
      .finally(() => {
        this.pumping = null;
      });
  }

  /** Waits out the rest of CLAIM_GAP_MS since the last claim; wakes meanwhile join the next one. */
  private async gap(): Promise<void> {
    const wait = this.lastClaimAt + CLAIM_GAP_MS - Date.now();
    if (wait > 0) await sleep(wait);
  }

  private held(webhookId: string): number {
    return (this.perWebhook.get(webhookId) ?? 0) + (this.waiting.get(webhookId)?.length ?? 0);
  }

  /** Claims what this process can hold and starts what has a free slot; returns how many it took. */
  private async claim(): Promise<number> {
    const room = Math.min(CLAIM_BATCH, MAX_HELD - this.inFlight.size - this.waitingCount);
    if (room <= 0) {
      this.backlog = true;
      return 0;
    }
    const full = [...new Set([...this.perWebhook.keys(), ...this.waiting.keys()])].filter((w) => this.held(w) >= HELD_PER_ENDPOINT);
    const now = this.s.clock.now();
    this.lastClaimAt = Date.now();
    const lease = new Date(now.getTime() + this.leaseMs);
    const rows = await claimDue(this.db, now, lease, room, full);
    // Full URLs were left out of this claim: they may have more due, so look again as slots free.
    this.backlog = rows.length === room || full.length > 0;
    const surplus: { id: string; lease: Date; due: Date }[] = [];
    const dying: Promise<void>[] = [];
    let taken = 0;
    for (const c of rows) {
      // Claimed more often than QUEUE_RETRY_SCHEDULE allows with no attempt recorded (the process
      // died or hung holding it, or recording failed): parked, not sent once more.
      if (c.tries > maxTries(this.s)) {
        dying.push(this.failOurs({ ...c, tries: c.tries - 1 }, lease, c.last_error ?? LAPSED, true));
        continue;
      }
      if (this.stopping) {
        surplus.push({ id: c.id, lease, due: c.due_at });
        this.backlog = true;
        continue;
      }
      const q = this.waiting.get(c.webhook_id);
      if (q) q.push({ c, lease });
      else this.waiting.set(c.webhook_id, [{ c, lease }]);
      this.waitingCount += 1;
      taken += 1;
    }
    await releaseLeases(this.db, surplus);
    this.startWaiting();
    await Promise.all(dying);
    return taken;
  }

  /** Starts waiting deliveries while their URL and the process have free slots. */
  private startWaiting(): void {
    const stale: { id: string; lease: Date; due: Date }[] = [];
    // An attempt must end well inside its lease, or another process may take it meanwhile.
    const latest = this.s.clock.ms() + this.timeoutMs + 5_000;
    for (const [w, q] of this.waiting) {
      while (q.length > 0 && this.inFlight.size < MAX_IN_FLIGHT && (this.perWebhook.get(w) ?? 0) < PER_ENDPOINT) {
        const next = q.shift() as { c: Claimed; lease: Date };
        this.waitingCount -= 1;
        if (next.lease.getTime() < latest) stale.push({ id: next.c.id, lease: next.lease, due: next.c.due_at });
        else this.begin(next.c, next.lease);
      }
      if (q.length === 0) this.waiting.delete(w);
      if (this.inFlight.size >= MAX_IN_FLIGHT) break;
    }
    if (stale.length > 0) void releaseLeases(this.db, stale).catch(() => {});
  }

  private begin(c: Claimed, lease: Date): void {
    this.perWebhook.set(c.webhook_id, (this.perWebhook.get(c.webhook_id) ?? 0) + 1);
    const p: Promise<void> = this.attempt(c, lease).finally(() => {
      this.inFlight.delete(p);
      const left = (this.perWebhook.get(c.webhook_id) ?? 1) - 1;
      if (left <= 0) this.perWebhook.delete(c.webhook_id);
      else this.perWebhook.set(c.webhook_id, left);
      if (!this.stopping) this.startWaiting();
      if (this.backlog && this.waitingCount < LOW_WATER) this.pump();
    });
    this.inFlight.add(p);
  }

  /** Gives back what was claimed but not started (shutdown). */
  private async releaseWaiting(): Promise<void> {
    const all = [...this.waiting.values()].flat();
    this.waiting.clear();
    this.waitingCount = 0;
    await releaseLeases(
      this.db,
      all.map((x) => ({ id: x.c.id, lease: x.lease, due: x.c.due_at })),
    ).catch(() => {});
  }

  private async attempt(c: Claimed, lease: Date): Promise<void> {
    const at = this.s.clock.now();
    let out: SendOutcome;
    try {
      const opened = openSecrets(this.s.secrets, c);
      out =
        opened instanceof SecretKeyMissing
          ? { statusCode: null, durationMs: 0, excerpt: null, error: opened.message, retryAfterS: null, aborted: false }
          : await sendAttempt(this.agent, opened, at, this.timeoutMs, this.s.config.allowPrivateWebhooks, this.shutdown.signal);
    } catch (err) {
      // Not the receiver's answer: our own failure (the attempt could not be made).
      this.s.log.error({ err, webhookId: c.webhook_id, deliveryId: c.id }, 'webhook attempt failed unexpectedly');
      await this.failOurs(c, lease, describeFailure(err), false);
      return;
    }
    if (out.aborted) {
      await releaseLeases(this.db, [{ id: c.id, lease, due: c.due_at }]).catch(() => {});
      return;
    }
    const r = this.outcome(c, lease, at, out);
    this.s.metrics.webhookDelivery(r.status === 'succeeded' ? 'delivered' : r.status === 'failed' ? 'failed' : 'retrying');
    if (r.status !== 'succeeded')
      this.s.log.info(
        { webhookId: c.webhook_id, deliveryId: c.id, attempt: r.attemptNumber, statusCode: out.statusCode, error: out.error },
        'webhook attempt failed',
      );
    // The slot frees now; the result is written with the next batch (the lease covers the gap).
    this.pending.push(r);
    this.scheduleFlush();
  }

  /** Our own failure on a claimed delivery: due again by QUEUE_RETRY_SCHEDULE, or dead after its last try. */
  private async failOurs(c: Pick<Claimed, 'id' | 'account_id' | 'tries'>, lease: Date, error: string, lapsed: boolean): Promise<void> {
    try {
      const died = await failDelivery(this.db, c, lease, error, lapsed ? null : retryAt(this.s, c.tries), this.s.clock.now());
      if (died) logDeath(this.s, { queue: 'webhook_deliveries', itemId: c.id, attempts: c.tries, lastError: error });
    } catch (err) {
      // Its lease lapses and it is claimed again (counted as one more try).
      this.s.log.warn({ err: { message: (err as Error).message }, deliveryId: c.id }, 'webhook dispatcher: could not record a failure');
    }
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
      accountId: c.account_id,
      tries: c.tries,
      countIn: countsAtFirstAttempt(c.plan, c.limits) ? quotaPeriod(new Date(c.queued_at)).start : null,
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

  /**
   * Writes finished attempts in batches: a short wait gathers what finishes meanwhile, so a busy
   * dispatcher writes one transaction per many attempts (the slots are already free).
   */
  private async flushLoop(): Promise<void> {
    while (this.pending.length > 0) {
      if (this.pending.length < FLUSH_BATCH) await new Promise((r) => setTimeout(r, FLUSH_WAIT_MS));
      await this.record(this.pending.splice(0, FLUSH_BATCH));
    }
  }

  /**
   * Records finished attempts. A batch that fails is recorded one by one, so one attempt that
   * cannot be recorded does not fail the others; that one is our own failure: tried again on
   * QUEUE_RETRY_SCHEDULE (sent again: at-least-once), then dead. When even that cannot be written
   * (the database is down), the leases expire and the deliveries are claimed again.
   */
  private async record(batch: AttemptResult[]): Promise<void> {
    try {
      await recordAttempts(this.db, batch, this.s.clock.now());
    } catch (err) {
      if (batch.length > 1) {
        for (const r of batch) await this.record([r]);
        return;
      }
      const r = batch[0]!;
      this.s.log.warn(
        { err: { message: (err as Error).message }, deliveryId: r.deliveryId },
        'webhook dispatcher: recording an attempt failed',
      );
      await this.failOurs({ id: r.deliveryId, account_id: r.accountId, tries: r.tries }, r.lease, describeFailure(err), false);
    }
  }

  private async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
  }
}
