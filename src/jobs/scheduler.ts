// Runs the periodic jobs of jobs/registry.ts on their period, one runner per cluster: each run
// takes a PostgreSQL advisory lock for its job, so two processes never run the same job at once.
import { sql } from 'kysely';
import type { Services } from '../services.js';
import { jobs } from './registry.js';

const LOCK_BASE = 4_242_100;

export async function runJob(s: Services, name: string): Promise<number | null> {
  const job = jobs[name];
  if (!job) return null;
  const lockId = LOCK_BASE + Object.keys(jobs).indexOf(name);
  if (s.dbKind !== 'postgres') return job.run(s);
  // Session-level lock on one pooled connection, held for the run.
  return s.db.connection().execute(async (conn) => {
    const got = await sql<{ ok: boolean }>`SELECT pg_try_advisory_lock(${lockId}) AS ok`.execute(conn);
    if (!got.rows[0]?.ok) return 0;
    try {
      return await job.run({ ...s, db: s.db });
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
