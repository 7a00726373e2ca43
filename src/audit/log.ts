// Reading and trimming the audit trail (docs/privacy.md "Audit trail"): the operator's pages,
// newest first, and the retention job that deletes whole lines older than AUDIT_RETENTION_DAYS.

import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Executor } from '../db/index.js';
import type { AuditLogTable } from '../db/types.js';
import type { Services } from '../services.js';
import type { AuditAction } from './trail.js';

export const auditLineView = (r: Selectable<AuditLogTable>) => ({
  id: r.id,
  at: r.at.toISOString(),
  actor: { type: r.actor_type, id: r.actor_id, name: r.actor_name },
  action: r.action as AuditAction,
  target: r.target_type && r.target_id ? { type: r.target_type, id: r.target_id } : null,
  requestId: r.request_id,
  ip: r.ip,
  changes: r.changes,
});

export interface AuditQuery {
  limit: number;
  /** The last id of the previous page. */
  after?: string | undefined;
  action?: AuditAction | undefined;
}

/**
 * One page of an account's lines (or, with `accountId` null, of the installation's own: a key
 * rotation), newest first (at desc, id desc: the index's order). `after` continues below the line
 * it names; a cursor of another account or unknown gives an empty page.
 */
export async function listAuditLines(db: Executor, accountId: string | null, q: AuditQuery) {
  let query = db
    .selectFrom('audit_log')
    .selectAll()
    .where('account_id', accountId === null ? 'is' : '=', accountId)
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(q.limit + 1);
  if (q.action) query = query.where('action', '=', q.action);
  if (q.after)
    query = query.where(
      sql<boolean>`(at, id) < (SELECT a.at, a.id FROM audit_log a WHERE a.id = ${q.after} AND a.account_id IS NOT DISTINCT FROM ${accountId})`,
    );
  const rows = await query.execute();
  const hasMore = rows.length > q.limit;
  const data = (hasMore ? rows.slice(0, q.limit) : rows).map(auditLineView);
  return { data, hasMore, nextCursor: hasMore ? (data[data.length - 1]?.id ?? null) : null };
}

/** Lines deleted per statement, so retention never holds a long lock on a big trail. */
const PURGE_BATCH = 1_000;

/** The `audit` job: deletes the lines older than AUDIT_RETENTION_DAYS, a batch at a time; answers how many. */
export async function purgeAuditLines(s: Services): Promise<number> {
  const cutoff = new Date(s.clock.ms() - s.config.AUDIT_RETENTION_DAYS * 86_400_000);
  let total = 0;
  for (;;) {
    const res = await s.db
      .deleteFrom('audit_log')
      .where('id', 'in', (eb) => eb.selectFrom('audit_log').select('id').where('at', '<', cutoff).orderBy('at').limit(PURGE_BATCH))
      .executeTakeFirst();
    const n = Number(res.numDeletedRows ?? 0);
    total += n;
    if (n < PURGE_BATCH) return total;
  }
}
