// The `reconcile-sends` job (docs/cloud.md "Reconciliation", operations.md "Reconciliation of sends
// in doubt"): a send whose process died after the provider call stays `pending` without a wamid
// until a status report carrying our message id reconciles it (status.ts). One still `pending` 24 h
// after its send never got any: it becomes `failed` with our reason, `code: null`, and its
// `message.status` event.
import { sql } from 'kysely';
import { countFailedInDoubt } from '../campaigns/counters.js';
import { transaction } from '../db/retry.js';
import { sendInDoubtText } from '../http/messages.es-AR.js';
import type { Services } from '../services.js';
import { emitEvent } from '../webhooks/outbox.js';

/** How long a send may wait for any provider answer (its wamid or a status report). */
export const IN_DOUBT_MS = 24 * 60 * 60 * 1000;
/** Messages failed per statement (one transaction each, with their events). */
const BATCH = 200;

interface Failed {
  id: string;
  account_id: string;
  campaign_id: string | null;
  contact_id: string;
  /** A social-channel message (it has no number). */
  social: boolean;
}

/** Fails the sends in doubt for 24 h by the service's clock, in batches; returns how many. */
export async function failSendsInDoubt(s: Services): Promise<number> {
  let done = 0;
  for (;;) {
    const now = s.clock.now();
    const before = new Date(now.getTime() - IN_DOUBT_MS);
    const failed = await transaction(s.db, async (trx) => {
      // messages_pending (migration 0020) finds them; a row a status report is reconciling is skipped.
      const { rows } = await sql<Failed>`
        WITH doubt AS (
          SELECT id FROM messages
          WHERE status = 'pending' AND created_at < ${before}::timestamptz AND wamid IS NULL AND direction = 'outbound'
          ORDER BY created_at
          LIMIT ${BATCH}
          FOR UPDATE SKIP LOCKED
        )
        UPDATE messages m SET status = 'failed', code = NULL, error = ${sendInDoubtText}, failed_at = ${now}::timestamptz,
          updated_at = ${now}::timestamptz
        FROM doubt WHERE m.id = doubt.id AND m.status = 'pending' AND m.wamid IS NULL
        RETURNING m.id, m.account_id, m.campaign_id, m.contact_id, m.phone_number_id IS NULL AS social`.execute(trx);
      // The messages, then their campaigns' rows (docs/architecture.md "Lock order").
      await countFailedInDoubt(
        trx,
        rows.flatMap((r) => (r.campaign_id ? [{ id: r.id, campaignId: r.campaign_id, contactId: r.contact_id }] : [])),
      );
      // api.md has one message event, `message.status` (docs/decisions.md "Sends in doubt").
      for (const r of rows) {
        await emitEvent(
          trx,
          {
            accountId: r.account_id,
            kind: 'message.status',
            data: { id: r.id, wamid: null, status: 'failed', campaignId: r.campaign_id, code: null, timestamp: now.toISOString() },
          },
          now,
        );
      }
      return rows;
    });
    // Failed for our own reason: the provider never answered (operations.md "Metrics").
    const social = failed.filter((r) => r.social).length;
    s.metrics.messageFailed('whatsapp', 'ours', failed.length - social);
    s.metrics.messageFailed('instagram', 'ours', social);
    done += failed.length;
    if (failed.length > 0) s.dispatcher.wake();
    if (failed.length < BATCH) break;
  }
  if (done > 0) s.log.warn({ failed: done }, 'sends without a provider answer for 24 hours marked failed');
  return done;
}
