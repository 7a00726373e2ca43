import { describe, expect, it } from 'vitest';
import { jobs } from './registry.js';
import { jobLockId } from './scheduler.js';

const WEBHOOKS_LOCK_ID = -1715891956;

describe('job advisory locks (one runner per job across processes)', () => {
  it('the job lock id is stable under registry reordering: a function of the name only; two names never share one in the registry', () => {
    const names = Object.keys(jobs);
    const ids = new Map(names.map((n) => [n, jobLockId(n)]));
    for (const n of [...names].reverse()) expect(jobLockId(n)).toBe(ids.get(n));
    expect(new Set(ids.values()).size).toBe(names.length);
    for (const id of ids.values()) expect(Number.isInteger(id) && id >= -(2 ** 31) && id < 2 ** 31).toBe(true);
    // Two releases running side by side must agree: the formula itself is part of the contract.
    expect(jobLockId('webhooks')).toBe(WEBHOOKS_LOCK_ID);
  });
});
