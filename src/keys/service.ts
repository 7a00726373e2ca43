// API keys (api.md §5): `etk_live_` + 40 random base64url characters, stored only as SHA-256.
import { hash as oneShotHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { sql } from 'kysely';
import type { Db, Executor } from '../db/index.js';
import type { AccountRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { effectiveLimits, type Limits, suggestPlan } from '../limits/plans.js';
import type { AccountLimitsCtx } from '../limits/types.js';
import type { Services } from '../services.js';

export const KEY_PREFIX = 'etk_live_';
const KEY_RE = /^etk_live_[A-Za-z0-9_-]{32,128}$/;
const MAX_KEY_LENGTH = KEY_PREFIX.length + 128;

// One-shot hashing (no Hash object): it runs on every request.
export const hashKey = (key: string): string => oneShotHash('sha256', key, 'hex');

export function generateKey(): string {
  return KEY_PREFIX + randomBytes(30).toString('base64url');
}

export const keyView = (k: { id: string; name: string; prefix: string; created_at: Date; revoked_at: Date | null }) => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  createdAt: k.created_at.toISOString(),
  revokedAt: k.revoked_at ? k.revoked_at.toISOString() : null,
});

/** Creates a key; at the plan's maximum of valid keys answers 402 (api.md §8). */
export async function createKey(db: Db, account: AccountRow, name: string, now: Date) {
  const limits = effectiveLimits(account.plan, account.limits);
  return db.transaction().execute(async (trx) => {
    // Serialise creations per account so two concurrent ones cannot both pass the maximum.
    await sql`SELECT id FROM accounts WHERE id = ${account.id} FOR UPDATE`.execute(trx);
    const { n } = await trx
      .selectFrom('api_keys')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('account_id', '=', account.id)
      .where('revoked_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (limits.apiKeys !== null && n >= limits.apiKeys) {
      throw new ApiError('api_key_limit', {
        params: { limit: limits.apiKeys },
        cause: {
          type: 'upgrade',
          reason: 'limit',
          resource: 'apiKeys',
          plan: account.plan,
          limit: limits.apiKeys,
          used: n,
          suggested: suggestPlan('apiKeys', n),
        },
      });
    }
    const key = generateKey();
    const row = await trx
      .insertInto('api_keys')
      .values({
        id: newId(),
        account_id: account.id,
        name,
        key_hash: hashKey(key),
        prefix: key.slice(0, KEY_PREFIX.length + 4),
        created_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { ...keyView(row), key };
  });
}

export async function listKeys(db: Executor, accountId: string) {
  const rows = await db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
  return rows.map(keyView);
}

/** Revokes a key: it answers 401 from now on (this process at once, others within the key cache's TTL). */
export async function revokeKey(s: Services, accountId: string, keyId: string): Promise<void> {
  const row = await s.db
    .updateTable('api_keys')
    .set({ revoked_at: sql`coalesce(revoked_at, ${s.clock.now()})` })
    .where('id', '=', keyId)
    .where('account_id', '=', accountId)
    .returning('id')
    .executeTakeFirst();
  if (!row) throw new ApiError('key_not_found');
  s.auth.forgetAccount(accountId);
}

export interface AuthContext {
  keyId: string;
  account: AccountRow;
  limits: Limits;
  /** What the limiter needs, built once per lookup rather than per request. */
  caps: AccountLimitsCtx;
}

/** The key of an `Authorization: Bearer <key>` header, if it has that form. */
export function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

interface CacheEntry {
  ctx: AuthContext;
  /** Clock time (ms) the entry stops being used. */
  until: number;
}

/**
 * Resolves a bearer key to its account. Lookups are cached briefly (a hot path on every
 * request) and made once per key however many requests wait for them; revocation and plan
 * changes in this process clear the cache at once, other processes see them within the TTL.
 */
export class KeyAuthenticator {
  private cache = new Map<string, CacheEntry>();
  private lookups = new Map<string, Promise<AuthContext | null>>();
  /** Bumped by every forget: a lookup that started before one is not cached. */
  private generation = 0;
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly ttlMs = 2_000,
  ) {}

  /** The cache entry of a key's hash while it is fresh. */
  private hit(hash: string): CacheEntry | undefined {
    const hit = this.cache.get(hash);
    return hit && hit.until > this.clock.ms() ? hit : undefined;
  }

  /**
   * The context of a request's Authorization header when its key is cached (synchronous), else
   * undefined: call `authenticate`.
   */
  cached(header: string | undefined): AuthContext | undefined {
    const key = bearer(header);
    // Longer than any key (KEY_RE): not worth hashing.
    if (!key || key.length > MAX_KEY_LENGTH) return undefined;
    return this.hit(hashKey(key))?.ctx;
  }

  async authenticate(key: string | undefined): Promise<AuthContext | null> {
    if (!key || !KEY_RE.test(key)) return null;
    const hash = hashKey(key);
    const hit = this.hit(hash);
    if (hit) return hit.ctx;
    let lookup = this.lookups.get(hash);
    if (!lookup) {
      lookup = this.lookup(hash).finally(() => this.lookups.delete(hash));
      this.lookups.set(hash, lookup);
    }
    return lookup;
  }

  private async lookup(hash: string): Promise<AuthContext | null> {
    const generation = this.generation;
    const row = await this.db
      .selectFrom('api_keys')
      .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
      .select(['api_keys.id as key_id', 'api_keys.key_hash', 'api_keys.revoked_at'])
      .selectAll('accounts')
      .where('api_keys.key_hash', '=', hash)
      .executeTakeFirst();
    // Equal-length constant-time check of the stored hash (the lookup itself is by hash, so
    // response time does not depend on how many characters of a guessed key were right).
    if (!row || row.revoked_at !== null || !timingSafeEqual(Buffer.from(row.key_hash), Buffer.from(hash))) return null;
    const { key_id, key_hash: _h, revoked_at: _r, ...account } = row;
    const limits = effectiveLimits(account.plan, account.limits);
    const ctx: AuthContext = { keyId: key_id, account, limits, caps: { accountId: account.id, plan: account.plan, limits } };
    if (generation !== this.generation) return ctx;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(hash, { ctx, until: this.clock.ms() + this.ttlMs });
    return ctx;
  }

  /** Forget cached lookups of one account (after a revocation or a plan change). */
  forgetAccount(accountId: string): void {
    this.generation += 1;
    for (const [h, v] of this.cache) if (v.ctx.account.id === accountId) this.cache.delete(h);
  }
}
