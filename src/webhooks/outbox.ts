// The outbox (decisions.md, "Webhooks"): an event row written in the same transaction as the
// change it reports, fanned out to one delivery per enabled subscribed URL of the account.
import { sql } from 'kysely';
import type { Executor } from '../db/index.js';
import { newId } from '../lib/ids.js';

export type EventKind =
  | 'message.received'
  | 'message.status'
  | 'contact.created'
  | 'contact.opted_out'
  | 'campaign.completed'
  | 'case.opened'
  | 'case.classified'
  | 'case.closed'
  | 'case.outcome'
  | 'case.stage_changed';

export interface NewEvent {
  accountId: string;
  kind: EventKind;
  data: Record<string, unknown>;
  test?: boolean;
  /** Only this webhook (the test event of one URL). */
  webhookId?: string;
}

/**
 * Writes the event and its deliveries inside `trx`. Callers wake the dispatcher after commit
 * (`services.dispatcher.wake()`); the dispatcher's poll finds them anyway.
 */
export async function emitEvent(trx: Executor, e: NewEvent, now: Date): Promise<string> {
  const id = newId();
  await trx
    .insertInto('events')
    .values({ id, account_id: e.accountId, kind: e.kind, data: JSON.stringify(e.data), test: e.test ?? false, created_at: now })
    .execute();
  await sql`
    INSERT INTO webhook_deliveries (id, event_id, webhook_id, account_id, status, next_attempt_at, created_at, updated_at)
    SELECT gen_random_uuid(), ${id}, w.id, w.account_id, 'pending', ${now}, ${now}, ${now}
    FROM webhooks w
    WHERE w.account_id = ${e.accountId} AND w.enabled AND w.deleted_at IS NULL
      AND (w.events IS NULL OR ${e.kind} = ANY (w.events))
      AND (${e.webhookId ?? null}::uuid IS NULL OR w.id = ${e.webhookId ?? null}::uuid)`.execute(trx);
  return id;
}
