// Periodic jobs (operator-api.md: POST /admin/v1/jobs/{name}/run). Each returns how many rows it
// changed. The scheduler runs them on their own period; one runner per cluster (advisory lock).
import type { Services } from '../services.js';

export interface Job {
  /** Milliseconds between scheduled runs. */
  everyMs: number;
  run(s: Services): Promise<number>;
}

export const jobs: Record<string, Job> = {};
