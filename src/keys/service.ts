// API keys (api.md §5): `etk_live_` + 40 random base64url characters, stored only as SHA-256.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { sql } from 'kysely';
import { type AuditWho, audit } from '../audit/trail.js';
import type { Db, Executor } from '../db/index.js';
import type { AccountRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { effectiveLimits, type Limits, suggestPlan } from '../limits/plans.js';
import type { AccountLimitsCtx } from '../limits/types.js';
import type { Services } from '../services.js';
import { hashToken, TokenCache } from './token-cache.js';

export const KEY_PREFIX = 'etk_live_';
const KEY_RE = /^etk_live_[A-Za-z0-9_-]{32,128}$/;
const MAX_KEY_LENGTH = KEY_PREFIX.length + 128;

export const hashKey = hashToken;

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

/** Creates a key; at the plan's maximum of valid keys answers 402 (api.md §8). Audited as api_key.created. */
export async function createKey(db: Db, account: AccountRow, name: string, now: Date, who: AuditWho) {
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
    await audit(trx, now, who, {
      accountId: account.id,
      action: 'api_key.created',
      target: { type: 'api_key', id: row.id },
      changes: { name, prefix: row.prefix },
    });
    return { ...keyView(row), key };
  });
}

export async function listKeys(db: Executor, accountId: string) {
  const rows = await db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
  return rows.map(keyView);
}

/** Revokes a key: it answers 401 from now on (this process at once, others within the key cache's TTL). */
export async function revokeKey(s: Services, accountId: string, keyId: string, who: AuditWho): Promise<void> {
  const now = s.clock.now();
  await s.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('api_keys')
      .set({ revoked_at: sql`coalesce(revoked_at, ${now})` })
      .where('id', '=', keyId)
      .where('account_id', '=', accountId)
      .returning(['id', 'name', 'prefix'])
      .executeTakeFirst();
    if (!row) throw new ApiError('key_not_found');
    const changes = { name: row.name, prefix: row.prefix };
    await audit(trx, now, who, { accountId, action: 'api_key.revoked', target: { type: 'api_key', id: row.id }, changes });
  });
  forgetCredentials(s, accountId);
}

/**
 * An account's keys, app tokens or plan changed: this process's token caches forget it at once,
 * and every other process is told (through Redis when configured) instead of waiting for the TTL.
 */
export function forgetCredentials(s: Pick<Services, 'auth' | 'apps' | 'limiter'>, accountId: string): void {
  s.auth.forgetAccount(accountId);
  s.apps.forgetAccount(accountId);
  s.limiter.announceForget(accountId);
}

export interface AuthContext {
  keyId: string;
  account: AccountRow;
  limits: Limits;
  /** What the limiter needs, built once per lookup rather than per request. */
  caps: AccountLimitsCtx;
}

/**
 * Resolves a bearer API key to its account (a TokenCache: cached briefly, looked up once per key
 * however many requests wait for it; revocations and plan changes in this process clear it at once).
 */
export type KeyAuthenticator = TokenCache<AuthContext>;

export const keyAuthenticator = (db: Db, clock: Clock): KeyAuthenticator =>
  new TokenCache<AuthContext>(clock, {
    pattern: KEY_RE,
    maxLength: MAX_KEY_LENGTH,
    accountOf: (ctx) => ctx.account.id,
    async lookup(hash) {
      const row = await db
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
      return { keyId: key_id, account, limits, caps: { accountId: account.id, plan: account.plan, limits } };
    },
  });
