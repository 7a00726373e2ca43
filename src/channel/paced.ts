// Every send of a WhatsApp number takes the number's next slot first (docs/performance.md
// "Throughput tiers and pacing"): the registry (registry.ts) hands out providers wrapped in this,
// so the API, campaigns, automations, agents and team sends are all paced, on the sandbox and on
// the Cloud API alike. Instagram sends do not go through a ChannelProvider: not paced.

import type { PhoneNumberRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { providerReason } from '../http/messages.es-AR.js';
import { DEFAULT_MAX_WAIT_MS, type Pacer } from '../limits/pacer.js';
import { type ChannelProvider, ProviderError, type SendRequest, type SendResult, ThroughputBusy } from './types.js';

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

export class PacedProvider implements ChannelProvider {
  readonly name: ChannelProvider['name'];
  constructor(
    readonly inner: ChannelProvider,
    private readonly pacer: Pacer,
    /** How long a send waited for its slot (chasqui_pacer_wait_seconds). */
    private readonly waited: (seconds: number) => void = () => {},
  ) {
    this.name = inner.name;
  }

  /**
   * Waits for the number's slot (at most `req.maxWaitMs`, default 2 s; none when the sender took it:
   * `req.slotTaken`), then sends. No slot in
   * time → ThroughputBusy (nothing sent). A 130429 slows the number down in every process, then
   * is rethrown as the ProviderError it is.
   */
  async send(req: SendRequest): Promise<SendResult> {
    const number = req.from;
    const tier = tierOf(number);
    const maxWaitMs = req.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
    if (!req.slotTaken) {
      const started = performance.now();
      const slot = await this.pacer.reserve(number.id, tier, maxWaitMs);
      if (!slot.ok) throw new ThroughputBusy(number.id, tier, Math.max(1, slot.waitMs - maxWaitMs));
      this.waited((performance.now() - started) / 1000);
    }
    try {
      return await this.inner.send(req);
    } catch (err) {
      if (err instanceof ProviderError && err.code === THROUGHPUT_CODE) this.pacer.slowDown(number.id);
      throw err;
    }
  }

  close(): Promise<void> {
    return this.inner.close?.() ?? Promise.resolve();
  }
}

/** The `error` a message that never went out keeps (status failed, code null): ours, not the provider's. */
export const throughputBusyReason = (busy: ThroughputBusy): string => providerReason('number_throughput', { limit: busy.perSecond });

/** The API's answer to a send that found no slot in time: 429 number_throughput with Retry-After (seconds). */
export function throughputBusyError(busy: ThroughputBusy, messageId?: string): ApiError {
  return new ApiError('number_throughput', {
    params: { limit: busy.perSecond },
    headers: { 'retry-after': String(Math.max(1, Math.ceil(busy.retryAfterMs / 1000))) },
    ...(messageId ? { extra: { messageId } } : {}),
  });
}
