// The per-number pacer (docs/performance.md "Throughput tiers and pacing"): Meta lets each
// WhatsApp number send `throughput_per_second` messages a second (its tier: 80 by default, up to
// 1,000) and answers 130429 beyond it. Every send of a number takes the number's next slot first
// (channel/paced.ts wraps the providers), so the sends of every process together stay under it.
//
// Algorithm: GCRA with strict spacing and no burst. A number keeps the time of its next free slot;
// a send reserves it and moves it one interval (1000 / rate ms) on, then waits until the slot
// comes. Slots are never closer than one interval, so no one-second window holds more than the
// rate. A slot further away than the caller's `maxWaitMs` is not reserved: `take` answers false.
//
// Back-off: a 130429 halves the number's rate (`factor`), shared by every process; the factor
// doubles back every RECOVER_STEP_MS of the clock until the tier again. 130429s of sends already
// in flight when it halved (within SAME_EPISODE_MS) do not halve it again; later ones do.
//
// Time: slots are real time (what Meta measures; the waits are real timers): this process's
// monotonic clock in memory, Redis's TIME in Redis (one clock for every process). Not the
// injected clock: it stands still in tests, where reservations would pile up on one instant and
// every send of a test would wait for real. The back-off's steps are read from the injected
// clock, like the limiter's windows, so tests can move them.
//
// Memory (this file) without REDIS_URL; Redis (pacer-redis.ts) with it, falling back to memory
// while Redis is unreachable (like the limiter fails open).
import { performance } from 'node:perf_hooks';
import type { Clock } from '../lib/clock.js';

/**
 * Share of the tier we pace at. Our slot and the moment Meta counts the message differ by network
 * and server jitter; pacing a little under the tier leaves that room, so jitter cannot put more
 * than the tier into one of Meta's one-second windows.
 */
export const PACE_SHARE = 0.93;
/** While slowed down, the factor doubles back each time this much of the clock passes. */
export const RECOVER_STEP_MS = 10_000;
/** 130429s within this long of a halving answer sends already in flight: the same episode. */
export const SAME_EPISODE_MS = 1_000;
/** The slowest a number is paced under back-off (messages a second; a tier below it keeps its own). */
export const MIN_RATE = 1;
/** The smallest factor kept (the rate floor above decides first). */
const MIN_FACTOR = 1 / 1024;
/** How long a sender waits for a slot unless it says otherwise (SendRequest.maxWaitMs). */
export const DEFAULT_MAX_WAIT_MS = 2_000;

export interface Pacer {
  /**
   * Reserves the number's next send slot at its rate and waits until it comes. Returns false,
   * having reserved nothing, when the slot is further than maxWaitMs away.
   */
  take(numberId: string, perSecond: number, maxWaitMs: number): Promise<boolean>;
  /**
   * `take` that tells how far the slot was: {ok: true} after waiting for it, or {ok: false,
   * waitMs} (nothing reserved) when it was further than maxWaitMs away.
   */
  reserve(numberId: string, perSecond: number, maxWaitMs: number): Promise<Reservation>;
  /** Graph answered 130429 for the number: halve its rate in every process, then recover. */
  slowDown(numberId: string): void;
  close(): Promise<void>;
}

export type Reservation = { ok: true } | { ok: false; waitMs: number };

/** A number's back-off: its rate factor, since when it counts (recovery steps), when it last halved. */
export interface BackOff {
  factor: number;
  since: number;
  halvedAt: number;
}

export const FULL_SPEED: BackOff = Object.freeze({ factor: 1, since: 0, halvedAt: Number.NEGATIVE_INFINITY });

/** The back-off at `now`: the factor doubled once per whole RECOVER_STEP_MS since it was set, up to 1. */
export function recovered(b: BackOff, now: number): BackOff {
  if (b.factor >= 1) return b.factor === 1 ? b : { ...b, factor: 1 };
  const steps = Math.floor((now - b.since) / RECOVER_STEP_MS);
  if (steps <= 0) return b;
  return { factor: Math.min(1, b.factor * 2 ** Math.min(steps, 20)), since: b.since + steps * RECOVER_STEP_MS, halvedAt: b.halvedAt };
}

/** After a 130429 at `now`: half the current factor, unless it halved within SAME_EPISODE_MS. */
export function halved(b: BackOff, now: number): BackOff {
  const cur = recovered(b, now);
  if (cur.factor < 1 && now - cur.halvedAt < SAME_EPISODE_MS) return cur;
  return { factor: Math.max(MIN_FACTOR, cur.factor / 2), since: now, halvedAt: now };
}

