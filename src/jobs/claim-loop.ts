// A worker that claims due rows and runs each in this process (docs/architecture.md "Workers"):
// the automation runner and the agent runner are one each. Every process runs its own; rows are
// shared through the database (the claim statement takes them with FOR UPDATE SKIP LOCKED and a
// lease), so what one process holds the others skip. Woken in-process when a writer made a row
// due; polls for the rest (timers, other processes' work, claims whose lease lapsed).
import type { FastifyBaseLogger } from 'fastify';

export interface ClaimLoopOptions<T> {
  /** For the log line of a failed claim. */
  name: string;
  pollMs: number;
  /** Rows run at once in this process. */
  maxInFlight: number;
  /** Claims up to `limit` due rows (or the one named, when due and free). */
  claim(limit: number, id?: string): Promise<T[]>;
  idOf(row: T): string;
  /** Runs a claimed row until it rests; resolves with the transitions made (never rejects). */
  run(row: T, stopping: () => boolean): Promise<number>;
  log: FastifyBaseLogger;
}

export class ClaimLoop<T> {
  private started = false;
  private stopping = false;
  private timer: NodeJS.Timeout | null = null;
  private pumping: Promise<void> | null = null;
  private again = false;
  /** A wake found every slot taken. */
  private starved = false;
  /** Rows this process is running, by id. */
  private readonly inFlight = new Map<string, Promise<number>>();

  constructor(private readonly o: ClaimLoopOptions<T>) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    this.timer = setInterval(() => this.pump(), this.o.pollMs);
    this.timer.unref();
    this.pump();
  }

  wake(): void {
    if (this.started && !this.stopping) this.pump();
  }

  /** Stops claiming; rows in flight finish their step and give themselves back (run sees `stopping`). */
  async stop(graceMs = 20_000): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.pumping;
    let t: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight.values()]), new Promise((r) => (t = setTimeout(r, graceMs)))]);
    clearTimeout(t);
  }

  /**
   * Runs everything due now (by the service's clock) until nothing is, including what the
   * background already holds; returns the transitions made (POST /admin/v1/jobs/{name}/run).
   */
  async runOnce(): Promise<number> {
    let n = 0;
    for (;;) {
      // A background claim in progress holds rows that are not in flight yet: wait for it, or
      // this pass would find them neither due nor in flight and answer before they ran.
      if (this.pumping) await this.pumping;
      n += (await Promise.all([...this.inFlight.values()])).reduce((a, b) => a + b, 0);
      const claimed = await this.o.claim(this.o.maxInFlight);
      if (claimed.length === 0 && this.inFlight.size === 0 && !this.pumping) return n;
      n += (await Promise.all(claimed.map((row) => this.run(row)))).reduce((a, b) => a + b, 0);
    }
  }

  /**
   * Runs one row now if it is due and free, and waits for it to rest or for `maxMs`, whichever
   * comes first (a start through the API answers with short flows already ended).
   */
  async drive(id: string, maxMs: number): Promise<void> {
    let running = this.inFlight.get(id);
    if (!running) {
      const [row] = await this.o.claim(1, id);
      // Not claimed: this process's poll may have taken it meanwhile.
      running = row ? this.run(row) : this.inFlight.get(id);
    }
    let t: NodeJS.Timeout | undefined;
    const late = new Promise((r) => (t = setTimeout(r, maxMs)));
    // This process's poll may hold it in a claim that has not reached inFlight yet (SKIP LOCKED hid
    // it from ours): let that claim land, as runOnce does.
    if (!running && this.pumping) {
      await Promise.race([this.pumping, late]);
      running = this.inFlight.get(id);
    }
    if (running) await Promise.race([running, late]);
    clearTimeout(t);
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
        for (;;) {
          const room = this.o.maxInFlight - this.inFlight.size;
          if (this.stopping) break;
          if (room <= 0) {
            // Woken while full: the next run to end claims again.
            this.starved = true;
            break;
          }
          const claimed = await this.o.claim(room);
          for (const row of claimed) void this.run(row);
          if (claimed.length < room) break;
          // Full: wait for a slot before claiming more.
          await Promise.race(this.inFlight.values());
        }
      } while (this.again && !this.stopping);
    })()
      .catch((err) => this.o.log.warn({ err: { message: (err as Error).message } }, `${this.o.name}: claim failed`))
      .finally(() => {
        this.pumping = null;
      });
  }

  private run(row: T): Promise<number> {
    const id = this.o.idOf(row);
    const p = this.o
      .run(row, () => this.stopping)
      .finally(() => {
        // Only its own entry: a claim that lapsed while this run went on may have been taken
        // again by this process, and that run, under the same id, is still going.
        if (this.inFlight.get(id) === p) this.inFlight.delete(id);
        // A slot freed after a wake found none: what was due then is claimed now. Otherwise there
        // is nothing to claim on a run's end: a claim that filled every slot waits for one in the
        // pump, and rows made due meanwhile woke the loop or wait for its poll.
        if (this.starved && this.started && !this.stopping) {
          this.starved = false;
          this.pump();
        }
      });
    this.inFlight.set(id, p);
    return p;
  }
}
