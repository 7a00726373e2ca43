// The delivery status machine (api.md §3, decisions.md "Resources"): forward only.
// sent < delivered < read; failed may follow sent or delivered, never read, and is final. A report
// that repeats a status or would move it backward changes nothing and emits nothing.
import { sql } from 'kysely';
import { bumpCampaignCounters, recountReconciled } from '../campaigns/counters.js';
import { lockContact, markMarketingOptOut } from '../contacts/service.js';
import type { Trx } from '../db/index.js';
import { transaction } from '../db/retry.js';
import type { MessageRow } from '../db/types.js';
import { providerCodeText } from '../http/messages.es-AR.js';
import type { Services } from '../services.js';
import { emitEvent } from '../webhooks/outbox.js';

export type DeliveryStatus = 'sent' | 'delivered' | 'read' | 'failed';

export interface StatusReport {
  wamid: string;
  status: DeliveryStatus;
  /** Provider numeric code (with failed). */
  code?: number | null;
  /** When the provider says it happened. */
  at: Date;
  /**
   * Our message id, echoed by the provider (Cloud `biz_opaque_callback_data`, a sandbox report):
   * lets the report find a message whose wamid was never stored (reconcileInTrx).
   */
  messageId?: string | null;
  /** The number the report came on: a message is reconciled only if it left from it. */
  phoneNumberId?: string | null;
}

export interface StatusOutcome {
  /** The status moved (and one `message.status` event was written). */
  applied: boolean;
  /** No message has this wamid yet: the report was kept and is applied when the send stores it. */
  early?: boolean;
  /** The message's status after the report (null when unknown). */
  status?: string | null;
  messageId?: string | null;
}

/** The states each target may be reached from: the whole rule, applied inside one UPDATE. */
const FROM: Record<DeliveryStatus, string[]> = {
  sent: ['pending'],
  delivered: ['sent'],
  read: ['sent', 'delivered'],
  failed: ['sent', 'delivered'],
};

/** Provider code 131050: the person stopped accepting marketing messages (decisions.md "Channel"). */
export const MARKETING_BLOCKED = 131050;

/**
 * Of several reports for one message, the most advanced (api.md §3: one event). `read` outranks
 * `failed`: a message the recipient read was delivered, whatever else came with it.
 */
const PICK_RANK: Record<DeliveryStatus, number> = { sent: 1, delivered: 2, failed: 3, read: 4 };
export const mostAdvanced = <T extends { status: DeliveryStatus }>(reports: T[]): T | undefined =>
  reports.reduce<T | undefined>((best, r) => (!best || PICK_RANK[r.status] > PICK_RANK[best.status] ? r : best), undefined);

export const isDeliveryStatus = (s: string): s is DeliveryStatus => s in FROM;

type Applied = MessageRow & { previous: string };

/**
 * Moves the outbound message with `wamid` to `r.status` if the machine allows it, with its side
 * effects (campaign counters, marketingOptOut on 131050) and the `message.status` event, in `trx`.
 */
async function applyInTrx(trx: Trx, r: StatusReport, now: Date): Promise<Applied | null> {
  const code = r.status === 'failed' ? (r.code ?? null) : null;
  const error = r.status === 'failed' ? providerCodeText(code) : null;
  // 131050 changes the contact too: its lock comes before the message's (docs/architecture.md "Lock order").
  const blocked = code === MARKETING_BLOCKED ? await contactOfOutbound(trx, r.wamid) : undefined;
  if (blocked) await lockContact(trx, blocked);
  const to = sql`${r.status}::text`;
  const at = sql`${r.at}::timestamptz`;
  const from = sql.join(FROM[r.status].map((f) => sql.lit(f)));
  const { rows } = await sql<Applied>`
    WITH old AS (
      SELECT id, status FROM messages WHERE wamid = ${r.wamid} AND direction = 'outbound' FOR UPDATE
    )
    UPDATE messages m SET
      status = ${to},
      code = CASE WHEN ${to} = 'failed' THEN ${code}::int ELSE m.code END,
      error = CASE WHEN ${to} = 'failed' THEN ${error}::text ELSE m.error END,
      sent_at = COALESCE(m.sent_at, ${at}),
      delivered_at = CASE WHEN ${to} IN ('delivered', 'read') THEN COALESCE(m.delivered_at, ${at}) ELSE m.delivered_at END,
      read_at = CASE WHEN ${to} = 'read' THEN ${at} ELSE m.read_at END,
      failed_at = CASE WHEN ${to} = 'failed' THEN ${at} ELSE m.failed_at END,
      updated_at = ${now}
    FROM old
    WHERE m.id = old.id AND m.status IN (${from})
    RETURNING m.*, old.status AS previous`.execute(trx);
  const m = rows[0];
  if (!m) return null;

  if (m.campaign_id) await bumpCampaignCounters(trx, m.campaign_id, m.previous, r.status);
  if (blocked) await markMarketingOptOut(trx, m.contact_id, now);
  await emitEvent(
    trx,
    {
      accountId: m.account_id,
      kind: 'message.status',
      data: { id: m.id, wamid: m.wamid, status: m.status, campaignId: m.campaign_id, code: m.code, timestamp: r.at.toISOString() },
    },
    now,
  );
  return m;
}

