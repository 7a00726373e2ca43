// The social channel's providers go through the registry like a number's (issue 25: "Instagram
// sends become a channel provider like Cloud and sandbox (paced, mapped, one send path)").
import { describe, expect, it } from 'vitest';
import type { SocialAccountRow } from '../db/types.js';
import { ManualClock } from '../lib/clock.js';
import { MemoryPacer } from '../limits/pacer.js';
import { instagramThrottled } from './instagram/errors.js';
import { INSTAGRAM_PER_SECOND } from './paced.js';
import { Channels } from './registry.js';
import { ProviderError, type SendResult, type SocialProvider, type SocialSendRequest, ThroughputBusy } from './types.js';

/** An outside Instagram that takes every send (counts them). */
class TakesAll implements SocialProvider {
  readonly name = 'instagram' as const;
  sent: SocialSendRequest[] = [];
  async send(req: SocialSendRequest): Promise<SendResult> {
    this.sent.push(req);
    return { wamid: `mid.${this.sent.length}` };
  }
}

const account = (id: string) => ({ id, provider: 'instagram', ig_user_id: '1784', access_token: 't' }) as SocialAccountRow;
const send = (from: SocialAccountRow, n: number) => ({ messageId: `m${n}`, from, to: { userId: 'u1' }, text: 'hola', maxWaitMs: 0 });

describe('social channel providers in the registry', () => {
  it('"Instagram sends become a channel provider … paced": a social account\'s next send waits for its slot; another account has its own', async () => {
    const channels = new Channels(new MemoryPacer(new ManualClock(new Date('2026-01-01T00:00:00Z'))));
    const ig = new TakesAll();
    channels.registerSocial(ig, instagramThrottled);
    const a = account('0190aaaa-0000-7000-8000-000000000001');
    const b = account('0190aaaa-0000-7000-8000-000000000002');
    // Sent together (their slots are reserved in the same tick): the account's next slot is
    // 1000 / (93 % of INSTAGRAM_PER_SECOND) ms after its first, and these allow no wait.
    const social = channels.social('instagram');
    const [a1, a2, a3, b1] = await Promise.allSettled([
      social.send(send(a, 1)),
      social.send(send(a, 2)),
      social.send(send(a, 3)),
      social.send(send(b, 4)),
    ]);
    expect(a1.status).toBe('fulfilled');
    for (const r of [a2, a3]) {
      expect(r.status === 'rejected' && r.reason).toBeInstanceOf(ThroughputBusy);
      expect(r.status === 'rejected' && (r.reason as ThroughputBusy).perSecond).toBe(INSTAGRAM_PER_SECOND);
    }
    expect(b1.status).toBe('fulfilled');
    expect(ig.sent.map((r) => r.messageId)).toEqual(['m1', 'm4']);
    await channels.close();
  });

  it("Instagram's throttling codes slow the account down; its other refusals do not", () => {
    expect(instagramThrottled(new ProviderError('temporary', 'x', 4))).toBe(true);
    expect(instagramThrottled(new ProviderError('temporary', 'x', 613))).toBe(true);
    expect(instagramThrottled(new ProviderError('rejected', 'x', 551))).toBe(false);
    expect(instagramThrottled(new ProviderError('temporary', 'x', null))).toBe(false);
  });

  it('an unknown social provider is a programming error, not a send', () => {
    const channels = new Channels(new MemoryPacer(new ManualClock(new Date())));
    expect(() => channels.social('instagram')).toThrow(/not configured/);
  });
});
