// The `campaigns` job: starts due campaigns, sends their audience at the number's throughput tier
// (docs/performance.md "Campaigns"), and completes the finished ones (`campaign.completed`).
// A campaign is sent in slices of about 200 ms of its number's tier: each slice's recipients,
// conversations and `pending` messages are written in one transaction (the recipients `sending`:
// their start is recorded before any call), the provider calls go out one per slot of the number's
// pacer, outside any transaction, and their outcomes are written back in batches. Campaign sends
// never pass through the HTTP guards, so they never count against API limits; they follow
// sendMessage's rules (send.ts) for the template, the number, the variables and the provider's
// answers.
import { sql } from 'kysely';
import { THROUGHPUT_CODE } from '../channel/paced.js';
import { ProviderError } from '../channel/types.js';
import { conversationsForMany } from '../conversations/service.js';
import { transaction } from '../db/retry.js';
import type { PhoneNumberRow, TemplateRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { newId } from '../lib/ids.js';
import { asProviderError, dropUnsent, insertCampaignMessages, providerApiError, storeSendOutcomes } from '../messages/batch.js';
import { numberForSend, resolveVariables, templateForSend } from '../messages/send-from.js';
import { applyEarlyStatusesOf } from '../messages/status.js';
import type { Services } from '../services.js';
import { emitEvent } from '../webhooks/outbox.js';
import { audienceCondition, campaignView, startInTrx } from './service.js';

/** A slice: the recipients prepared together, worth this long of the number's tier. */
const SLICE_S = 0.2;
const SLICE_MAX = 200;
/** Slices prepared ahead of the one being sent. */
const PREPARED_AHEAD = 2;
/** Provider calls of one campaign in flight at once (a slow Graph: the lane waits). */
const MAX_IN_FLIGHT = 1_000;
/** Outcomes are written together: at most this many, or this long after the first. */
const FLUSH_MAX = 200;
const FLUSH_MS = 50;
/** Campaigns sent at once by one run. */
const LANES = 8;
/** A recipient Graph refused with 130429 (the number's throughput) is tried again this much later. */
const THROTTLED_RETRY_MS = 1_000;
/**
 * How long a campaign send may wait for its slot before the rest of the slice is given back. A
 * campaign reserves at most a slice and a half ahead, so this only runs out when other senders
 * fill the number (then the campaign waits its turn) or when the process is so starved that a
 * send woke too late and had to reserve again; 1 s gave up slices that way on a loaded CI machine.
 */
const SLOT_WAIT_MS = 5_000;

/** ApiError codes that stop the whole campaign: no recipient could be sent either. */
const CAMPAIGN_FATAL = new Set([
  'template_not_found',
  'template_not_approved',
  'phone_number_unknown',
  'phone_number_disconnected',
  'no_connected_number',
]);

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

/**
 * Recipients left `sending` by a process that died mid-slice: sent if their message got a wamid,
 * else failed ("interrupted": the provider may have taken it, so it is never sent again). Only one
 * run sends campaigns at a time (the job's advisory lock; in-process chaining on PGlite) and a run
 * writes every outcome before it ends, so at the start of a run every `sending` row is an orphan.
 */
async function resolveStuck(s: Services): Promise<number> {
  const now = s.clock.now();
  const { rows } = await sql<{ n: number }>`
    WITH stuck AS (
      SELECT r.campaign_id, r.contact_id,
        EXISTS (SELECT 1 FROM messages m WHERE m.id = r.message_id AND m.wamid IS NOT NULL) AS was_sent
      FROM campaign_recipients r
      WHERE r.status = 'sending'
      FOR UPDATE SKIP LOCKED
    ), upd AS (
      UPDATE campaign_recipients r SET
        status = CASE WHEN stuck.was_sent THEN 'sent' ELSE 'failed' END,
        error = CASE WHEN stuck.was_sent THEN NULL ELSE 'interrupted' END,
        attempts = r.attempts + 1,
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

/** One recipient of a slice, its message written `pending` and the recipient `sending`. */
interface SliceItem {
  contactId: string;
  messageId: string;
  phone: string;
  /** Sends tried before this one. */
  attempts: number;
  variables: Record<string, string>;
}

type Slice =
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
async function prepareSlice(s: Services, campaignId: string): Promise<Slice> {
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
async function giveBack(s: Services, campaignId: string, items: SliceItem[]): Promise<void> {
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

type Outcome = { item: SliceItem } & (
  | { kind: 'sent'; wamid: string }
  | { kind: 'failed'; error: ProviderError; text: string }
  | { kind: 'retry'; error: ProviderError; text: string; at: Date; counts: boolean }
);

/** When the recipient is tried again (CAMPAIGN_RETRY_SCHEDULE), or null after its last try. */
function retryAt(s: Services, attempts: number): Date | null {
  const wait = s.config.CAMPAIGN_RETRY_SCHEDULE[attempts];
  return wait === undefined ? null : new Date(s.clock.ms() + wait * 1000);
}

/** The provider call of one prepared message, outside any transaction; never rejects. */
async function callProvider(s: Services, slice: Extract<Slice, { kind: 'items' }>, item: SliceItem): Promise<Outcome> {
  const t = slice.template;
  try {
    const sent = await s.channels.get(slice.number.provider).send({
      messageId: item.messageId,
      from: slice.number,
      to: item.phone,
      slotTaken: true,
      template: {
        id: t.id,
        name: t.name,
        language: t.language,
        category: t.category,
        parameters: t.variables.map((v) => item.variables[v.name] ?? ''),
        variables: t.variables,
      },
    });
    s.metrics.messageSent('whatsapp', slice.number.provider);
    return { item, kind: 'sent', wamid: sent.wamid };
  } catch (err) {
    if (!(err instanceof ProviderError)) s.log.error({ err, messageId: item.messageId }, 'channel provider failed unexpectedly');
    // The message is stored failed whatever comes next (a retry is a new message).
    s.metrics.messageFailed('whatsapp', err instanceof ProviderError ? 'provider' : 'ours');
    const pe = asProviderError(err);
    const text = providerApiError(pe, item.messageId).message.slice(0, 500);
    // Graph's throughput refusal is the number's, not the recipient's: tried again soon, not counted
    // as a try (the number was slowed down by the provider wrapper).
    if (pe.code === THROUGHPUT_CODE)
      return { item, kind: 'retry', error: pe, text, at: new Date(s.clock.ms() + THROTTLED_RETRY_MS), counts: false };
    // Provider down, rate limited or too slow: tried again later with a new message; after the
    // last try of the schedule it counts as failed.
    const at = pe.kind === 'temporary' ? retryAt(s, item.attempts) : null;
    if (at) return { item, kind: 'retry', error: pe, text, at, counts: true };
    return { item, kind: 'failed', error: pe, text };
  }
}

/**
 * The outcomes of a campaign's provider calls, written together (one transaction per
 * FLUSH_MAX outcomes or FLUSH_MS): the messages, the campaign's counters and the recipients.
 */
class Outcomes {
  private buffer: Outcome[] = [];
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly s: Services,
    private readonly campaignId: string,
  ) {}

  add(o: Outcome): void {
    this.buffer.push(o);
    if (this.buffer.length >= FLUSH_MAX) this.flush();
    else if (!this.timer) this.timer = setTimeout(() => this.flush(), FLUSH_MS);
  }

  /** Writes what is buffered; resolves when every write so far is done. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.buffer.splice(0);
    if (batch.length > 0) this.chain = this.chain.then(() => this.write(batch));
    return this.chain;
  }

  private async write(batch: Outcome[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.writeOnce(batch);
        return;
      } catch (err) {
        // The database is away: the outcomes are kept and written again (a few tries); after
        // that the recipients stay `sending` and the next run resolves them (never sent twice).
        if (attempt >= 4) {
          this.s.log.error({ err: { message: (err as Error).message }, campaignId: this.campaignId }, 'campaign outcomes not stored');
          return;
        }
        await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
      }
    }
  }

  private async writeOnce(batch: Outcome[]): Promise<void> {
    const s = this.s;
    const now = s.clock.now();
    const sent = batch.flatMap((o) => (o.kind === 'sent' ? [{ id: o.item.messageId, wamid: o.wamid }] : []));
    const failed = batch.flatMap((o) => (o.kind === 'sent' ? [] : [{ id: o.item.messageId, contactId: o.item.contactId, error: o.error }]));
    await transaction(s.db, async (trx) => {
      // The messages, then the campaign row, then its recipients (docs/architecture.md "Lock
      // order"). The recipients are this run's own `sending` rows: nobody else moves them while the
      // job runs, so the batch's counts are the counters' exact steps.
      await storeSendOutcomes(trx, sent, failed, now);
      const nSent = batch.filter((o) => o.kind === 'sent').length;
      const nFailed = batch.filter((o) => o.kind === 'failed').length;
      if (nSent + nFailed > 0) {
        await trx
          .updateTable('campaigns')
          .set((eb) => ({ sent: eb('sent', '+', nSent), failed: eb('failed', '+', nFailed) }))
          .where('id', '=', this.campaignId)
          .execute();
      }
      await sql`
        UPDATE campaign_recipients r SET status = v.status, attempts = r.attempts + v.inc, retry_at = v.retry_at::timestamptz,
          message_id = v.message_id, error = v.error, updated_at = ${now}::timestamptz
        FROM unnest(${batch.map((o) => o.item.contactId)}::uuid[], ${batch.map((o) => (o.kind === 'retry' ? 'pending' : o.kind))}::text[],
          ${batch.map((o) => (o.kind === 'retry' && !o.counts ? 0 : 1))}::int[],
          ${batch.map((o) => (o.kind === 'retry' ? o.at.toISOString() : null))}::text[],
          ${batch.map((o) => o.item.messageId)}::uuid[], ${batch.map((o) => (o.kind === 'sent' ? null : o.text))}::text[])
          AS v(contact_id, status, inc, retry_at, message_id, error)
        WHERE r.campaign_id = ${this.campaignId}::uuid AND r.contact_id = v.contact_id`.execute(trx);
    });
    // Reports that came before their wamid was stored apply now (send.ts does the same per send).
    await applyEarlyStatusesOf(
      s,
      sent.map((x) => x.wamid),
    ).catch((err) => s.log.warn({ err: { message: (err as Error).message } }, 'early statuses of a campaign slice'));
  }
}

/** Processes whose campaign sends were told to stop (shutdown): lanes give their slices back. */
const stopped = new WeakSet<Services>();
export function stopCampaignSends(s: Services): void {
  stopped.add(s);
}

/**
 * Sends one campaign until nothing of it is due: slices prepared one ahead, each send taking the
 * number's next slot first (so the campaign runs at the tier whatever Graph's latency, with as many
 * calls in flight as that takes), outcomes written in batches. Returns the recipients handled.
 * A giveBack that fails leaves its recipients `sending` with unsent messages: the next run counts
 * them `interrupted` (never sent twice).
 */
async function sendCampaign(s: Services, campaignId: string): Promise<number> {
  const stopping = () => stopped.has(s);
  const outcomes = new Outcomes(s, campaignId);
  const inFlight = new Set<Promise<void>>();
  /** Recipients whose slot did not come in time (the number is busy) or came after a stop. */
  const unsent: SliceItem[] = [];
  let handled = 0;
  // Slices prepared ahead (PREPARED_AHEAD): a slow transaction never leaves the number idle.
  // One after another: two prepared at once would race for the campaign row, and the one that
  // found nothing could come back first and end the run with the other's slice unsent.
  const ready: Promise<Slice>[] = [];
  let last: Promise<unknown> = Promise.resolve();
  const refill = () => {
    while (ready.length < PREPARED_AHEAD) {
      const next = last.then(() => prepareSlice(s, campaignId));
      last = next.catch(() => {});
      ready.push(next);
    }
  };
  refill();
  try {
    for (;;) {
      const slice: Slice = await ready.shift()!;
      if (slice.kind === 'done') break;
      if (slice.kind === 'fatal') {
        await Promise.allSettled(inFlight);
        await outcomes.flush();
        await failCampaign(s, campaignId, slice.error);
        handled += 1;
        break;
      }
      handled += slice.skipped;
      if (stopping()) {
        unsent.push(...slice.items);
        break;
      }
      // Every send of the slice reserves its slot now (one after another at the tier's interval)
      // and goes out when its slot comes; the reservations are made ahead, so a late timer delays
      // one send, never the number's pace.
      const slots = slice.items.map((item) => {
        const slot = s.channels.slot(slice.number, SLOT_WAIT_MS).catch(() => false);
        const p = slot.then(async (ok) => {
          if (!ok || stopping()) {
            unsent.push(item);
            return;
          }
          handled += 1;
          outcomes.add(await callProvider(s, slice, item));
        });
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
        return slot;
      });
      // The next slices are prepared meanwhile; the next one's slots are reserved once half of this
      // one's have come: the number always has about a slice reserved ahead, at most one and a half.
      refill();
      await slots[Math.floor(slots.length / 2)];
      // A busy number (its slots went to other senders) or a stop: the rest waits for the next run.
      if (unsent.length > 0 || stopping()) break;
      while (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight);
    }
  } catch (err) {
    // The database refused a slice (ours, never the recipients'): nothing of it was sent; the
    // next run prepares it again.
    s.log.warn({ err: { message: (err as Error).message }, campaignId }, 'campaign slice failed');
  } finally {
    for (const unused of await Promise.all(ready.splice(0).map((p) => p.catch(() => null)))) {
      if (unused?.kind === 'items') unsent.push(...unused.items);
    }
    await Promise.allSettled(inFlight);
    await giveBack(s, campaignId, unsent).catch((err) =>
      s.log.warn({ err: { message: (err as Error).message }, campaignId }, 'campaign slice not given back'),
    );
    await outcomes.flush();
  }
  return handled;
}

/** Sends every sending campaign that has something due, LANES campaigns at a time (oldest first). */
async function sendDue(s: Services): Promise<number> {
  const active = await s.db
    .selectFrom('campaigns')
    .select('id')
    .where('status', '=', 'sending')
    .orderBy('started_at')
    .orderBy('id')
    .execute();
  let handled = 0;
  let k = 0;
  const lane = async () => {
    while (k < active.length && !stopped.has(s)) handled += await sendCampaign(s, active[k++]!.id);
  };
  await Promise.all(Array.from({ length: Math.min(LANES, active.length) }, lane));
  return handled;
}

/** The campaign cannot send at all: `failed`; its unsent recipients are skipped. */
async function failCampaign(s: Services, campaignId: string, err: ApiError): Promise<void> {
  const now = s.clock.now();
  s.log.warn({ campaignId, code: err.code }, 'campaign stopped');
  await transaction(s.db, async (trx) => {
    await trx
      .updateTable('campaigns')
      .set({ status: 'failed', completed_at: now, audience_open: false })
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
      .where('audience_open', '=', false)
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

/** The `campaigns` job: start due campaigns, send what is due at each number's tier, complete finished ones. */
export async function runCampaigns(s: Services): Promise<number> {
  const changed = (await startDue(s)) + (await resolveStuck(s));
  return changed + (await sendDue(s)) + (await completeFinished(s));
}
