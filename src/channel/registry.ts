// The providers of this process, by name (decisions.md, "Channel"). Sends go through `get`: each
// provider wrapped so that every send of a number takes the number's slot first (paced.ts).
import type { PhoneNumberRow } from '../db/types.js';
import type { Pacer } from '../limits/pacer.js';
import { PacedProvider } from './paced.js';
import type { ChannelProvider, ChannelRegistry } from './types.js';

export class Channels implements ChannelRegistry {
  private readonly providers = new Map<string, PacedProvider>();
  constructor(
    private readonly pacer: Pacer,
    /** How long a send waited for its number's slot (the metrics' pacer histogram). */
    private readonly waited: (seconds: number) => void = () => {},
  ) {}
  register(p: ChannelProvider): void {
    this.providers.set(p.name, new PacedProvider(p, this.pacer, this.waited));
  }
  get(name: string): ChannelProvider {
    const p = this.providers.get(name);
    if (!p) throw new Error(`channel provider "${name}" is not configured`);
    return p;
  }
  async slot(number: PhoneNumberRow, maxWaitMs: number): Promise<boolean> {
    const started = performance.now();
    const ok = await this.pacer.take(number.id, number.throughput_per_second, maxWaitMs);
    if (ok) this.waited((performance.now() - started) / 1000);
    return ok;
  }
  unpaced(name: string): ChannelProvider {
    return (this.get(name) as PacedProvider).inner;
  }
  async close(): Promise<void> {
    for (const p of this.providers.values()) await p.close();
    await this.pacer.close();
  }
}
