// A queue worker that a commit can wake in-process and a periodic job also runs (classification,
// agent reviews). `pass(s)` claims and handles what is due until nothing is; this keeps at most
// one pass per service container in flight: a wake during a pass asks for one more pass after
// it, the job waits for the pass in progress (its rows are claimed, not due) and then runs its
// own, and shutdown stops new wakes and waits for the pass in progress.
import type { Services } from '../services.js';

export interface Wakeable {
  /** After a commit that queued work: handle it now instead of at the job's next tick. */
  wake(s: Services): void;
  /** The job: waits for this process's pass in progress, then handles everything due now; returns the rows done. */
  run(s: Services): Promise<number>;
  /** Shutdown (runtime.ts, before the database closes): no new wake; waits for the pass in progress. */
  stop(s: Services): Promise<void>;
}

/** `name` is only for the log line of a pass that failed. */
export function wakeable(name: string, pass: (s: Services) => Promise<number>): Wakeable {
  /** This process's pass in progress (started by a wake), per service container. */
  const running = new WeakMap<Services, { p: Promise<number>; again: boolean }>();
  /** Service containers shutting down: no new pass starts. */
  const stopped = new WeakSet<Services>();

  return {
    wake(s) {
      if (stopped.has(s)) return;
      const cur = running.get(s);
      if (cur) {
        cur.again = true;
        return;
      }
      const state = { p: Promise.resolve(0), again: false };
      state.p = (async () => {
        let n = 0;
        do {
          state.again = false;
          n += await pass(s);
        } while (state.again);
        return n;
      })()
        .catch((err) => {
          s.log.warn({ err: { message: (err as Error).message } }, `${name}: pass failed`);
          return 0;
        })
        .finally(() => running.delete(s));
      running.set(s, state);
    },

    async run(s) {
      let n = 0;
      for (;;) {
        for (let cur = running.get(s); cur; cur = running.get(s)) n += await cur.p;
        n += await pass(s);
        if (!running.get(s)) return n;
      }
    },

    async stop(s) {
      stopped.add(s);
      await running.get(s)?.p;
    },
  };
}
