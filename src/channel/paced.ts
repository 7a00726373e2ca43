// Every send of a WhatsApp number takes the number's next slot first (docs/performance.md
// "Throughput tiers and pacing"): the registry (registry.ts) hands out providers wrapped in this,
// so the API, campaigns, automations, agents and team sends are all paced, on the sandbox and on
// the Cloud API alike. Instagram sends are paced the same way per social account, at Instagram's
// rate (INSTAGRAM_PER_SECOND).

import type { PhoneNumberRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { providerReason } from '../http/messages.es-AR.js';
import { DEFAULT_MAX_WAIT_MS, type Pacer } from '../limits/pacer.js';
import { ProviderError, type SendResult, ThroughputBusy } from './types.js';

/** Graph's "rate limit hit" for the number's throughput (Cloud API error 130429). */
export const THROUGHPUT_CODE = 130429;

/** The column's default (migrations/0016): Meta's tier of a number that was never upgraded. */
const DEFAULT_TIER = 80;

/**
 * The number's tier. A row read without the column (a query that names its columns and forgot
 * this one) is paced at the default tier rather than not at all.
 */
export const tierOf = (number: PhoneNumberRow): number => {
  const t = number.throughput_per_second as number | undefined;
  return Number.isInteger(t) && t! >= 1 ? t! : DEFAULT_TIER;
};

/**
 * Instagram's Send API rate for text (Meta: 100 calls a second per professional account): the
 * social account's "tier", paced at the same 93 % as a number's.
 */
export const INSTAGRAM_PER_SECOND = 100;

/** What pacing reads of a send: who sends (its slots), its longest wait, a slot already taken. */
interface PacedRequest {
  from: { id: string };
  maxWaitMs?: number;
  slotTaken?: boolean;
}

/** A provider of either kind (types.ts ChannelProvider, SocialProvider). */
interface Provider<R> {
  readonly name: string;
  send(req: R): Promise<SendResult>;
  close?(): Promise<void>;
}

/** How one kind of sender is paced: its rate, and the provider's answer that it went too fast. */
export interface Pacing<R extends PacedRequest> {
  tier(from: R['from']): number;
  throttled(err: ProviderError): boolean;
}

/** A number: its tier; Graph's 130429. */
export const numberPacing: Pacing<{ from: PhoneNumberRow }> = {
  tier: tierOf,
  throttled: (err) => err.code === THROUGHPUT_CODE,
};

export class PacedProvider<R extends PacedRequest, P extends Provider<R>> {
  readonly name: P['name'];
  constructor(
    readonly inner: P,
    private readonly pacer: Pacer,
    private readonly pacing: Pacing<R>,
    /** How long a send waited for its slot (chasqui_pacer_wait_seconds). */
    private readonly waited: (seconds: number) => void = () => {},
  ) {
    this.name = inner.name;
  }

  /**
   * Waits for the sender's slot (at most `req.maxWaitMs`, default 2 s; none when the sender took it:
   * `req.slotTaken`), then sends. No slot in time → ThroughputBusy (nothing sent). The provider's
   * "too fast" (130429 on Graph) slows the sender down in every process, then is rethrown as the
   * ProviderError it is.
   */
  async send(req: R): Promise<SendResult> {
    const from = req.from;
    const tier = this.pacing.tier(from);
    const maxWaitMs = req.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
    if (!req.slotTaken) {
      const started = performance.now();
      const slot = await this.pacer.reserve(from.id, tier, maxWaitMs);
      if (!slot.ok) throw new ThroughputBusy(from.id, tier, Math.max(1, slot.waitMs - maxWaitMs));
      this.waited((performance.now() - started) / 1000);
    }
    try {
      return await this.inner.send(req);
    } catch (err) {
      if (err instanceof ProviderError && this.pacing.throttled(err)) this.pacer.slowDown(from.id);
      throw err;
    }
  }

  close(): Promise<void> {
    return this.inner.close?.() ?? Promise.resolve();
  }
}

/** The `error` a message that never went out keeps (status failed, code null): ours, not the provider's. */
export const throughputBusyReason = (busy: ThroughputBusy, social = false): string =>
  providerReason('number_throughput', { limit: busy.perSecond, channel: social ? 'instagram' : 'whatsapp' });

/** The API's answer to a send that found no slot in time: 429 number_throughput with Retry-After (seconds). */
export function throughputBusyError(busy: ThroughputBusy, messageId?: string, social = false): ApiError {
  return new ApiError('number_throughput', {
    params: { limit: busy.perSecond, channel: social ? 'instagram' : 'whatsapp' },
    headers: { 'retry-after': String(Math.max(1, Math.ceil(busy.retryAfterMs / 1000))) },
    ...(messageId ? { extra: { messageId } } : {}),
  });
}
