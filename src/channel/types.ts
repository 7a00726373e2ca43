// The channel provider boundary (decisions.md, "Channel"): the sandbox and the WhatsApp Cloud API
// implement it; the send path and the inbound path never know which one they talk to.
import type { PhoneNumberRow, TemplateVariable } from '../db/types.js';

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
}

export interface SendResult {
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

export interface ChannelProvider {
  readonly name: 'sandbox' | 'cloud';
  send(req: SendRequest): Promise<SendResult>;
  close?(): Promise<void>;
}

export interface ChannelRegistry {
  get(name: string): ChannelProvider;
}
