// The durable queues' gauges, read at scrape time in one statement: each part is an indexed count
// (the queues' own due indexes, dead_letters_list), so a scrape costs one round trip.
import { sql } from 'kysely';
import type { Db } from '../db/index.js';

export const QUEUES = ['webhook_deliveries', 'inbound', 'executions', 'agent_turns', 'classification', 'campaign_recipients'] as const;
export type QueueName = (typeof QUEUES)[number];

/** The queues that keep dead letters (migrations/0019): always reported, 0 when none. */
const DEAD_LETTER_QUEUES = ['inbound', 'webhook_deliveries', 'executions', 'agent_turns', 'classification'] as const;

export interface QueueSnapshot {
  depth: Record<QueueName, number>;
  /** Seconds since the oldest due item became due (0 when none is due). */
  oldestAgeSeconds: Record<QueueName, number>;
  dead: Record<string, number>;
}

/**
 * Depth: deliveries `pending` (waiting for a try, due or not), inbound batches and classifications
 * not dead, executions and agent stretches running and due, recipients pending or sending of a
 * campaign that is sending. Oldest age: since the earliest due time among the due ones.
 */
export async function readQueues(db: Db, now: Date): Promise<QueueSnapshot> {
  const at = sql`${now}::timestamptz`;
  const { rows } = await sql<{ queue: string; depth: number; oldest: Date | string | null }>`
    SELECT 'webhook_deliveries' AS queue, count(*)::int AS depth, min(next_attempt_at) FILTER (WHERE next_attempt_at <= ${at}) AS oldest
      FROM webhook_deliveries WHERE status = 'pending'
    UNION ALL
    SELECT 'inbound', count(*)::int, min(run_at) FILTER (WHERE run_at <= ${at}) FROM inbound_queue WHERE dead_at IS NULL
    UNION ALL
    SELECT 'executions', count(*)::int, min(run_at) FROM automation_executions WHERE status = 'running' AND run_at <= ${at}
    UNION ALL
    SELECT 'agent_turns', count(*)::int, min(run_at) FROM agent_stretches WHERE status = 'running' AND run_at <= ${at}
    UNION ALL
    SELECT 'classification', count(*)::int, min(run_at) FILTER (WHERE run_at <= ${at}) FROM case_classifications WHERE dead_at IS NULL
    UNION ALL
    SELECT 'campaign_recipients', count(*)::int,
           min(COALESCE(r.retry_at, r.updated_at)) FILTER (WHERE COALESCE(r.retry_at, r.updated_at) <= ${at})
      FROM campaigns c JOIN campaign_recipients r ON r.campaign_id = c.id
     WHERE c.status = 'sending' AND r.status IN ('pending', 'sending')
    UNION ALL
    SELECT 'dead:' || queue, count(*)::int, NULL FROM dead_letters GROUP BY queue`.execute(db);
  const snap: QueueSnapshot = {
    depth: Object.fromEntries(QUEUES.map((q) => [q, 0])) as Record<QueueName, number>,
    oldestAgeSeconds: Object.fromEntries(QUEUES.map((q) => [q, 0])) as Record<QueueName, number>,
    dead: Object.fromEntries(DEAD_LETTER_QUEUES.map((q) => [q, 0])),
  };
  for (const r of rows) {
    if (r.queue.startsWith('dead:')) {
      snap.dead[r.queue.slice(5)] = r.depth;
      continue;
    }
    const q = r.queue as QueueName;
    snap.depth[q] = r.depth;
    if (r.oldest !== null) snap.oldestAgeSeconds[q] = Math.max(0, (now.getTime() - new Date(r.oldest).getTime()) / 1000);
  }
  return snap;
}
