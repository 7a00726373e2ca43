// The provider call of one prepared campaign message and its outcome (sent, failed, or tried again
// later: CAMPAIGN_RETRY_SCHEDULE), and the outcomes written back in batches: the messages, then the
// campaign's counters, then the recipients (docs/architecture.md "Lock order").
import { sql } from 'kysely';
import { THROUGHPUT_CODE } from '../channel/paced.js';
import { ProviderError } from '../channel/types.js';
import { transaction } from '../db/retry.js';
import { asProviderError, providerApiError, storeSendOutcomes } from '../messages/batch.js';
import { applyEarlyStatusesOf } from '../messages/status.js';
import type { Services } from '../services.js';
import { campaignUpdated } from './service.js';
import type { Slice, SliceItem } from './slice.js';

/** Outcomes are written together: at most this many, or this long after the first. */
const FLUSH_MAX = 200;
const FLUSH_MS = 50;
/** The console's `campaign.updated` of a sending campaign: at most once this often (wall time). */
const LIVE_EVERY_MS = 1_000;
/** A recipient Graph refused with 130429 (the number's throughput) is tried again this much later. */
const THROTTLED_RETRY_MS = 1_000;

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
export async function callProvider(s: Services, slice: Extract<Slice, { kind: 'items' }>, item: SliceItem): Promise<Outcome> {
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
export class Outcomes {
  private buffer: Outcome[] = [];
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  /** When this run last wrote `campaign.updated` (performance.now()), and whether a change is not told yet. */
  private toldAt = Number.NEGATIVE_INFINITY;
  private untold = false;

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

  /**
   * Writes what is buffered, then tells the console the counters a throttled flush left untold
   * (one `campaign.updated` with the row as it is now). The end of a send run.
   */
  async settle(): Promise<void> {
    await this.flush();
    if (!this.untold) return;
    this.untold = false;
    const s = this.s;
    try {
      const c = await s.db.selectFrom('campaigns').selectAll().where('id', '=', this.campaignId).executeTakeFirst();
      if (c) await campaignUpdated(s.db, c, s.clock.now());
    } catch (err) {
      s.log.warn({ err: { message: (err as Error).message }, campaignId: this.campaignId }, 'campaign.updated not written');
    }
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
    const tell = performance.now() - this.toldAt >= LIVE_EVERY_MS;
    let changed = false;
    await transaction(s.db, async (trx) => {
      changed = false;
      // The messages, then the campaign row, then its recipients (docs/architecture.md "Lock
      // order"). The recipients are this run's own `sending` rows: nobody else moves them while the
      // job runs, so the batch's counts are the counters' exact steps.
      await storeSendOutcomes(trx, sent, failed, now);
      const nSent = batch.filter((o) => o.kind === 'sent').length;
      const nFailed = batch.filter((o) => o.kind === 'failed').length;
      if (nSent + nFailed > 0) {
        const c = await trx
          .updateTable('campaigns')
          .set((eb) => ({ sent: eb('sent', '+', nSent), failed: eb('failed', '+', nFailed) }))
          .where('id', '=', this.campaignId)
          .returningAll()
          .executeTakeFirst();
        // The console's live counters: one event per flush at most once a second, never per message.
        if (c && tell) await campaignUpdated(trx, c, now);
        changed = c !== undefined;
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
    if (changed && tell) {
      this.toldAt = performance.now();
      this.untold = false;
    } else if (changed) this.untold = true;
    // Reports that came before their wamid was stored apply now (send.ts does the same per send).
    await applyEarlyStatusesOf(
      s,
      sent.map((x) => x.wamid),
    ).catch((err) => s.log.warn({ err: { message: (err as Error).message } }, 'early statuses of a campaign slice'));
  }
}
