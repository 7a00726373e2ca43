// Bearer tokens resolved to what they name, cached briefly (docs/architecture.md "Auth"): API
// keys (etk_live_, keys/service.ts) and AI app tokens (etk_app_, mcp/apps.ts). A lookup is by the
// token's SHA-256, made once per token however many requests wait for it, and kept for `ttlMs`
// of the injected clock; a revocation or a plan change in this process forgets the account's
// entries at once, other processes see it within the TTL.
import { hash as oneShotHash } from 'node:crypto';
import type { Clock } from '../lib/clock.js';

// One-shot hashing (no Hash object): it runs on every request.
export const hashToken = (token: string): string => oneShotHash('sha256', token, 'hex');

/** The token of an `Authorization: Bearer <token>` header, if it has that form. */
export function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

interface CacheEntry<T> {
  value: T;
  /** Clock time (ms) the entry stops being used. */
  until: number;
}

export interface TokenCacheOptions<T> {
  /** The tokens of this kind (anything else is not looked up). */
  pattern: RegExp;
  maxLength: number;
  /** What a token's hash names, or null (unknown, revoked). */
  lookup(hash: string): Promise<T | null>;
  accountOf(value: T): string;
  ttlMs?: number;
}

export class TokenCache<T> {
  private cache = new Map<string, CacheEntry<T>>();
  private lookups = new Map<string, Promise<T | null>>();
  /** Bumped by every forget: a lookup that started before one is not cached. */
  private generation = 0;
  private readonly ttlMs: number;

  constructor(
    private readonly clock: Clock,
    private readonly o: TokenCacheOptions<T>,
  ) {
    this.ttlMs = o.ttlMs ?? 2_000;
  }

  /** The cache entry of a token's hash while it is fresh. */
  private hit(hash: string): CacheEntry<T> | undefined {
    const hit = this.cache.get(hash);
    return hit && hit.until > this.clock.ms() ? hit : undefined;
  }

  /** What the header's token names when it is cached (synchronous), else undefined: call `authenticate`. */
  cached(header: string | undefined): T | undefined {
    const token = bearer(header);
    // Longer than any token of this kind: not worth hashing.
    if (!token || token.length > this.o.maxLength) return undefined;
    return this.hit(hashToken(token))?.value;
  }

  async authenticate(token: string | undefined): Promise<T | null> {
    if (!token || !this.o.pattern.test(token)) return null;
    const hash = hashToken(token);
    const hit = this.hit(hash);
    if (hit) return hit.value;
    let lookup = this.lookups.get(hash);
    if (!lookup) {
      lookup = this.lookup(hash).finally(() => this.lookups.delete(hash));
      this.lookups.set(hash, lookup);
    }
    return lookup;
  }

  private async lookup(hash: string): Promise<T | null> {
    const generation = this.generation;
    const value = await this.o.lookup(hash);
    if (value === null || generation !== this.generation) return value;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(hash, { value, until: this.clock.ms() + this.ttlMs });
    return value;
  }

  /** Forget cached lookups of one account (after a revocation, a disconnection or a plan change). */
  forgetAccount(accountId: string): void {
    this.generation += 1;
    for (const [h, v] of this.cache) if (this.o.accountOf(v.value) === accountId) this.cache.delete(h);
  }
}
