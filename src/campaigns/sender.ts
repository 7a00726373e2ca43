// The `campaigns` job: starts due campaigns, sends their recipients in paced batches through the
// same sendMessage as POST /messages (which never passes through the HTTP guards, so campaign
// sends never count against API limits), and completes the finished ones (`campaign.completed`).
import { sql } from 'kysely';
import { transaction } from '../db/retry.js';
import type { AccountRow, CampaignRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { sendMessage } from '../messages/send.js';
import type { Services } from '../services.js';
import { emitEvent } from '../webhooks/outbox.js';
import { campaignView, startInTrx } from './service.js';

/** Recipients claimed per round; messages per job run (the rest go on the next run). */
const CLAIM = 50;
const PER_RUN = 1000;
/** Sends in flight at once (the channel is paced per number; this keeps a batch short). */
const PARALLEL = 4;
/** A recipient left `sending` this long (the process died mid-send) is resolved from messages. */
const STUCK_MS = 5 * 60 * 1000;

/** ApiError codes that stop the whole campaign: no recipient could be sent either. */
const CAMPAIGN_FATAL = new Set([
  'template_not_found',
  'template_not_approved',
  'phone_number_unknown',
  'phone_number_disconnected',
  'no_connected_number',
]);

interface Recipient {
  campaign_id: string;
  contact_id: string;
  phone: string;
  /** Sends tried before this one. */
  attempts: number;
  /** The contact now (null: deleted since the audience was fixed). */
  opted_out: boolean | null;
  marketing_opt_out: boolean | null;
}

async function startDue(s: Services): Promise<number> {
  const now = s.clock.now();
  const due = await s.db
    .selectFrom('campaigns')
    .select('id')
    .where('status', '=', 'scheduled')
    .where('scheduled_at', '<=', now)
    .orderBy('scheduled_at')
    .limit(100)
    .execute();
  let n = 0;
  for (const { id } of due) {
    const started = await transaction(s.db, async (trx) => {
      const c = await trx
        .selectFrom('campaigns')
        .selectAll()
        .where('id', '=', id)
        .where('status', '=', 'scheduled')
        .forUpdate()
        .skipLocked()
        .executeTakeFirst();
      if (!c) return false;
      const t = c.template_id
        ? await trx.selectFrom('templates').select('category').where('id', '=', c.template_id).executeTakeFirst()
        : undefined;
      await startInTrx(trx, c, t?.category === 'MARKETING', now);
      return true;
    });
    if (started) n += 1;
  }
  return n;
}

/** Recipients stuck in `sending`: sent if their message got a wamid, else failed. */
async function resolveStuck(s: Services): Promise<number> {
  const now = s.clock.now();
  const { rows } = await sql<{ n: number }>`
    WITH stuck AS (
      SELECT r.campaign_id, r.contact_id,
        EXISTS (SELECT 1 FROM messages m WHERE m.campaign_id = r.campaign_id AND m.contact_id = r.contact_id AND m.wamid IS NOT NULL) AS was_sent
      FROM campaign_recipients r
      WHERE r.status = 'sending' AND r.updated_at <= ${new Date(now.getTime() - STUCK_MS)}::timestamptz
      FOR UPDATE SKIP LOCKED
    ), upd AS (
      UPDATE campaign_recipients r SET
        status = CASE WHEN stuck.was_sent THEN 'sent' ELSE 'failed' END,
        error = CASE WHEN stuck.was_sent THEN NULL ELSE 'interrupted' END,
        updated_at = ${now}::timestamptz
      FROM stuck WHERE r.campaign_id = stuck.campaign_id AND r.contact_id = stuck.contact_id
      RETURNING r.campaign_id, stuck.was_sent
    ), counts AS (
      SELECT campaign_id, count(*) FILTER (WHERE was_sent)::int AS sent, count(*) FILTER (WHERE NOT was_sent)::int AS failed
      FROM upd GROUP BY campaign_id
    ), bump AS (
      UPDATE campaigns c SET sent = c.sent + counts.sent, failed = c.failed + counts.failed
      FROM counts WHERE c.id = counts.campaign_id
      RETURNING 1
    )
    SELECT count(*)::int AS n FROM upd`.execute(s.db);
  return rows[0]?.n ?? 0;
}

/** Claims up to `limit` pending recipients of sending campaigns (oldest campaigns first). */
async function claim(s: Services, limit: number): Promise<Recipient[]> {
  const now = s.clock.now();
  const { rows } = await sql<Recipient>`
    WITH next AS (
      SELECT r.campaign_id, r.contact_id
      FROM campaign_recipients r
      JOIN campaigns c ON c.id = r.campaign_id AND c.status = 'sending'
      WHERE r.status = 'pending' AND (r.retry_at IS NULL OR r.retry_at <= ${now}::timestamptz)
      ORDER BY c.started_at, r.campaign_id, r.contact_id
      LIMIT ${limit}
      FOR UPDATE OF r SKIP LOCKED
    )
    UPDATE campaign_recipients r SET status = 'sending', updated_at = ${now}::timestamptz
    FROM next WHERE r.campaign_id = next.campaign_id AND r.contact_id = next.contact_id
    RETURNING r.campaign_id, r.contact_id, r.phone, r.attempts,
      (SELECT k.opted_out FROM contacts k WHERE k.id = r.contact_id) AS opted_out,
      (SELECT k.marketing_opt_out FROM contacts k WHERE k.id = r.contact_id) AS marketing_opt_out`.execute(s.db);
  return rows;
}

type SendResult =
  | { kind: 'sent'; messageId: string }
  | { kind: 'failed'; error: string; messageId?: string }
  | { kind: 'retry'; error: string; messageId?: string; at: Date }
  | { kind: 'skipped'; error: string }
  | { kind: 'fatal'; error: ApiError }
  /** Left `sending` for resolveStuck. */
  | { kind: 'unresolved' };

/** The recipient's error when the failure was ours (no database text is kept). */
const OURS = 'internal_error';

async function sendOne(s: Services, account: AccountRow, c: CampaignRow, marketing: boolean, r: Recipient): Promise<SendResult> {
  // The contact may have opted out since the audience was fixed (read when it was claimed).
  if (r.opted_out === null) return { kind: 'skipped', error: 'contact_deleted' };
  if (r.opted_out) return { kind: 'skipped', error: 'opted_out' };
  if (marketing && r.marketing_opt_out) return { kind: 'skipped', error: 'marketing_opt_out' };
  try {
    const m = await sendMessage(s, account, {
      to: r.phone,
      template: { id: c.template_id ?? '', variables: c.variables ?? {} },
      ...(c.phone_number_id ? { phoneNumberId: c.phone_number_id } : {}),
      campaignId: c.id,
    });
    return { kind: 'sent', messageId: m.id };
  } catch (err) {
    if (err instanceof ApiError && CAMPAIGN_FATAL.has(err.code)) return { kind: 'fatal', error: err };
    if (err instanceof ApiError && (err.code === 'send_opted_out' || err.code === 'contact_opted_out'))
      return { kind: 'skipped', error: 'opted_out' };
    if (!(err instanceof ApiError)) return oursFailed(s, c, r, err);
    const messageId = typeof err.extra.messageId === 'string' ? err.extra.messageId : undefined;
    const error = err.message.slice(0, 500);
    // Provider down, rate limited or too slow: this message failed, the recipient is tried again
    // later with a new one; after the last try of the schedule it counts as failed.
    const at = err.code === 'provider_temporary' ? retryAt(s, r) : null;
    if (at) return { kind: 'retry', error, at, ...(messageId ? { messageId } : {}) };
    return { kind: 'failed', error, ...(messageId ? { messageId } : {}) };
  }
}

/** When the recipient is tried again (CAMPAIGN_RETRY_SCHEDULE), or null after its last try. */
function retryAt(s: Services, r: Recipient): Date | null {
  const wait = s.config.CAMPAIGN_RETRY_SCHEDULE[r.attempts];
  return wait === undefined ? null : new Date(s.clock.ms() + wait * 1000);
}

/**
 * An error of ours (the database, a deadlock, a bug), never the recipient's: tried again like a
 * temporary refusal. If its message is still `pending` the provider may have taken it, so the
 * recipient stays `sending` and resolveStuck decides from the stored wamid (never sent twice).
 */
async function oursFailed(s: Services, c: CampaignRow, r: Recipient, err: unknown): Promise<SendResult> {
  s.log.warn({ err: { message: err instanceof Error ? err.message : String(err) }, campaignId: c.id }, 'campaign send failed');
  const inFlight = await s.db
    .selectFrom('messages')
    .select('id')
    .where('campaign_id', '=', c.id)
    .where('contact_id', '=', r.contact_id)
    .where('status', '=', 'pending')
    .executeTakeFirst()
    // Unreadable (the database is down): as unknown as a pending message.
    .catch(() => ({ id: null }));
  if (inFlight) return { kind: 'unresolved' };
  const at = retryAt(s, r);
  return at ? { kind: 'retry', error: OURS, at } : { kind: 'failed', error: OURS };
}

async function record(s: Services, r: Recipient, res: Exclude<SendResult, { kind: 'fatal' | 'unresolved' }>): Promise<void> {
  const now = s.clock.now();
  await transaction(s.db, async (trx) => {
    // The campaign row before its recipients (docs/architecture.md "Lock order"). A retry goes
    // back to pending until its time and counts nothing yet.
    if (res.kind !== 'retry') {
      await trx
        .updateTable('campaigns')
        .set((eb) =>
          res.kind === 'sent'
            ? { sent: eb('sent', '+', 1) }
            : res.kind === 'failed'
              ? { failed: eb('failed', '+', 1) }
              : // Skipped (opted out since the start): it is no longer a recipient.
                { recipients: eb('recipients', '-', 1) },
        )
        .where('id', '=', r.campaign_id)
        .execute();
    }
    await trx
      .updateTable('campaign_recipients')
      .set((eb) => ({
        status: res.kind === 'retry' ? 'pending' : res.kind,
        attempts: eb('attempts', '+', 1),
        retry_at: res.kind === 'retry' ? res.at : null,
        message_id: 'messageId' in res ? (res.messageId ?? null) : null,
        error: 'error' in res ? res.error : null,
        updated_at: now,
      }))
      .where('campaign_id', '=', r.campaign_id)
      .where('contact_id', '=', r.contact_id)
      .execute();
  });
}

/** The campaign cannot send at all: `failed`; its unsent recipients are skipped. */
async function failCampaign(s: Services, campaignId: string, err: ApiError): Promise<void> {
  const now = s.clock.now();
  s.log.warn({ campaignId, code: err.code }, 'campaign stopped');
  await transaction(s.db, async (trx) => {
    await trx
      .updateTable('campaigns')
      .set({ status: 'failed', completed_at: now })
      .where('id', '=', campaignId)
      .where('status', '=', 'sending')
      .execute();
    await trx
      .updateTable('campaign_recipients')
      .set({ status: 'skipped', error: err.code, updated_at: now })
      .where('campaign_id', '=', campaignId)
      .where('status', 'in', ['pending', 'sending'])
      .execute();
  });
}

/** Sending campaigns with nothing left to send become `completed` with `campaign.completed`. */
async function completeFinished(s: Services): Promise<number> {
  const now = s.clock.now();
  const done = await transaction(s.db, async (trx) => {
    const rows = await trx
      .updateTable('campaigns')
      .set({ status: 'completed', completed_at: now })
      .where('status', '=', 'sending')
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('campaign_recipients')
              .select('contact_id')
              .whereRef('campaign_recipients.campaign_id', '=', 'campaigns.id')
              .where('campaign_recipients.status', 'in', ['pending', 'sending']),
          ),
        ),
      )
      .returningAll()
      .execute();
    for (const c of rows) await emitEvent(trx, { accountId: c.account_id, kind: 'campaign.completed', data: campaignView(c) }, now);
    return rows.length;
  });
  if (done > 0) s.dispatcher.wake();
  return done;
}

