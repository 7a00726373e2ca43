// The channel provider boundary (decisions.md, "Channel"): the sandbox and the WhatsApp Cloud API
// implement it for WhatsApp numbers, the sandbox and Instagram for social accounts; the send path
// and the inbound path never know which one they talk to.
import type { PhoneNumberRow, SocialAccountRow, TemplateVariable } from '../db/types.js';

export interface OutboundTemplate {
  id: string;
  name: string;
  language: string;
  category: string;
  /** Parameters in the template's variable order (api.md §4 fallbacks already applied). */
  parameters: string[];
  /**
   * The template's variables in the same order: names (the Cloud API sends `parameter_name` for
   * named ones) and the component each goes to (body, header text, URL button).
   */
  variables: Pick<TemplateVariable, 'name' | 'component' | 'button'>[];
}

export interface SendRequest {
  /** Our message id (the provider may use it as a client reference). */
  messageId: string;
  from: PhoneNumberRow;
  /** Canonical digits of the recipient. */
  to: string;
  text?: string;
  template?: OutboundTemplate;
  /**
   * Longest wait (ms) for the number's next send slot (docs/performance.md "Throughput tiers and
   * pacing"); further away, the send throws ThroughputBusy without going out. Default
   * DEFAULT_MAX_WAIT_MS (2 s); a sender that can come back later (a campaign) asks less.
   */
  maxWaitMs?: number;
  /**
   * The sender already holds the number's slot for this send (ChannelRegistry.slot): a campaign
   * takes its slots one by one ahead of its calls, so it knows when to prepare the next slice.
   */
  slotTaken?: boolean;
}

/**
 * A send on the social channel (docs/instagram.md "Outbound"): one text from a social account to a
 * user's Instagram-scoped id, or a comment's one private reply. Paced per social account like a
 * number's sends (`maxWaitMs`, `slotTaken` as in SendRequest).
 */
export interface SocialSendRequest {
  messageId: string;
  from: SocialAccountRow;
  to: { userId: string } | { commentId: string };
  text: string;
  maxWaitMs?: number;
  slotTaken?: boolean;
}

export interface SendResult {
  /** The provider's message id (a WhatsApp wamid, an Instagram mid), kept in `messages.wamid`. */
  wamid: string;
}

/**
 * A provider refused or could not take a send. `kind` decides the status of our answer:
 * window/template → 409, rejected/auth/temporary → 502 (api.md §7).
 */
export class ProviderError extends Error {
  constructor(
    readonly kind: 'window' | 'template' | 'rejected' | 'temporary' | 'auth',
    /** Spanish reason shown to the caller. */
    readonly reason: string,
    readonly code: number | null = null,
  ) {
    super(reason);
  }
}

/**
 * The number already sends at its tier: its next slot is further than the send's `maxWaitMs`
 * (channel/paced.ts). Nothing went out and nothing was reserved; try again after `retryAfterMs`.
 * Not a ProviderError: the provider was never called.
 */
export class ThroughputBusy extends Error {
  constructor(
    /** The number (or the social account) whose slots are taken. */
    readonly phoneNumberId: string,
    /** The number's tier (messages a second). */
    readonly perSecond: number,
    /** When a slot within the same wait would be free (ms from now). */
    readonly retryAfterMs: number,
  ) {
    super(`phone number ${phoneNumberId} sends at its tier (${perSecond}/s)`);
  }
}

export interface ChannelProvider {
  readonly name: 'sandbox' | 'cloud';
  send(req: SendRequest): Promise<SendResult>;
  close?(): Promise<void>;
}

/** A provider of social accounts (`social_accounts.provider`): the sandbox's, Instagram's. */
export interface SocialProvider {
  readonly name: 'sandbox' | 'instagram';
  send(req: SocialSendRequest): Promise<SendResult>;
  close?(): Promise<void>;
}

export interface ChannelRegistry {
  /** The provider whose sends are paced per number (every send goes through it). */
  get(name: string): ChannelProvider;
  /** The social account's provider, its sends paced per social account. */
  social(name: string): SocialProvider;
  /** The provider itself, for what is not a send (the Cloud API's template sync). */
  unpaced(name: string): ChannelProvider;
  /**
   * Takes the number's next send slot and waits for it (false, nothing taken, when it is further
   * than maxWaitMs away); the send that uses it says `slotTaken`.
   */
  slot(number: PhoneNumberRow, maxWaitMs: number): Promise<boolean>;
}
