// A campaign's slices (docs/decisions.md "Campaigns"): the next recipients of a sending campaign
// prepared in one transaction, the campaign row locked — recipients due again, then the next
// contacts of the audience after the cursor; their conversations, `pending` messages and
// recipient rows (`sending`) written set-wise — and what was never handed to the provider given
// back. The send loop is sender.ts's; the outcomes are outcomes.ts's.
import { sql } from 'kysely';
import { conversationsForMany } from '../conversations/service.js';
import { transaction } from '../db/retry.js';
import type { PhoneNumberRow, TemplateRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { newId } from '../lib/ids.js';
import { dropUnsent, insertCampaignMessages } from '../messages/batch.js';
import { numberForSend, resolveVariables, templateForSend } from '../messages/send-from.js';
import type { Services } from '../services.js';
import { audienceCondition } from './service.js';

/** A slice: the recipients prepared together, worth this long of the number's tier. */
const SLICE_S = 0.2;
const SLICE_MAX = 200;

/** ApiError codes that stop the whole campaign: no recipient could be sent either. */
const CAMPAIGN_FATAL = new Set([
  'template_not_found',
  'template_not_approved',
  'phone_number_unknown',
  'phone_number_disconnected',
  'no_connected_number',
]);

/** One recipient of a slice, its message written `pending` and the recipient `sending`. */
export interface SliceItem {
  contactId: string;
  messageId: string;
  phone: string;
  /** Sends tried before this one. */
  attempts: number;
  variables: Record<string, string>;
}

export type Slice =
  | { kind: 'items'; number: PhoneNumberRow; template: TemplateRow; items: SliceItem[]; skipped: number }
  | { kind: 'fatal'; error: ApiError }
  /** Nothing due now (the campaign may still wait for retries, or be over). */
  | { kind: 'done' };

interface Candidate {
  contact_id: string;
  attempts: number;
  phone: string | null;
  attributes: Record<string, string> | null;
  opted_out: boolean | null;
  marketing_opt_out: boolean | null;
}

/** Contacts after the cursor: a plain range on (account_id, id), which the index serves (an OR with
 *  `IS NULL` would make the planner scan the account from its first contact on every slice). */
const after = (cursor: string | null) => (cursor === null ? sql<boolean>`true` : sql<boolean>`k.id > ${cursor}::uuid`);

const sliceSize = (perSecond: number) => Math.max(1, Math.min(SLICE_MAX, Math.ceil(perSecond * SLICE_S)));

/**
 * Prepares the next slice of a sending campaign in one transaction, the campaign row locked (so two
 * lanes never read the same contacts): recipients due again first, then the next contacts of the
 * audience after the cursor; their conversations, their `pending` messages and their recipient rows
 * (`sending`) are written set-wise. Recipients who opted out since are skipped. When the audience
 * is read to its end, `recipients` becomes the exact count (it was counted at start).
 */
export async function prepareSlice(s: Services, campaignId: string): Promise<Slice> {
  const now = s.clock.now();
  return transaction(s.db, async (trx): Promise<Slice> => {
    const c = await trx
      .selectFrom('campaigns')
      .selectAll()
      .where('id', '=', campaignId)
      .where('status', '=', 'sending')
      .forNoKeyUpdate()
      .executeTakeFirst();
    if (!c) return { kind: 'done' };
    let template: TemplateRow;
    let number: PhoneNumberRow;
    try {
      template = await templateForSend(trx, c.account_id, c.template_id ?? '');
      number = await numberForSend(trx, c.account_id, c.phone_number_id ?? undefined);
    } catch (err) {
      if (err instanceof ApiError && CAMPAIGN_FATAL.has(err.code)) return { kind: 'fatal', error: err };
      throw err;
    }
    const marketing = template.category === 'MARKETING';
    const size = sliceSize(number.throughput_per_second);
    const { rows: again } = await sql<Candidate>`
      SELECT r.contact_id, r.attempts, k.phone, k.attributes, k.opted_out, k.marketing_opt_out
      FROM campaign_recipients r LEFT JOIN contacts k ON k.id = r.contact_id
      WHERE r.campaign_id = ${c.id}::uuid AND r.status = 'pending' AND (r.retry_at IS NULL OR r.retry_at <= ${now}::timestamptz)
      ORDER BY r.retry_at NULLS FIRST, r.contact_id
      LIMIT ${size}
      FOR UPDATE OF r SKIP LOCKED`.execute(trx);
    let fresh: Candidate[] = [];
    let open = c.audience_open;
    if (open && again.length < size) {
      const want = size - again.length;
      fresh = (
        await sql<Candidate>`
          SELECT k.id AS contact_id, 0 AS attempts, k.phone, k.attributes, k.opted_out, k.marketing_opt_out
          FROM contacts k
          WHERE ${audienceCondition(c, marketing)} AND ${after(c.audience_cursor)}
          ORDER BY k.id
          LIMIT ${want}`.execute(trx)
      ).rows;
      open = fresh.length === want;
    }
    // Tried again, but the contact opted out (or was deleted) since: no longer a recipient.
    const skips: { contactId: string; error: string }[] = [];
    const send: Candidate[] = [...fresh];
    for (const r of again) {
      const error =
        r.opted_out === null
          ? 'contact_deleted'
          : r.opted_out
            ? 'opted_out'
            : marketing && r.marketing_opt_out
              ? 'marketing_opt_out'
              : null;
      if (error) skips.push({ contactId: r.contact_id, error });
      else send.push(r);
    }
    if (skips.length > 0) {
      await sql`
        UPDATE campaign_recipients r SET status = 'skipped', error = v.error, retry_at = NULL, updated_at = ${now}::timestamptz
        FROM unnest(${skips.map((x) => x.contactId)}::uuid[], ${skips.map((x) => x.error)}::text[]) AS v(contact_id, error)
        WHERE r.campaign_id = ${c.id}::uuid AND r.contact_id = v.contact_id`.execute(trx);
    }
    const conversations = await conversationsForMany(
      trx,
      { accountId: c.account_id, phoneNumberId: number.id, contactIds: send.map((r) => r.contact_id) },
      now,
    );
    const items: SliceItem[] = send.map((r) => ({
      contactId: r.contact_id,
      messageId: newId(),
      phone: r.phone ?? '',
      attempts: r.attempts,
      variables: resolveVariables(template.variables, c.variables ?? {}, r.attributes ?? {}),
    }));
    await insertCampaignMessages(
      trx,
      { accountId: c.account_id, phoneNumberId: number.id, templateId: template.id, templateName: template.name, campaignId: c.id },
      items.map((i) => ({ ...i, id: i.messageId, conversationId: conversations.get(i.contactId)! })),
      now,
    );
    if (items.length > 0) {
      await sql`
        INSERT INTO campaign_recipients (campaign_id, contact_id, phone, status, message_id, updated_at)
        SELECT ${c.id}::uuid, v.contact_id, v.phone, 'sending', v.message_id, ${now}::timestamptz
        FROM unnest(${items.map((i) => i.contactId)}::uuid[], ${items.map((i) => i.phone)}::text[], ${items.map((i) => i.messageId)}::uuid[])
          AS v(contact_id, phone, message_id)
        ON CONFLICT (campaign_id, contact_id) DO UPDATE
          SET status = 'sending', message_id = excluded.message_id, retry_at = NULL, updated_at = excluded.updated_at`.execute(trx);
    }
    const read = c.audience_read + fresh.length;
    // The audience read to its end: `recipients` (counted at start) becomes exact.
    const settle = c.audience_open && !open ? read - c.audience_counted : 0;
    if (fresh.length > 0 || skips.length > 0 || settle !== 0 || open !== c.audience_open) {
      await trx
        .updateTable('campaigns')
        .set((eb) => ({
          recipients: eb('recipients', '+', settle - skips.length),
          audience_read: read,
          audience_open: open,
          ...(fresh.length > 0 ? { audience_cursor: fresh[fresh.length - 1]!.contact_id } : {}),
        }))
        .where('id', '=', c.id)
        .execute();
    }
    if (items.length === 0 && skips.length === 0 && settle === 0) return { kind: 'done' };
    return { kind: 'items', number, template, items, skipped: skips.length };
  });
}

/** Recipients of a slice that were never handed to the provider: pending again, their messages gone. */
export async function giveBack(s: Services, campaignId: string, items: SliceItem[]): Promise<void> {
  if (items.length === 0) return;
  const now = s.clock.now();
  await transaction(s.db, async (trx) => {
    await sql`
      UPDATE campaign_recipients SET status = 'pending', message_id = NULL, updated_at = ${now}::timestamptz
      WHERE campaign_id = ${campaignId}::uuid AND contact_id = any(${items.map((i) => i.contactId)}::uuid[]) AND status = 'sending'`.execute(
      trx,
    );
    await dropUnsent(
      trx,
      items.map((i) => i.messageId),
    );
  });
}