/**
 * A report for a wamid no message has, carrying our message id (docs/cloud.md "Reconciliation"):
 * the provider took the send but its wamid was never stored (the process died), or is not stored
 * yet (the send is storing it). That message, still `pending` without a wamid (and from the
 * report's number), takes the wamid and leaves `pending` — `sent` at the report's time, or the
 * machine's own pending → sent for a `sent` report — and the report then runs through the machine
 * as any other (its event, its campaign counters). A message with another wamid is not touched.
 */
async function reconcileInTrx(trx: Trx, r: StatusReport & { messageId: string }, now: Date): Promise<Applied | null> {
  // 131050 locks the contact: before its message (docs/architecture.md "Lock order").
  if (r.status === 'failed' && r.code === MARKETING_BLOCKED) {
    const m = await trx.selectFrom('messages').select('contact_id').where('id', '=', r.messageId).executeTakeFirst();
    if (m) await lockContact(trx, m.contact_id);
  }
  const sentNow = r.status !== 'sent';
  let q = trx
    .updateTable('messages')
    .set({
      wamid: r.wamid,
      ...(sentNow ? { status: 'sent', sent_at: r.at } : {}),
      updated_at: now,
    })
    .where('id', '=', r.messageId)
    .where('direction', '=', 'outbound')
    .where('status', '=', 'pending')
    .where('wamid', 'is', null);
  if (r.phoneNumberId) q = q.where('phone_number_id', '=', r.phoneNumberId);
  const taken = await q.returning(['id', 'campaign_id', 'contact_id']).executeTakeFirst();
  if (!taken) return null;
  const m = await applyInTrx(trx, r, now);
  // A campaign recipient counted failed as "interrupted" was sent after all.
  if (taken.campaign_id) await recountReconciled(trx, taken.campaign_id, taken.contact_id, taken.id, now);
  return m;
}

const contactOfOutbound = async (trx: Trx, wamid: string): Promise<string | undefined> =>
  (await trx.selectFrom('messages').select('contact_id').where('wamid', '=', wamid).where('direction', '=', 'outbound').executeTakeFirst())
    ?.contact_id;

/** Applies one provider report; returns whether it moved the status (and emitted an event). */
export async function reportStatus(s: Services, r: StatusReport): Promise<StatusOutcome> {
  const now = s.clock.now();
  const out = await transaction(s.db, async (trx): Promise<StatusOutcome> => {
    const m = await applyInTrx(trx, r, now);
    if (m) return { applied: true, status: m.status, messageId: m.id };
    const existing = await trx.selectFrom('messages').select(['id', 'status']).where('wamid', '=', r.wamid).executeTakeFirst();
    if (existing) return { applied: false, status: existing.status, messageId: existing.id };
    const reconciled = r.messageId ? await reconcileInTrx(trx, { ...r, messageId: r.messageId }, now) : null;
    if (reconciled) return { applied: true, status: reconciled.status, messageId: reconciled.id };
    // The send may not have stored its wamid yet (architecture.md "Send"): keep it, never lose it.
    await trx
      .insertInto('early_statuses')
      .values({ wamid: r.wamid, status: r.status, code: r.code ?? null, reported_at: r.at, created_at: now })
      .execute();
    return { applied: false, early: true, status: null, messageId: null };
  });
  if (out.applied) s.dispatcher.wake();
  if (out.applied && out.status === 'failed') s.metrics.messageFailed('whatsapp', 'provider');
  if (out.early) {
    // The send may have stored the wamid between our read and our commit: look once more.
    const drained = await applyEarlyStatuses(s, r.wamid);
    if (drained) return { applied: true, early: false, status: drained.status, messageId: drained.id };
  }
  return out;
}

