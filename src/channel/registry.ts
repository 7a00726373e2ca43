// The providers of this process, by name (decisions.md, "Channel"). Sends go through `get` (a
// number's) and `social` (a social account's): each provider wrapped so that every send takes its
// sender's slot first (paced.ts).
import type { PhoneNumberRow } from '../db/types.js';
import type { Pacer } from '../limits/pacer.js';
import { INSTAGRAM_PER_SECOND, numberPacing, PacedProvider } from './paced.js';
import type { ChannelProvider, ChannelRegistry, ProviderError, SendRequest, SocialProvider, SocialSendRequest } from './types.js';

export class Channels implements ChannelRegistry {
  private readonly providers = new Map<string, PacedProvider<SendRequest, ChannelProvider>>();
  private readonly socialProviders = new Map<string, PacedProvider<SocialSendRequest, SocialProvider>>();
  constructor(
    private readonly pacer: Pacer,
    /** How long a send waited for its sender's slot (the metrics' pacer histogram). */
    private readonly waited: (seconds: number) => void = () => {},
  ) {}
  register(p: ChannelProvider): void {
    this.providers.set(p.name, new PacedProvider(p, this.pacer, numberPacing, this.waited));
  }
  /** `throttled`: the provider's answer that the account went too fast (it slows the account down). */
  registerSocial(p: SocialProvider, throttled: (err: ProviderError) => boolean = () => false): void {
    const pacing = { tier: () => INSTAGRAM_PER_SECOND, throttled };
    this.socialProviders.set(p.name, new PacedProvider(p, this.pacer, pacing, this.waited));
  }
  get(name: string): ChannelProvider {
    const p = this.providers.get(name);
    if (!p) throw new Error(`channel provider "${name}" is not configured`);
    return p;
  }
  social(name: string): SocialProvider {
    const p = this.socialProviders.get(name);
    if (!p) throw new Error(`social channel provider "${name}" is not configured`);
    return p;
  }
  async slot(number: PhoneNumberRow, maxWaitMs: number): Promise<boolean> {
    const started = performance.now();
    const ok = await this.pacer.take(number.id, number.throughput_per_second, maxWaitMs);
    if (ok) this.waited((performance.now() - started) / 1000);
    return ok;
  }
  unpaced(name: string): ChannelProvider {
    const p = this.providers.get(name);
    if (!p) throw new Error(`channel provider "${name}" is not configured`);
    return p.inner;
  }
  async close(): Promise<void> {
    for (const p of this.providers.values()) await p.close();
    for (const p of this.socialProviders.values()) await p.close();
    await this.pacer.close();
  }
}
