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
