// Campaigns (decisions.md "Campaigns"): a template sent to an audience chosen by attribute filters.
// draft → scheduled (scheduledAt in the future) → sending → completed (`campaign.completed`);
// `failed` when the campaign itself cannot send (template gone or unapproved, no number);
// `cancelled` by the operator. The audience is fixed when sending starts (campaign_recipients);
// the `campaigns` job sends it (sender.ts). delivered/read/failed after the send are moved by the
// status machine (messages/status.ts, through counters.ts).
import { sql } from 'kysely';
import { emitConsoleEvent } from '../console/bus.js';
import type { Executor, Trx } from '../db/index.js';
import type { AccountRow, CampaignRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { isUuid, newId } from '../lib/ids.js';
import { numberForSend, templateForSend } from '../messages/send-from.js';
import type { Services } from '../services.js';
import type { CampaignInput, CampaignView } from './schemas.js';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function campaignView(c: CampaignRow): CampaignView {
  return {
    id: c.id,
    name: c.name,
    status: c.status as CampaignView['status'],
    phoneNumberId: c.phone_number_id,
    templateId: c.template_id,
    variables: c.variables ?? {},
    audience: c.audience ?? {},
    recipients: c.recipients,
    sent: c.sent,
    delivered: c.delivered,
    read: c.read,
    failed: c.failed,
    scheduledAt: iso(c.scheduled_at),
    startedAt: iso(c.started_at),
    completedAt: iso(c.completed_at),
    createdAt: c.created_at.toISOString(),
  };
}

/**
 * The console's `campaign.updated` (docs/console.md "Live updates"): the campaign as GET shows it,
 * after a change of its state or of its send counters. Written at most once a second per sending
 * campaign (outcomes.ts), never per message; delivered/read moves reach the console as the
 * `message.status` events they already are (each carries `campaignId`).
 */
export function campaignUpdated(ex: Executor, c: CampaignRow, now: Date): Promise<void> {
  return emitConsoleEvent(ex, c.account_id, 'campaign.updated', campaignView(c), now);
}

export async function getCampaign(db: Executor, accountId: string, id: string): Promise<CampaignRow> {
  if (!isUuid(id)) throw new ApiError('campaign_not_found');
  const c = await db.selectFrom('campaigns').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
  if (!c) throw new ApiError('campaign_not_found');
  return c;
}

/** GET /campaigns: the latest 100, newest first. */
export async function listCampaigns(db: Executor, accountId: string): Promise<CampaignView[]> {
  const rows = await db
    .selectFrom('campaigns')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(100)
    .execute();
  return rows.map(campaignView);
}

/**
 * The audience (decisions.md "Campaigns"): contacts that existed when sending started, with a
 * phone, whose attributes contain every filter, not opted out, and (MARKETING templates) without
 * marketingOptOut. A SQL condition on `contacts k`, shared by the count at start and the sender's
 * reads (sender.ts), so both always mean the same contacts.
 */
export function audienceCondition(c: Pick<CampaignRow, 'account_id' | 'audience' | 'started_at'>, marketing: boolean) {
  const filter = JSON.stringify(c.audience?.attributes ?? {});
  return sql<boolean>`k.account_id = ${c.account_id}::uuid
    AND k.created_at <= ${c.started_at}::timestamptz
    AND k.phone IS NOT NULL
    AND NOT k.opted_out
    AND (${!marketing}::boolean OR NOT k.marketing_opt_out)
    AND k.attributes @> ${filter}::jsonb`;
}

/**
 * Starts sending: the audience is counted, not copied (one aggregate, however large), so the first
 * message goes out at once; the sender reads the contacts in slices as it sends (sender.ts).
 */
export async function startInTrx(trx: Trx, c: CampaignRow, marketing: boolean, now: Date): Promise<CampaignRow> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM contacts k WHERE ${audienceCondition({ ...c, started_at: now }, marketing)}`.execute(trx);
  const n = rows[0]?.n ?? 0;
  return trx
    .updateTable('campaigns')
    .set({ status: 'sending', started_at: now, recipients: n, audience_counted: n, audience_open: n > 0, audience_cursor: null })
    .where('id', '=', c.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * POST /admin/v1/accounts/{id}/campaigns: validates template (404 / 409 not approved) and number
 * (409), then either schedules it (scheduledAt in the future) or fixes the audience and starts
 * sending at once (the `campaigns` job sends; it runs every few seconds).
 */
export async function createCampaign(s: Services, account: AccountRow, input: CampaignInput): Promise<CampaignView> {
  const template = await templateForSend(s.db, account.id, input.templateId);
  const number = await numberForSend(s.db, account.id, input.phoneNumberId);
  const now = s.clock.now();
  const scheduledAt = input.scheduledAt ? new Date(input.scheduledAt) : null;
  const later = scheduledAt !== null && scheduledAt.getTime() > now.getTime();
  const row = await s.db.transaction().execute(async (trx) => {
    const c = await trx
      .insertInto('campaigns')
      .values({
        id: newId(),
        account_id: account.id,
        name: input.name,
        status: later ? 'scheduled' : 'draft',
        template_id: template.id,
        phone_number_id: number.id,
        variables: JSON.stringify(input.variables ?? {}),
        audience: JSON.stringify(input.audience ?? {}),
        // api.md §2 types scheduledAt as a timestamp: a campaign sent at once is scheduled for now.
        scheduled_at: scheduledAt ?? now,
        created_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const out = later ? c : await startInTrx(trx, c, template.category === 'MARKETING', now);
    await campaignUpdated(trx, out, now);
    return out;
  });
  return campaignView(row);
}

/** The operator stops a scheduled or sending campaign: what was not sent yet is skipped. */
export async function cancelCampaign(s: Services, accountId: string, id: string): Promise<CampaignView> {
  const c = await getCampaign(s.db, accountId, id);
  const now = s.clock.now();
  const row = await s.db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('campaigns')
      .set({ status: 'cancelled', completed_at: now })
      .where('id', '=', c.id)
      .where('status', 'in', ['draft', 'scheduled', 'sending'])
      .returningAll()
      .executeTakeFirst();
    if (!updated) throw new ApiError('campaign_not_active');
    await trx
      .updateTable('campaign_recipients')
      .set({ status: 'skipped', error: 'cancelled', updated_at: now })
      .where('campaign_id', '=', c.id)
      .where('status', '=', 'pending')
      .execute();
    await campaignUpdated(trx, updated, now);
    return updated;
  });
  return campaignView(row);
}
