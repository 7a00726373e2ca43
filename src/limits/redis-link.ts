// One connection to Redis for a mechanism shared by every process (the limiter, redis.ts; the
// pacer, pacer-redis.ts), with the outage handling both need: the connection's options (no
// offline queue, a command timeout, reconnecting forever at most every 2 s), a first-contact wait
// for the first callers, one error line when Redis goes away and one warning when it is back, and
// a short back-off after a failed command during which callers answer from their memory fallback.
import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** After a failed command, skip Redis this long before trying again. */
const BACKOFF_MS = 1_000;

export interface RedisLinkOptions {
  url: string;
  /** Per-command timeout (ms): a hung Redis must not hold callers. */
  commandTimeoutMs?: number | undefined;
  log: Logger;
  /** The time the back-off is measured in (ms). */
  now: () => number;
  /** The error line when Redis goes away, and the warning when it is back: what falls back, and to what. */
  lines: { down: string; up: string };
  /** After every failed command (the limiter drops its leases). */
  onFailure?: () => void;
  /** When Redis answers again after an outage. */
  onBack?: () => void;
}

export class RedisLink {
  readonly connection: Redis;
  /** Settles on the first connection or the first failure (the first callers wait for it). */
  private readonly firstContact: Promise<void>;
  private outage = false;
  private skipUntil = 0;
  private closed = false;

  constructor(private readonly o: RedisLinkOptions) {
    this.connection = new Redis(o.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: o.commandTimeoutMs ?? 500,
      connectTimeout: 2_000,
      // Keep trying forever, at most every 2 s: the caller recovers by itself.
      retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2_000),
    });
    let settle: () => void = () => {};
    this.firstContact = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const timer = setTimeout(settle, 3_000);
    timer.unref();
    this.connection.on('ready', () => {
      settle();
      this.recovered();
    });
    this.connection.on('error', (err: Error) => {
      settle();
      this.failed(err);
    });
  }

  /** Redis is known to be away (callers answer from memory). */
  get down(): boolean {
    return this.outage;
  }

  failed(err: unknown): void {
    this.skipUntil = this.o.now() + BACKOFF_MS;
    this.o.onFailure?.();
    if (this.outage || this.closed) return;
    this.outage = true;
    this.o.log.error({ err: { message: (err as Error)?.message, code: (err as { code?: string })?.code } }, this.o.lines.down);
  }

  /**
   * Redis answered again: a reconnection, or a command that succeeded after one that timed out on a
   * connection that never dropped (then no 'ready' event comes).
   */
  recovered(): void {
    if (!this.outage) return;
    this.outage = false;
    this.skipUntil = 0;
    this.o.log.warn(this.o.lines.up);
    this.o.onBack?.();
  }

  /** Redis can be asked now; otherwise the caller's memory fallback answers. */
  async usable(): Promise<boolean> {
    if (this.closed) return false;
    if (this.connection.status !== 'ready') {
      await this.firstContact;
      if ((this.connection.status as string) !== 'ready') {
        if (!this.outage) this.failed(new Error(`Redis connection ${this.connection.status}`));
        return false;
      }
    }
    return this.o.now() >= this.skipUntil;
  }

  /** Readiness (GET /readyz): Redis answers a PING now, once the first contact settled; no outage handling. */
  async answers(): Promise<boolean> {
    if (this.closed) return false;
    if (this.connection.status !== 'ready') await this.firstContact;
    // Two tries: one PING slower than the command timeout on a busy machine is not an outage.
    for (let i = 0; i < 2; i++) {
      try {
        await this.connection.ping();
        return true;
      } catch {
        /* once more */
      }
    }
    return false;
  }

  /** The owner is closing: no more outage lines. */
  closing(): void {
    this.closed = true;
  }
}
