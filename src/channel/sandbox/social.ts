// The sandbox's social accounts (operator.md "Social accounts"): a send is taken at once with an
// invented Instagram-like `mid`; nothing is reported later.
import { randomUUID } from 'node:crypto';
import type { SendResult, SocialProvider } from '../types.js';

export class SandboxSocialProvider implements SocialProvider {
  readonly name = 'sandbox' as const;

  async send(): Promise<SendResult> {
    return { wamid: `mid.SBX${randomUUID().replace(/-/g, '').toUpperCase()}` };
  }
}
