// Runs the periodic jobs of jobs/registry.ts on their period, one runner per cluster: each run
// takes a PostgreSQL advisory lock for its job, so two processes never run the same job at once.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Services } from '../services.js';
import { jobs } from './registry.js';
import type { Job } from './types.js';

/**
 * The advisory-lock id of a job: a function of its name only (the first 32 bits of sha256 over a
 * fixed namespace and the name), so processes of two releases that list the jobs in another order
 * still take the same lock for the same job.
 */
export function jobLockId(name: string): number {
  return createHash('sha256').update(`chasqui:job:${name}`).digest().readInt32BE(0);
}

/** Runs in flight per service container and job: one run of a job at a time in a process. */
const inFlight = new WeakMap<Services, Map<string, Promise<number>>>();

/**
 * Runs job `name` now; null when there is no such job. One run per job at a time: across
 * processes by a PostgreSQL advisory lock, inside the process by chaining. A scheduled tick
 * (`wait` false) skips when a run is in progress (returns 0); a manual run (`wait`, the operator
 * endpoint) waits for it and then runs, so its count is real.
 */
export function runJob(s: Services, name: string, opts: { wait?: boolean } = {}): Promise<number | null> {
  const job = Object.hasOwn(jobs, name) ? jobs[name] : undefined;
  if (!job) return Promise.resolve(null);
  let mine = inFlight.get(s);
  if (!mine) {
    mine = new Map();
    inFlight.set(s, mine);
  }
  const prev = mine.get(name);
  if (prev && !opts.wait) return Promise.resolve(0);
  const run = (prev ?? Promise.resolve(0)).catch(() => 0).then(() => runLocked(s, name, job, opts.wait ?? false));
  mine.set(name, run);
  const m = mine;
  run
    .finally(() => {
      if (m.get(name) === run) m.delete(name);
    })
    .catch(() => {});
  return run;
}

async function runLocked(s: Services, name: string, job: Job, wait: boolean): Promise<number> {
  const lockId = jobLockId(name);
  if (s.dbKind !== 'postgres') return job.run(s);
  // Session-level lock on one pooled connection, held for the run.
  return s.db.connection().execute(async (conn) => {
    if (wait) await sql`SELECT pg_advisory_lock(${lockId})`.execute(conn);
    else {
      const got = await sql<{ ok: boolean }>`SELECT pg_try_advisory_lock(${lockId}) AS ok`.execute(conn);
      if (!got.rows[0]?.ok) return 0;
    }
    try {
      return await job.run(s);
    } finally {
      await sql`SELECT pg_advisory_unlock(${lockId})`.execute(conn);
    }
  });
}

export class JobScheduler {
  private timers: NodeJS.Timeout[] = [];
  private running = new Set<Promise<unknown>>();
  constructor(private readonly s: Services) {}

  start(): void {
    for (const [name, job] of Object.entries(jobs)) {
      const t = setInterval(() => {
        const p = runJob(this.s, name)
          .catch((err) => this.s.log.warn({ err: { message: (err as Error).message }, job: name }, 'job failed'))
          .finally(() => this.running.delete(p));
        this.running.add(p);
      }, job.everyMs);
      t.unref();
      this.timers.push(t);
    }
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await Promise.allSettled([...this.running]);
  }
}