/**
 * Several reports at once (a provider batch): per wamid only the most advanced one is applied,
 * so a batch of delivered + read gives one `read` event (api.md §3).
 */
export async function reportStatuses(s: Services, reports: StatusReport[]): Promise<StatusOutcome[]> {
  const byWamid = new Map<string, StatusReport[]>();
  for (const r of reports) byWamid.set(r.wamid, [...(byWamid.get(r.wamid) ?? []), r]);
  const out: StatusOutcome[] = [];
  for (const group of byWamid.values()) {
    const pick = mostAdvanced(group);
    if (pick) out.push(await reportStatus(s, pick));
  }
  return out;
}

/**
 * Applies the reports kept for `wamid` before its message existed (called by the send when its
 * `sent` statement found some, or after a send found its message settled). The most advanced one
 * wins; each kept report is used once.
 */
export async function applyEarlyStatuses(s: Services, wamid: string): Promise<MessageRow | null> {
  // Nearly every send finds none: one indexed read instead of a transaction. A report kept after
  // this read drains itself (reportStatus looks again after its commit).
  const any = await s.db.selectFrom('early_statuses').select('wamid').where('wamid', '=', wamid).limit(1).executeTakeFirst();
  if (!any) return null;
  const now = s.clock.now();
  const applied = await transaction(s.db, async (trx) => {
    const exists = await trx.selectFrom('messages').select('id').where('wamid', '=', wamid).executeTakeFirst();
    if (!exists) return null;
    const kept = await trx.deleteFrom('early_statuses').where('wamid', '=', wamid).returningAll().execute();
    const reports = kept.filter((k) => isDeliveryStatus(k.status)).map((k) => ({ ...k, status: k.status as DeliveryStatus }));
    const pick = mostAdvanced(reports);
    if (!pick) return null;
    return applyInTrx(trx, { wamid, status: pick.status, code: pick.code, at: pick.reported_at }, now);
  });
  if (applied) s.dispatcher.wake();
  if (applied?.status === 'failed') s.metrics.messageFailed('whatsapp', 'provider');
  return applied;
}

/** Early reports whose wamid no send stored within this time are dropped (a typo, or another system's id). */
export const EARLY_STATUS_TTL_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Deletes early status reports older than 7 days (docs/decisions.md "Messages and channel"): a
 * send stores its wamid within seconds of the provider's answer, so a report still waiting after
 * a week will never find its message. Run by the `case-timeouts` job; returns how many went.
 */
export async function purgeEarlyStatuses(s: Services): Promise<number> {
  await applyStrandedEarlyStatuses(s);
  const before = new Date(s.clock.ms() - EARLY_STATUS_TTL_MS);
  const r = await s.db.deleteFrom('early_statuses').where('created_at', '<', before).executeTakeFirst();
  const n = Number(r.numDeletedRows ?? 0);
  if (n > 0) s.log.info({ purged: n }, 'early status reports older than 7 days deleted');
  return n;
}

/**
 * Early reports whose message has its wamid by now: applied. The send's `sent` statement asks for
 * early reports in its own snapshot (send.ts deliver), so a report without our message id kept
 * while that statement ran, and looked for again before it committed, is found here (the
 * `case-timeouts` job, every minute). Nearly always none: one read of a small table.
 */
async function applyStrandedEarlyStatuses(s: Services): Promise<void> {
  const stranded = await s.db
    .selectFrom('early_statuses as e')
    .innerJoin('messages as m', 'm.wamid', 'e.wamid')
    .select('e.wamid')
    .distinct()
    .execute();
  for (const { wamid } of stranded) await applyEarlyStatuses(s, wamid);
}

/** applyEarlyStatuses for many wamids just stored (a campaign slice): one read finds the few that have any. */
export async function applyEarlyStatusesOf(s: Services, wamids: string[]): Promise<void> {
  if (wamids.length === 0) return;
  const found = await s.db.selectFrom('early_statuses').select('wamid').distinct().where('wamid', 'in', wamids).execute();
  for (const { wamid } of found) await applyEarlyStatuses(s, wamid);
}
