// The sandbox channel (operator-api.md, "Sandbox channel"): accepts sends, reports statuses.
// Test numbers work like a card network's test cards, by the recipient's last four digits:
// 0001 accepted then failed 131026; 0002 rejected at send; 0003 blocks MARKETING templates (131050).
import { randomUUID } from 'node:crypto';
import { type DeliveryStatus, MARKETING_BLOCKED, reportStatus } from '../../messages/status.js';
import type { Services } from '../../services.js';
import { type ChannelProvider, ProviderError, type SendRequest, type SendResult } from '../types.js';

/** Could not deliver (the number has no channel account): what 0001 reports. */
export const UNDELIVERABLE = 131026;
/** Recipient not allowed: what 0002 answers at send. */
export const RECIPIENT_NOT_ALLOWED = 131030;

export const SANDBOX_REJECT_REASON = 'el número de destino no acepta mensajes (número de prueba del sandbox terminado en 0002).';

/** With SANDBOX_AUTO_STATUS=on: delivered after ~1 s, read after ~3 s, test failures after ~1 s. */
const DELIVERED_AFTER_MS = 1000;
const READ_AFTER_MS = 3000;
const FAIL_AFTER_MS = 1000;

export class SandboxProvider implements ChannelProvider {
  readonly name = 'sandbox' as const;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(private readonly services: Services) {}

  async send(req: SendRequest): Promise<SendResult> {
    const last4 = req.to.slice(-4);
    if (last4 === '0002') throw new ProviderError('rejected', SANDBOX_REJECT_REASON, RECIPIENT_NOT_ALLOWED);
    const wamid = `wamid.SBX${randomUUID().replace(/-/g, '').toUpperCase()}`;
    const auto = this.services.config.SANDBOX_AUTO_STATUS;
    const failure =
      last4 === '0001' ? UNDELIVERABLE : last4 === '0003' && req.template?.category === 'MARKETING' ? MARKETING_BLOCKED : null;
    if (failure !== null) {
      // Without auto statuses the failure is reported at once: the send has not stored the wamid
      // yet, so it is kept as an early status and applied as soon as it does.
      if (auto) this.later(wamid, 'failed', failure, FAIL_AFTER_MS);
      else await this.report(wamid, 'failed', failure);
    } else if (auto) {
      this.later(wamid, 'delivered', null, DELIVERED_AFTER_MS);
      this.later(wamid, 'read', null, READ_AFTER_MS);
    }
    return { wamid };
  }

  private report(wamid: string, status: DeliveryStatus, code: number | null): Promise<unknown> {
    const p = reportStatus(this.services, { wamid, status, code, at: this.services.clock.now() })
      .catch((err) => this.services.log.error({ err, wamid, status }, 'sandbox status report failed'))
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
    return p;
  }

  private later(wamid: string, status: DeliveryStatus, code: number | null, ms: number): void {
    if (this.closed) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (!this.closed) void this.report(wamid, status, code);
    }, ms);
    t.unref();
    this.timers.add(t);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await Promise.allSettled([...this.inFlight]);
  }
}
