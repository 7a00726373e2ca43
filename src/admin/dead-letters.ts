// Operator API: dead letters (docs/operating.md "Dead letters"). Items of the durable queues that
// failed for our own reason on every try of QUEUE_RETRY_SCHEDULE are parked and listed here; the
// operator puts one back (its queue processes it once more, with the queue's own dedupe) or
// discards it. Each queue owns its table: reviving and discarding are its own functions.
import { sql } from 'kysely';
import { z } from 'zod';
import { reviveStretch } from '../agents/stretches.js';
import { type AuditAction, type AuditWho, audit, whoOf } from '../audit/trail.js';
import { reviveExecution } from '../automations/steps.js';
import { discardInbound, reviveInbound } from '../channel/inbound-queue.js';
import { discardClassification, reviveClassification, wakeClassifier } from '../classification/queue.js';
import type { Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { DeadLettersTable } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { CursorQuery, errors, IdParams, NoBody, page, type RoutesFn, Timestamp, Uuid } from '../http/schemas.js';
import { QUEUES, type QueueName } from '../jobs/dead-letters.js';
import type { Services } from '../services.js';
import { discardDelivery, reviveDelivery } from '../webhooks/delivery-repo.js';

interface QueueOps {
  /** Puts the parked item back, due now; false when it cannot be (409). */
  revive(trx: Trx, itemId: string, now: Date): Promise<boolean>;
  /** What discarding does to the item itself (the dead letter row goes in any case). */
  discard(trx: Trx, itemId: string, now: Date): Promise<void>;
  /** Wakes this process's worker of the queue after a revive commits. */
  wake(s: Services): void;
}

/** Executions and stretches ended when they died (failed, handed off): discarding keeps them as they are. */
const keep = async (): Promise<void> => {};

const OPS: Record<QueueName, QueueOps> = {
  inbound: { revive: reviveInbound, discard: (trx, id) => discardInbound(trx, id), wake: (s) => s.inbound.wake() },
  webhook_deliveries: { revive: reviveDelivery, discard: discardDelivery, wake: (s) => s.dispatcher.wake() },
  executions: { revive: reviveExecution, discard: keep, wake: (s) => s.automations.wake() },
  agent_turns: { revive: reviveStretch, discard: keep, wake: (s) => s.agents.wake() },
  classification: { revive: reviveClassification, discard: (trx, id) => discardClassification(trx, id), wake: wakeClassifier },
};

const DeadLetter = z.object({
  id: Uuid,
  queue: z.enum(QUEUES),
  itemId: z.string().describe("The item's id in its queue (an inbound batch's number, else a UUID)"),
  accountId: Uuid.nullable(),
  firstFailedAt: Timestamp,
  diedAt: Timestamp,
  attempts: z.number().int().describe('Tries made, the first one included'),
  lastError: z.string().describe('The last error, without personal data'),
});

const view = (r: DeadLettersTable) => ({
  id: r.id,
  queue: r.queue as QueueName,
  itemId: r.item_id,
  accountId: r.account_id,
  firstFailedAt: r.first_failed_at.toISOString(),
  diedAt: r.died_at.toISOString(),
  attempts: r.attempts,
  lastError: r.last_error,
});

async function listDeadLetters(s: Services, q: { queue?: QueueName | undefined; limit: number; after?: string | undefined }) {
  const rows = await s.db
    .selectFrom('dead_letters')
    .selectAll()
    .$if(q.queue !== undefined, (b) => b.where('queue', '=', q.queue!))
    .$if(q.after !== undefined, (b) => b.where('id', '>', q.after!))
    .orderBy('id')
    .limit(q.limit + 1)
    .execute();
  return page(rows.map(view), q.limit);
}

/** Takes the dead letter (locked) or 404. */
async function takeDeadLetter(trx: Trx, id: string): Promise<DeadLettersTable & { queue: QueueName }> {
  const row = await trx.selectFrom('dead_letters').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
  if (!row || !(QUEUES as readonly string[]).includes(row.queue)) throw new ApiError('dead_letter_not_found');
  return row as DeadLettersTable & { queue: QueueName };
}

/** The audit line of a dead letter retried or discarded: under its account (null: an item of no account). */
const auditDeadLetter = (trx: Trx, now: Date, who: AuditWho, dl: DeadLettersTable, action: AuditAction) =>
  audit(trx, now, who, {
    accountId: dl.account_id,
    action,
    target: { type: 'dead_letter', id: dl.id },
    changes: { queue: dl.queue, itemId: dl.item_id, attempts: dl.attempts },
  });

async function retryDeadLetter(s: Services, id: string, who: AuditWho) {
  const now = s.clock.now();
  const row = await transaction(s.db, async (trx) => {
    const dl = await takeDeadLetter(trx, id);
    if (!(await OPS[dl.queue].revive(trx, dl.item_id, now))) throw new ApiError('dead_letter_not_retryable');
    await sql`DELETE FROM dead_letters WHERE id = ${id}`.execute(trx);
    await auditDeadLetter(trx, now, who, dl, 'dead_letter.retried');
    return dl;
  });
  OPS[row.queue].wake(s);
  s.log.info({ queue: row.queue, item: row.item_id }, 'dead letter retried by the operator');
  return { ...view(row), retriedAt: now.toISOString() };
}

async function discardDeadLetter(s: Services, id: string, who: AuditWho): Promise<void> {
  const now = s.clock.now();
  const row = await transaction(s.db, async (trx) => {
    const dl = await takeDeadLetter(trx, id);
    await OPS[dl.queue].discard(trx, dl.item_id, now);
    await sql`DELETE FROM dead_letters WHERE id = ${id}`.execute(trx);
    await auditDeadLetter(trx, now, who, dl, 'dead_letter.discarded');
    return dl;
  });
  s.log.warn({ queue: row.queue, item: row.item_id, attempts: row.attempts }, 'dead letter discarded by the operator');
}

const tags = ['Operator: dead letters'];

export const deadLetterAdminRoutes: RoutesFn = (app, s) => {
  app.get(
    '/dead-letters',
    {
      schema: {
        summary: 'Items parked after failing on every try (oldest first)',
        description:
          'Every durable queue tries an item again on QUEUE_RETRY_SCHEDULE when it fails for our own reason, then parks it here.',
        tags,
        querystring: CursorQuery.extend({ queue: z.enum(QUEUES).optional().describe('Only this queue') }),
        response: { 200: z.object({ data: z.array(DeadLetter), hasMore: z.boolean(), nextCursor: Uuid.nullable() }), ...errors(400) },
      },
    },
    async (req) => listDeadLetters(s, req.query),
  );

  app.post(
    '/dead-letters/:id/retry',
    {
      schema: {
        summary: 'Put a dead letter back in its queue (processed once more, with the same dedupe)',
        tags,
        params: IdParams,
        body: NoBody,
        response: { 200: DeadLetter.extend({ retriedAt: Timestamp }), ...errors(404, 409) },
      },
    },
    async (req) => retryDeadLetter(s, req.params.id, whoOf(req)),
  );

  app.delete('/dead-letters/:id', { schema: { summary: 'Discard a dead letter (logged)', tags, params: IdParams } }, async (req, reply) => {
    await discardDeadLetter(s, req.params.id, whoOf(req));
    return reply.code(204).send();
  });
};
