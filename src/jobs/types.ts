// A periodic job (jobs/registry.ts lists them); features define theirs without importing the registry.
import type { Services } from '../services.js';

export interface Job {
  /** Milliseconds between scheduled runs. */
  everyMs: number;
  /** Runs once; returns how many rows it changed. */
  run(s: Services): Promise<number>;
}
