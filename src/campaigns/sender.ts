// The `campaigns` job: starts due campaigns, sends their audience at the number's throughput tier
// (docs/performance.md "Campaigns"), and completes the finished ones (`campaign.completed`).
// A campaign is sent in slices of about 200 ms of its number's tier: each slice's recipients,
// conversations and `pending` messages are written in one transaction (slice.ts: the recipients
// `sending`, their start recorded before any call), the provider calls go out one per slot of the
// number's pacer, outside any transaction (this file's send loop), and their outcomes are written
// back in batches (outcomes.ts). Campaign sends never pass through the HTTP guards, so they never
// count against API limits; they follow sendMessage's rules (send.ts) for the template, the
// number, the variables and the provider's answers.
import { sql } from 'kysely';
import { transaction } from '../db/retry.js';
import type { ApiError } from '../http/errors.js';
import type { Services } from '../services.js';
import { emitEvent } from '../webhooks/outbox.js';
import { callProvider, Outcomes } from './outcomes.js';
import { campaignUpdated, campaignView, startInTrx } from './service.js';
import { giveBack, prepareSlice, type Slice, type SliceItem } from './slice.js';

/** Slices prepared ahead of the one being sent. */
const PREPARED_AHEAD = 2;
/** Provider calls of one campaign in flight at once (a slow Graph: the lane waits). */
const MAX_IN_FLIGHT = 1_000;
/** Campaigns sent at once by one run. */
const LANES = 8;
/**
 * How long a campaign send may wait for its slot before the rest of the slice is given back. A
 * campaign reserves at most a slice and a half ahead, so this only runs out when other senders
 * fill the number (then the campaign waits its turn) or when the process is so starved that a
 * send woke too late and had to reserve again; 1 s gave up slices that way on a loaded CI machine.
 */
const SLOT_WAIT_MS = 5_000;

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
      await campaignUpdated(trx, await startInTrx(trx, c, t?.category === 'MARKETING', now), now);
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
    await outcomes.settle();
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
    const failed = await trx
      .updateTable('campaigns')
      .set({ status: 'failed', completed_at: now, audience_open: false })
      .where('id', '=', campaignId)
      .where('status', '=', 'sending')
      .returningAll()
      .executeTakeFirst();
    if (failed) await campaignUpdated(trx, failed, now);
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
