// The inbound path (a customer writes): shared by the sandbox and the Cloud API receiver.
import type { Services } from '../services.js';

export interface InboundInput {
  accountId: string;
  /** Our phone_numbers.id that received it; null: the account's default number. */
  phoneNumberId: string | null;
  /** The customer's phone (any international spelling), or `socialchat` for the social channel. */
  from?: string;
  socialchat?: string;
  /** Profile name the channel reports. */
  name?: string;
  /** Provider message id (wamid); dedupe key. Generated when absent (sandbox). */
  providerMessageId?: string;
  /** text, image, video, audio, document, sticker, location, contacts, button, interactive, … */
  type: string;
  /** Text, caption, description or button text; null when none. */
  text: string | null;
  /** When the customer sent it (provider timestamp): the 24-hour window starts here. */
  timestamp: Date;
  /** A tapped template button: `optOut` when it is the template's opt-out button. */
  button?: { text: string; payload?: string; optOut?: boolean };
  /** The ad that brought the customer (channel referral). */
  referral?: { id: string; headline: string; sourceUrl: string };
}

export interface InboundResult {
  messageId: string;
  contactId: string;
  conversationId: string;
  /** The provider re-sent a message we already had: nothing was done again. */
  duplicate: boolean;
}

export async function receiveInbound(_s: Services, _input: InboundInput): Promise<InboundResult> {
  throw new Error('not implemented');
}
