// Campaign counters that follow the message status machine (decisions.md "Campaigns": counters
// from status reports); messages/status.ts calls this in the transaction that moved the message.
import { sql } from 'kysely';
import type { Trx } from '../db/index.js';

/**
 * One message of the campaign moved from `previous` to `next`; `sent` is counted by the campaign
 * sender when the provider accepts. A jump sent → read counts as delivered too (read implies it
 * arrived, so delivered ≥ read); a failure after delivery keeps it counted as delivered.
 */
export async function bumpCampaignCounters(
  trx: Trx,
  campaignId: string,
  previous: string,
  next: 'sent' | 'delivered' | 'read' | 'failed',
): Promise<void> {
  const delivered = (next === 'delivered' || next === 'read') && previous !== 'delivered' && previous !== 'read' ? 1 : 0;
  const read = next === 'read' ? 1 : 0;
  const failed = next === 'failed' ? 1 : 0;
  if (delivered + read + failed === 0) return;
  await sql`
    UPDATE campaigns SET
      delivered = delivered + ${delivered}::int,
      read = read + ${read}::int,
      failed = failed + ${failed}::int
    WHERE id = ${campaignId}`.execute(trx);
}

/**
 * A campaign message in doubt got its wamid from a status report (messages/status.ts
 * reconcileInTrx): if the sender had counted its recipient failed as `interrupted` (resolveStuck in
 * sender.ts), the recipient is `sent` after all, and the campaign counts it so. The campaign row
 * before its recipients (docs/architecture.md "Lock order").
 */
export async function recountReconciled(trx: Trx, campaignId: string, contactId: string, messageId: string, now: Date): Promise<void> {
  const interrupted = sql`EXISTS (SELECT 1 FROM campaign_recipients r WHERE r.campaign_id = ${campaignId}::uuid
    AND r.contact_id = ${contactId}::uuid AND r.message_id = ${messageId}::uuid AND r.status = 'failed' AND r.error = 'interrupted')`;
  const { rows } = await sql`
    UPDATE campaigns SET sent = sent + 1, failed = failed - 1 WHERE id = ${campaignId}::uuid AND ${interrupted} RETURNING id`.execute(trx);
  if (rows.length === 0) return;
  await sql`
    UPDATE campaign_recipients SET status = 'sent', error = NULL, updated_at = ${now}::timestamptz
    WHERE campaign_id = ${campaignId}::uuid AND contact_id = ${contactId}::uuid AND message_id = ${messageId}::uuid
      AND status = 'failed' AND error = 'interrupted'`.execute(trx);
}

/**
 * Campaign messages the `reconcile-sends` job failed after 24 h without a provider answer
 * (messages/reconcile.ts): each campaign's `failed` counter grows by its messages, except those
 * whose recipient the sender counts itself — `failed` already (resolveStuck: "interrupted") or
 * still `sending` (its next run's resolveStuck will).
 */
export async function countFailedInDoubt(trx: Trx, failed: { id: string; campaignId: string; contactId: string }[]): Promise<void> {
  if (failed.length === 0) return;
  await sql`
    UPDATE campaigns c SET failed = c.failed + v.n
    FROM (
      SELECT f.campaign_id, count(*)::int AS n
      FROM unnest(${failed.map((f) => f.id)}::uuid[], ${failed.map((f) => f.campaignId)}::uuid[], ${failed.map((f) => f.contactId)}::uuid[])
        AS f(id, campaign_id, contact_id)
      WHERE NOT EXISTS (
        SELECT 1 FROM campaign_recipients r
        WHERE r.campaign_id = f.campaign_id AND r.contact_id = f.contact_id AND r.message_id = f.id AND r.status IN ('sending', 'failed'))
      GROUP BY f.campaign_id
    ) v
    WHERE c.id = v.campaign_id`.execute(trx);
}
