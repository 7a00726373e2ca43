// Messages of a campaign slice (campaigns/sender.ts), written set-wise: one insert for the slice's
// `pending` messages (in the transaction that records their recipients as sending), one update for
// the outcomes of many provider calls. The rules are sendMessage's (send.ts): the same columns, the
// same provider errors, 131050 marking the contact's marketingOptOut.
import { sql } from 'kysely';
import { ProviderError } from '../channel/types.js';
import { markMarketingOptOut } from '../contacts/service.js';
import type { Executor, Trx } from '../db/index.js';
import { ApiError } from '../http/errors.js';
import { providerReason } from '../http/messages.es-AR.js';
import { MARKETING_BLOCKED } from './status.js';

export interface SliceMessage {
  id: string;
  conversationId: string;
  contactId: string;
  phone: string;
  variables: Record<string, string>;
}

/** The slice's template messages, `pending`, from the campaign's number (source `campaign`). */
export async function insertCampaignMessages(
  trx: Trx,
  c: { accountId: string; phoneNumberId: string; templateId: string; templateName: string; campaignId: string },
  rows: SliceMessage[],
  now: Date,
): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    INSERT INTO messages (id, account_id, conversation_id, contact_id, phone_number_id, direction, type, text,
      template_id, template_name, template_variables, to_phone, status, campaign_id, source, created_at, updated_at)
    SELECT v.id, ${c.accountId}::uuid, v.conversation_id, v.contact_id, ${c.phoneNumberId}::uuid, 'outbound', 'template', NULL,
      ${c.templateId}::uuid, ${c.templateName}, v.variables::jsonb, v.phone, 'pending', ${c.campaignId}::uuid, 'campaign',
      ${now}::timestamptz, ${now}::timestamptz
    FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.conversationId)}::uuid[], ${rows.map((r) => r.contactId)}::uuid[],
      ${rows.map((r) => JSON.stringify(r.variables))}::text[], ${rows.map((r) => r.phone)}::text[])
      AS v(id, conversation_id, contact_id, variables, phone)`.execute(trx);
}

/** Messages that were never handed to the provider (a slice given back): as if never written. */
export async function dropUnsent(trx: Executor, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await sql`DELETE FROM messages WHERE id = any(${ids}::uuid[]) AND status = 'pending' AND wamid IS NULL`.execute(trx);
}

export interface FailedSend {
  id: string;
  contactId: string;
  error: ProviderError;
}

/**
 * The provider's answers for many messages of a slice: `sent` with their wamid, or `failed` with
 * the provider's code and reason (131050 also marks the contact's marketingOptOut). Only messages
 * still `pending` move. The contacts before their messages (docs/architecture.md "Lock order").
 */
export async function storeSendOutcomes(trx: Trx, sent: { id: string; wamid: string }[], failed: FailedSend[], now: Date): Promise<void> {
  for (const f of failed) if (f.error.code === MARKETING_BLOCKED) await markMarketingOptOut(trx, f.contactId, now);
  if (sent.length > 0) {
    await sql`
      UPDATE messages m SET wamid = v.wamid, status = 'sent', sent_at = ${now}::timestamptz, updated_at = ${now}::timestamptz
      FROM unnest(${sent.map((x) => x.id)}::uuid[], ${sent.map((x) => x.wamid)}::text[]) AS v(id, wamid)
      WHERE m.id = v.id AND m.status = 'pending'`.execute(trx);
  }
  if (failed.length > 0) {
    await sql`
      UPDATE messages m SET status = 'failed', code = v.code, error = v.error, failed_at = ${now}::timestamptz, updated_at = ${now}::timestamptz
      FROM unnest(${failed.map((x) => x.id)}::uuid[], ${failed.map((x) => x.error.code)}::int[], ${failed.map((x) => x.error.reason)}::text[])
        AS v(id, code, error)
      WHERE m.id = v.id AND m.status = 'pending'`.execute(trx);
  }
}

/** Any failure of a provider call as a ProviderError (ours, unexpected: temporary, as send.ts does). */
export function asProviderError(err: unknown): ProviderError {
  return err instanceof ProviderError ? err : new ProviderError('temporary', providerReason('unexpected'), null);
}

/** The error a caller is answered for a provider's refusal (api.md §7: window/template 409, else 502). */
export function providerApiError(pe: ProviderError, messageId: string, social = false): ApiError {
  const opts = { params: { reason: pe.reason }, extra: { code: pe.code, messageId } };
  switch (pe.kind) {
    case 'window':
      // Instagram has no templates to suggest.
      return new ApiError(social ? 'provider_window_social' : 'provider_window', opts);
    case 'template':
      return new ApiError('provider_template', opts);
    case 'temporary':
      return new ApiError('provider_temporary', opts);
    default:
      return new ApiError('provider_rejected', opts);
  }
}
