// The sandbox channel (operator.md, "Sandbox channel"): accepts sends, reports statuses.
// Test numbers work like a card network's test cards, by the recipient's last four digits:
// 0001 accepted then failed 131026; 0002 rejected at send; 0003 blocks MARKETING templates (131050).
// With SANDBOX_AUTO_STATUS=on the reports it makes later are rows (sandbox_reports) with a
// `run_at`, applied by the `sandbox-statuses` job by the service's clock: a restart loses none
// and tests move them with the injected clock.

import { randomUUID } from 'node:crypto';
import { providerReason } from '../../http/messages.es-AR.js';
import { newId } from '../../lib/ids.js';
import { type DeliveryStatus, isDeliveryStatus, MARKETING_BLOCKED, reportStatus } from '../../messages/status.js';
import type { Services } from '../../services.js';
import { type ChannelProvider, ProviderError, type SendRequest, type SendResult } from '../types.js';

/** Could not deliver (the number has no channel account): what 0001 reports. */
export const UNDELIVERABLE = 131026;
/** Recipient not allowed: what 0002 answers at send. */
export const RECIPIENT_NOT_ALLOWED = 131030;

/** With SANDBOX_AUTO_STATUS=on: delivered after ~1 s, read after ~3 s, test failures after ~1 s. */
export const DELIVERED_AFTER_MS = 1000;
export const READ_AFTER_MS = 3000;
export const FAIL_AFTER_MS = 1000;
/** A claimed report not applied within this time (its process died) is due again. */
const CLAIM_MS = 60_000;
/** Reports claimed per statement. */
const CLAIM_BATCH = 200;

type Later = { status: DeliveryStatus; code: number | null; afterMs: number };

export class SandboxProvider implements ChannelProvider {
  readonly name = 'sandbox' as const;

  constructor(private readonly services: Services) {}

  async send(req: SendRequest): Promise<SendResult> {
    const last4 = req.to.slice(-4);
    if (last4 === '0002') throw new ProviderError('rejected', providerReason('sandbox_rejected'), RECIPIENT_NOT_ALLOWED);
    const wamid = `wamid.SBX${randomUUID().replace(/-/g, '').toUpperCase()}`;
    const failure =
      last4 === '0001' ? UNDELIVERABLE : last4 === '0003' && req.template?.category === 'MARKETING' ? MARKETING_BLOCKED : null;
    if (this.services.config.SANDBOX_AUTO_STATUS) {
      const later: Later[] =
        failure !== null
          ? [{ status: 'failed', code: failure, afterMs: FAIL_AFTER_MS }]
          : [
              { status: 'delivered', code: null, afterMs: DELIVERED_AFTER_MS },
              { status: 'read', code: null, afterMs: READ_AFTER_MS },
            ];
      await this.schedule(wamid, req.messageId, later);
    } else if (failure !== null) {
      // Without auto statuses the failure is reported at once: the send has not stored the wamid
      // yet, so it is kept as an early status and applied as soon as it does.
      await reportStatus(this.services, { wamid, status: 'failed', code: failure, at: this.services.clock.now() }).catch((err) =>
        this.services.log.error({ err, wamid }, 'sandbox status report failed'),
      );
    }
    return { wamid };
  }

  /**
   * Writes the reports the sandbox makes later, with our message id (as Meta echoes
   * `biz_opaque_callback_data`): a report reconciles a send whose wamid was never stored. The send
   * stands even if this fails (logged).
   */
  private async schedule(wamid: string, messageId: string, later: Later[]): Promise<void> {
    const now = this.services.clock.ms();
    const rows = later.map((l) => {
      const at = new Date(now + l.afterMs);
      return {
        id: newId(),
        wamid,
        message_id: messageId,
        status: l.status,
        code: l.code,
        reported_at: at,
        run_at: at,
        created_at: new Date(now),
      };
    });
    await this.services.db
      .insertInto('sandbox_reports')
      .values(rows)
      .execute()
      .catch((err) => this.services.log.error({ err, wamid }, 'sandbox status reports not scheduled'));
  }
}

/**
 * The `sandbox-statuses` job: applies the scheduled reports now due by the service's clock
 * through the status machine, oldest first. Each is claimed first (FOR UPDATE SKIP LOCKED, its
 * `run_at` pushed by CLAIM_MS) so two processes never apply one together, and deleted once
 * applied; a process that dies in between leaves it to be applied again, which the forward-only
 * machine makes harmless. Returns how many reports were applied.
 */
export async function applyDueSandboxReports(s: Services): Promise<number> {
  let done = 0;
  for (;;) {
    const now = s.clock.now();
    const claimed = await s.db
      .updateTable('sandbox_reports')
      .set({ run_at: new Date(now.getTime() + CLAIM_MS) })
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('sandbox_reports')
          .select('id')
          .where('run_at', '<=', now)
          .orderBy('run_at')
          .limit(CLAIM_BATCH)
          .forUpdate()
          .skipLocked(),
      )
      .returning(['id', 'wamid', 'message_id', 'status', 'code', 'reported_at'])
      .execute();
    claimed.sort((a, b) => a.reported_at.getTime() - b.reported_at.getTime());
    const applied: string[] = [];
    for (const r of claimed) {
      try {
        if (isDeliveryStatus(r.status)) {
          await reportStatus(s, { wamid: r.wamid, status: r.status, code: r.code, at: r.reported_at, messageId: r.message_id });
        }
        applied.push(r.id);
      } catch (err) {
        // Left claimed: due again when the claim lapses.
        s.log.warn({ err: { message: (err as Error).message }, wamid: r.wamid }, 'sandbox status report failed');
      }
    }
    if (applied.length > 0) await s.db.deleteFrom('sandbox_reports').where('id', 'in', applied).execute();
    done += applied.length;
    if (claimed.length < CLAIM_BATCH) return done;
  }
}
