// The providers of this process, by name (decisions.md, "Channel").
import type { ChannelProvider, ChannelRegistry } from './types.js';

export class Channels implements ChannelRegistry {
  private readonly providers = new Map<string, ChannelProvider>();
  register(p: ChannelProvider): void {
    this.providers.set(p.name, p);
  }
  get(name: string): ChannelProvider {
    const p = this.providers.get(name);
    if (!p) throw new Error(`channel provider "${name}" is not configured`);
    return p;
  }
  async close(): Promise<void> {
    for (const p of this.providers.values()) await p.close?.();
  }
}
