// ClaimLoop (docs/architecture.md "Workers"): a row whose lease lapsed while this process still ran
// it can be claimed again by this process; the second run goes on under the same id after the
// first ends, and runOnce waits for it (found by inbound-kill.test.ts once PGlite got its own
// thread: the first run's end removed the second's entry, and the drain answered while it ran).
import type { FastifyBaseLogger } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ClaimLoop } from './claim-loop.js';

const silent = { warn() {}, error() {}, info() {}, debug() {} } as unknown as FastifyBaseLogger;

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe('ClaimLoop', () => {
  it('a row claimed again while its first run goes on: the first run ending does not forget the second, and runOnce waits for it', async () => {
    const first = deferred();
    const second = deferred();
    const claims = [[{ id: 'a', run: 1 }], [{ id: 'a', run: 2 }]];
    const ended: number[] = [];
    const loop = new ClaimLoop<{ id: string; run: number }>({
      name: 'test',
      pollMs: 60_000,
      maxInFlight: 4,
      claim: async () => claims.shift() ?? [],
      idOf: (r) => r.id,
      run: async (r) => {
        await (r.run === 1 ? first : second).promise;
        ended.push(r.run);
        return 1;
      },
      log: silent,
    });
    loop.start(); // the first claim: run 1 of `a`
    await turns(5);
    loop.wake(); // its lease lapsed: claimed again, run 2 of `a`
    await turns(5);
    first.resolve();
    await turns(5);
    expect(ended).toEqual([1]);

    let drained = false;
    const drain = loop.runOnce().then(() => {
      drained = true;
    });
    await turns(10);
    expect(drained).toBe(false);
    second.resolve();
    await drain;
    expect(ended).toEqual([1, 2]);
    await loop.stop(0);
  });

  it('a run that ends claims nothing more (one claim per wake)', async () => {
    let claims = 0;
    const due = [{ id: 'a' }];
    const ran: string[] = [];
    const loop = new ClaimLoop<{ id: string }>({
      name: 'test',
      pollMs: 60_000,
      maxInFlight: 4,
      claim: async (limit) => {
        claims++;
        return due.splice(0, limit);
      },
      idOf: (r) => r.id,
      run: async (r) => {
        ran.push(r.id);
        return 1;
      },
      log: silent,
    });
    loop.start();
    await turns(10);
    expect(ran).toEqual(['a']);
    expect(claims).toBe(1);
    await loop.stop(0);
  });

  it('a wake that found every slot taken is claimed when a run ends', async () => {
    const gate = deferred();
    const due: { id: string }[] = [];
    const ran: string[] = [];
    const loop = new ClaimLoop<{ id: string }>({
      name: 'test',
      pollMs: 60_000,
      maxInFlight: 1,
      claim: async (limit, id) => (id ? [{ id }] : due.splice(0, limit)),
      idOf: (r) => r.id,
      run: async (r) => {
        if (r.id === 'a') await gate.promise;
        ran.push(r.id);
        return 1;
      },
      log: silent,
    });
    loop.start(); // nothing due
    await turns(5);
    const driven = loop.drive('a', 60_000); // the one slot
    await turns(5);
    due.push({ id: 'b' });
    loop.wake(); // full: nothing claimed now
    await turns(5);
    expect(due).toEqual([{ id: 'b' }]);
    gate.resolve(); // `a` ends: `b` is claimed and runs
    await driven;
    await turns(10);
    expect(ran).toEqual(['a', 'b']);
    await loop.stop(0);
  });
});