/** The `campaigns` job: start due campaigns, send a paced batch, complete finished ones. */
export async function runCampaigns(s: Services): Promise<number> {
  let changed = (await startDue(s)) + (await resolveStuck(s));
  const accounts = new Map<string, AccountRow>();
  const campaigns = new Map<string, { c: CampaignRow; marketing: boolean; fatal: boolean }>();
  let budget = PER_RUN;
  while (budget > 0) {
    const batch = await claim(s, Math.min(CLAIM, budget));
    if (batch.length === 0) break;
    budget -= batch.length;
    for (const r of batch) {
      if (campaigns.has(r.campaign_id)) continue;
      const c = await s.db.selectFrom('campaigns').selectAll().where('id', '=', r.campaign_id).executeTakeFirstOrThrow();
      const t = c.template_id
        ? await s.db.selectFrom('templates').select('category').where('id', '=', c.template_id).executeTakeFirst()
        : undefined;
      campaigns.set(c.id, { c, marketing: t?.category === 'MARKETING', fatal: false });
      if (!accounts.has(c.account_id)) {
        accounts.set(c.account_id, await s.db.selectFrom('accounts').selectAll().where('id', '=', c.account_id).executeTakeFirstOrThrow());
      }
    }
    const queue = [...batch];
    const worker = async () => {
      for (let r = queue.shift(); r; r = queue.shift()) {
        const entry = campaigns.get(r.campaign_id)!;
        if (entry.fatal) continue;
        const res = await sendOne(s, accounts.get(entry.c.account_id)!, entry.c, entry.marketing, r);
        if (res.kind === 'fatal') {
          entry.fatal = true;
          await failCampaign(s, entry.c.id, res.error);
        } else if (res.kind !== 'unresolved') {
          await record(s, r, res);
        }
        changed += 1;
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
  }
  return changed + (await completeFinished(s));
}