/** Messages a second a number is paced at: PACE_SHARE of its tier, times its back-off, not under MIN_RATE. */
export function pacedRate(perSecond: number, factor: number): number {
  const paced = perSecond * PACE_SHARE;
  return Math.max(Math.min(MIN_RATE, paced), paced * factor);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits for a reserved slot `waitMs` away (timers fire late, never early). */
export const waitForSlot = (waitMs: number): Promise<void> => (waitMs >= 1 ? sleep(Math.ceil(waitMs)) : Promise.resolve());

/**
 * A send that wakes more than this after its slot (a starved process) lets the slot go and
 * reserves another: it would otherwise leave among later slots, maybe another process's. Within a
 * process the departures are also capped at the paced rate in any sliding second (Departures),
 * so a busy moment never makes a bunch here; across processes the bound is slots of at most
 * 1000 + LATE_MS ms in a second of departures. Measured: at 40 ms a campaign at tier 1,000 on a
 * busy machine gave up enough slots to run at 0.88 of the tier; at 100 ms, 0.93.
 */
export const LATE_MS = 100;

/**
 * Reserves a slot with `once` (given the wait still allowed; it answers the slot's wait, or a
 * refusal with the wait the slot would have needed), waits for it, and reserves again when this
 * process woke more than LATE_MS after it, within what is left of maxWaitMs.
 */
export async function reserveOnTime(
  once: (maxWaitMs: number) => Promise<{ ok: boolean; waitMs: number }> | { ok: boolean; waitMs: number },
  maxWaitMs: number,
): Promise<Reservation> {
  const start = performance.now();
  for (;;) {
    const left = maxWaitMs - (performance.now() - start);
    const r = await once(Math.max(0, left));
    if (!r.ok) return { ok: false, waitMs: r.waitMs + (maxWaitMs - left) };
    // From the answer: Redis's round trip is not counted as lateness (the slot was decided at its
    // end, a fraction of a millisecond on a quiet connection).
    const answered = performance.now();
    await waitForSlot(r.waitMs);
    if (performance.now() - (answered + r.waitMs) <= LATE_MS) return { ok: true };
  }
}

/**
 * This process's recent departures of each number: a send whose slot came leaves only while this
 * process's sends of the number in the last second are fewer than the paced rate. Timers that fire
 * together after a busy moment would otherwise leave in a bunch; with this the count of any
 * sliding second holds where it is measured, not only in the reservations. Departures of a number
 * queue in order (one timer for the first waiting), so a late timer never delays the next slots.
 */
export class Departures {
  private readonly numbers = new Map<string, { times: number[]; head: number; chain: Promise<void> }>();

  leave(numberId: string, perSecond: number): Promise<void> {
    let st = this.numbers.get(numberId);
    if (!st) {
      if (this.numbers.size >= MAX_NUMBERS) this.numbers.clear();
      st = { times: [], head: 0, chain: Promise.resolve() };
      this.numbers.set(numberId, st);
    }
    const s = st;
    const limit = Math.max(1, Math.floor(perSecond));
    const next = s.chain.then(() => depart(s, limit));
    s.chain = next;
    return next;
  }
}

async function depart(s: { times: number[]; head: number }, limit: number): Promise<void> {
  for (;;) {
    const now = performance.now();
    while (s.head < s.times.length && now - s.times[s.head]! >= 1000) s.head++;
    if (s.head > 1024 && s.head * 2 > s.times.length) {
      s.times = s.times.slice(s.head);
      s.head = 0;
    }
    if (s.times.length - s.head < limit) {
      s.times.push(now);
      return;
    }
    // The newest `limit` departures are in the last second: wait until the oldest of them is not.
    await sleep(Math.ceil(1000 - (now - s.times[s.times.length - limit]!)));
  }
}

interface NumberState {
  /** This process's monotonic time (ms) of the number's next free slot. */
  next: number;
  backOff: BackOff;
}

/** Numbers kept before idle ones (no slot ahead, full speed) are dropped. */
const MAX_NUMBERS = 10_000;

/** One process's pacer: exact within the process, knows nothing of others (no REDIS_URL: one process). */
export class MemoryPacer implements Pacer {
  private readonly numbers = new Map<string, NumberState>();
  private readonly departures = new Departures();
  constructor(private readonly clock: Clock) {}

  private state(numberId: string): NumberState {
    let st = this.numbers.get(numberId);
    if (!st) {
      if (this.numbers.size >= MAX_NUMBERS) this.sweep();
      st = { next: 0, backOff: FULL_SPEED };
      this.numbers.set(numberId, st);
    }
    return st;
  }

  private sweep(): void {
    const now = performance.now();
    for (const [id, st] of this.numbers) if (st.next <= now && st.backOff.factor >= 1) this.numbers.delete(id);
  }

  /** Decides without waiting: the wait (ms) of the reserved slot, or a refusal with the wait it would have needed. */
  reserveNow(numberId: string, perSecond: number, maxWaitMs: number): { ok: boolean; waitMs: number } {
    const st = this.state(numberId);
    st.backOff = recovered(st.backOff, this.clock.ms());
    const now = performance.now();
    const slot = Math.max(st.next, now);
    const waitMs = slot - now;
    if (waitMs > maxWaitMs) return { ok: false, waitMs };
    st.next = slot + 1000 / pacedRate(perSecond, st.backOff.factor);
    return { ok: true, waitMs };
  }

  async reserve(numberId: string, perSecond: number, maxWaitMs: number): Promise<Reservation> {
    const r = await reserveOnTime((wait) => this.reserveNow(numberId, perSecond, wait), maxWaitMs);
    if (r.ok) await this.departures.leave(numberId, perSecond * PACE_SHARE);
    return r;
  }

  async take(numberId: string, perSecond: number, maxWaitMs: number): Promise<boolean> {
    return (await this.reserve(numberId, perSecond, maxWaitMs)).ok;
  }

  slowDown(numberId: string): void {
    const st = this.state(numberId);
    st.backOff = halved(st.backOff, this.clock.ms());
  }

  async close(): Promise<void> {
    this.numbers.clear();
  }
}
