// Opening a case from the inbound path (api.md §3 "Case": a customer writes and no case is open).
import type { Trx } from '../db/index.js';

export interface OpenCaseInput {
  accountId: string;
  conversationId: string;
  contactId: string;
  /** Provider timestamp of the inbound message. */
  at: Date;
  /** The channel's ad referral of this message, if any. */
  referral?: { id: string; headline: string; sourceUrl: string };
}

/**
 * Inside the inbound transaction: when the conversation has no open case, opens one in the
 * account's default pipeline's first `open` stage and emits `case.opened`; otherwise updates
 * the open case's lastInboundAt. Returns the case id.
 */
export async function openCaseForInbound(_trx: Trx, _input: OpenCaseInput, _now: Date): Promise<string | null> {
  return null;
}
