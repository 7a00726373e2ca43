// The one real-time poll of the tests: for what a server, a worker or a fake reaches on its own
// (a log line, a held request, a worker's write). Business time never needs it: tests move their
// ManualClock and run the job.

type Falsy = undefined | null | false | 0 | '';

/**
 * Calls `f` every `every` ms (default 20) until it answers something truthy, and returns that;
 * throws after `ms` (default 10 s), naming `what` and the last answer.
 */
export async function until<T>(
  f: () => T | Falsy | Promise<T | Falsy>,
  opts: { what?: string; ms?: number; every?: number } = {},
): Promise<T> {
  const { what = 'condition', ms = 10_000, every = 20 } = opts;
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what}: not met in ${ms} ms (last answer: ${JSON.stringify(v)})`);
    await new Promise((r) => setTimeout(r, every));
  }
}
