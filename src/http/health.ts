// Liveness and readiness (docs/operating.md "Health checks"): /healthz answers while the process
// serves; /readyz answers 200 only when the database answers with every migration of this build
// applied and Redis (when configured) answers, and 503 once shutdown began (draining).
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { listMigrations } from '../db/migrate.js';
import type { Services } from '../services.js';

/** A check that has not answered within this is down (a stalled connection must not hold the probe). */
const CHECK_TIMEOUT_MS = 2_000;

interface Readiness {
  status: 'ok' | 'unavailable' | 'draining';
  database: 'ok' | 'unreachable';
  migrations: 'ok' | 'pending' | 'unknown';
  redis: 'ok' | 'unreachable' | 'not_configured';
}

function within<T>(p: Promise<T>, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), CHECK_TIMEOUT_MS);
  });
  return Promise.race([p.catch(() => fallback), late]).finally(() => clearTimeout(timer));
}

/** One statement answers both: the database is up, and how many of this build's migrations it has. */
async function migrationsApplied(s: Services, versions: string[]): Promise<number> {
  const { rows } = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM schema_migrations WHERE version = ANY(${versions}::text[])`.execute(s.db);
  return rows[0]?.n ?? 0;
}

async function readiness(s: Services, versions: string[]): Promise<Readiness> {
  const [applied, redis] = await Promise.all([
    within(migrationsApplied(s, versions), null),
    within(s.limiter.redisHealth(), 'down' as const),
  ]);
  const r: Readiness = {
    status: 'ok',
    database: applied === null ? 'unreachable' : 'ok',
    migrations: applied === null ? 'unknown' : applied === versions.length ? 'ok' : 'pending',
    redis: redis === 'down' ? 'unreachable' : redis,
  };
  if (s.draining) r.status = 'draining';
  else if (r.database !== 'ok' || r.migrations !== 'ok' || r.redis === 'unreachable') r.status = 'unavailable';
  return r;
}

export function healthRoutes(app: FastifyInstance, s: Services): void {
  // This build's migrations, read once at start.
  const versions = listMigrations().map((m) => m.version);
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const r = await readiness(s, versions);
    return reply.code(r.status === 'ok' ? 200 : 503).send(r);
  });
}
