// AI apps connected to an account through MCP (docs/mcp.md "Connected AI apps"): the operator
// connects one and gets its token once (`etk_app_` + 40 random base64url characters, kept only as
// SHA-256); the plan's maximum of connected apps answers 402. An MCP request names its app with
// `Authorization: Bearer etk_app_…`, resolved through a TokenCache as API keys are (2 s; a
// disconnection forgets the account's tokens in this process at once, other processes within the
// 2 s); anything else is answered 401 with the RFC 9728 challenge, so OAuth-capable clients can
// be added later without a change on theirs.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { sql } from 'kysely';
import { type AuditWho, audit } from '../audit/trail.js';
import type { Db, Executor } from '../db/index.js';
import type { AccountRow } from '../db/types.js';
import { ApiError } from '../http/errors.js';
import { forgetCredentials } from '../keys/service.js';
import { hashToken, TokenCache } from '../keys/token-cache.js';
import type { Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import { effectiveLimits, suggestPlan } from '../limits/plans.js';
import type { AccountLimitsCtx } from '../limits/types.js';
import type { Services } from '../services.js';

export const APP_TOKEN_PREFIX = 'etk_app_';
const TOKEN_RE = /^etk_app_[A-Za-z0-9_-]{32,128}$/;

export interface AppView {
  id: string;
  name: string;
  /** The token's first characters (etk_app_ + 4), to tell tokens apart; null for an app connected through OAuth. */
  prefix: string | null;
  /** How it connected: an operator's `etk_app_` token, or an OAuth client's consent (its client id). */
  oauthClientId: string | null;
  createdAt: string;
  /** When it last called /mcp (to the minute), or null: never. */
  lastUsedAt: string | null;
}

const appView = (r: {
  id: string;
  name: string;
  prefix: string | null;
  oauth_client_id: string | null;
  created_at: Date;
  last_used_at: Date | null;
}): AppView => ({
  id: r.id,
  name: r.name,
  prefix: r.prefix,
  oauthClientId: r.oauth_client_id,
  createdAt: r.created_at.toISOString(),
  lastUsedAt: r.last_used_at?.toISOString() ?? null,
});

/** The 402 at the plan's maximum of connected apps (api.md §8). */
function aiAppLimit(account: AccountRow, limit: number, used: number): ApiError {
  return new ApiError('ai_app_limit', {
    params: { limit },
    cause: {
      type: 'upgrade',
      reason: 'limit',
      resource: 'aiApps',
      plan: account.plan,
      limit,
      used,
      suggested: suggestPlan('aiApps', used + 1, false, account.plan),
    },
  });
}

/** Connects an app; at the plan's maximum of connected apps answers 402 (api.md §8). */
export async function connectApp(s: Services, account: AccountRow, name: string, who: AuditWho): Promise<AppView & { token: string }> {
  const limits = effectiveLimits(account.plan, account.limits);
  const now = s.clock.now();
  const created = await s.db.transaction().execute(async (trx) => {
    // One connection at a time per account, so two concurrent ones cannot both pass the maximum.
    await sql`SELECT id FROM accounts WHERE id = ${account.id} FOR UPDATE`.execute(trx);
    const n = await connectedCount(trx, account.id);
    if (limits.aiApps !== null && n >= limits.aiApps) throw aiAppLimit(account, limits.aiApps, n);
    const token = APP_TOKEN_PREFIX + randomBytes(30).toString('base64url');
    const row = await trx
      .insertInto('ai_apps')
      .values({
        id: newId(),
        account_id: account.id,
        name,
        token_hash: hashToken(token),
        prefix: token.slice(0, APP_TOKEN_PREFIX.length + 4),
        created_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const changes = { name, via: 'token', prefix: row.prefix };
    await audit(trx, now, who, { accountId: account.id, action: 'ai_app.connected', target: { type: 'ai_app', id: row.id }, changes });
    return { ...appView(row), token };
  });
  // GET /me shows the connected apps.
  s.accountViews.changed(account.id);
  return created;
}

/** The connected app of an OAuth client in an account (its consent), or undefined. */
export async function oauthAppOf(db: Executor, accountId: string, clientId: string): Promise<{ id: string } | undefined> {
  return db
    .selectFrom('ai_apps')
    .select('id')
    .where('account_id', '=', accountId)
    .where('oauth_client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

/**
 * A consent of an OAuth client (oauth/consent.ts): the account's connected app for that client,
 * made now (counted against the plan's maximum: 402 there) or the one it already has. Each
 * consent is audited as ai_app.connected (`again: true` when the client was already connected).
 */
export async function connectOauthApp(s: Services, account: AccountRow, clientId: string, name: string, who: AuditWho): Promise<string> {
  const limits = effectiveLimits(account.plan, account.limits);
  const now = s.clock.now();
  const id = await s.db.transaction().execute(async (trx) => {
    await sql`SELECT id FROM accounts WHERE id = ${account.id} FOR UPDATE`.execute(trx);
    const connected = async (appId: string, again: boolean) => {
      const changes = { name: name.slice(0, 200), via: 'oauth', oauthClientId: clientId, again };
      await audit(trx, now, who, { accountId: account.id, action: 'ai_app.connected', target: { type: 'ai_app', id: appId }, changes });
      return appId;
    };
    const existing = await oauthAppOf(trx, account.id, clientId);
    if (existing) return connected(existing.id, true);
    const n = await connectedCount(trx, account.id);
    if (limits.aiApps !== null && n >= limits.aiApps) throw aiAppLimit(account, limits.aiApps, n);
    const row = await trx
      .insertInto('ai_apps')
      .values({
        id: newId(),
        account_id: account.id,
        name: name.slice(0, 200),
        token_hash: null,
        prefix: null,
        oauth_client_id: clientId,
        created_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    s.log.info({ accountId: account.id, appId: row.id, memberId: who.actor.id }, 'AI app connected through OAuth');
    return connected(row.id, false);
  });
  s.accountViews.changed(account.id);
  return id;
}

async function connectedCount(db: Executor, accountId: string): Promise<number> {
  const { n } = await db
    .selectFrom('ai_apps')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow();
  return n;
}

/** The account's connected apps, oldest first (no tokens), with when each last called /mcp. */
export async function listApps(db: Executor, accountId: string): Promise<AppView[]> {
  const rows = await db
    .selectFrom('ai_apps')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(appView);
}

/** How often an app's last use is written (per app and process). */
const USE_WRITE_MS = 60_000;

/**
 * Records that an app called /mcp, at most once a USE_WRITE_MS per app in this process, without
 * holding the request: the write is not awaited and a failure is only logged.
 */
export function appUseRecorder(s: Services): (appId: string) => void {
  const written = new Map<string, number>();
  return (appId) => {
    const now = s.clock.ms();
    if (now - (written.get(appId) ?? Number.NEGATIVE_INFINITY) < USE_WRITE_MS) return;
    written.set(appId, now);
    s.db
      .updateTable('ai_apps')
      .set({ last_used_at: s.clock.now() })
      .where('id', '=', appId)
      .execute()
      .catch((err) => s.log.warn({ err: { message: (err as Error)?.message }, appId }, 'AI app use not recorded'));
  };
}

/** Disconnects an app: its token answers 401 from the next request on (404: not a connected app of the account). */
export async function disconnectApp(s: Services, accountId: string, appId: string, who: AuditWho): Promise<void> {
  const now = s.clock.now();
  await s.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('ai_apps')
      .set({ revoked_at: now })
      .where('id', '=', appId)
      .where('account_id', '=', accountId)
      .where('revoked_at', 'is', null)
      .returning(['id', 'name', 'oauth_client_id'])
      .executeTakeFirst();
    if (!row) throw new ApiError('ai_app_not_found');
    // An OAuth client's grant, codes and tokens in this account go with it: its refresh token is
    // refused from now on, and its access token fails the lookup's join in every process.
    if (row.oauth_client_id)
      await sql`DELETE FROM oauth_models WHERE payload->>'clientId' = ${row.oauth_client_id}
        AND payload->>'accountId' = ${accountId}`.execute(trx);
    const changes = { name: row.name, via: row.oauth_client_id ? 'oauth' : 'token' };
    await audit(trx, now, who, { accountId, action: 'ai_app.disconnected', target: { type: 'ai_app', id: row.id }, changes });
  });
  // Its token answers 401 from the next request on, in every process (they are told).
  forgetCredentials(s, accountId);
  s.accountViews.changed(accountId);
}

/** Who an MCP request is: the app and its account. */
export interface AppPrincipal {
  app: { id: string; name: string };
  account: AccountRow;
  /** What the limiter needs (the account's plan and limits). */
  caps: AccountLimitsCtx;
}

export type AppAuthenticator = TokenCache<AppPrincipal>;

/** An access token of the authorization server (oauth/provider.ts): 256 random bits, base64url. */
const OAUTH_TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;

const principalOf = (row: AccountRow & { app_id: string; app_name: string }): AppPrincipal => {
  const { app_id, app_name, ...account } = row;
  const limits = effectiveLimits(account.plan, account.limits);
  return { app: { id: app_id, name: app_name }, account, caps: { accountId: account.id, plan: account.plan, limits } };
};

/**
 * The connected app a token names (null: unknown, expired or disconnected; an API key
 * `etk_live_…` is no app token), with its account, cached as API keys are: an operator's
 * `etk_app_` token (one indexed read of ai_apps), or an access token of our authorization server
 * (one indexed read of oauth_models by the token's hash, joined to the app its client connected
 * in that account), accepted only while unexpired, for the audience `resource()` (the MCP
 * endpoint) and with the `mcp` scope.
 */
export const appAuthenticator = (db: Db, clock: Clock, resource: () => string): AppAuthenticator =>
  new TokenCache<AppPrincipal>(clock, {
    pattern: new RegExp(`${TOKEN_RE.source}|${OAUTH_TOKEN_RE.source}`),
    maxLength: APP_TOKEN_PREFIX.length + 128,
    accountOf: (p) => p.account.id,
    async lookup(hash) {
      const row = await db
        .selectFrom('ai_apps as a')
        .innerJoin('accounts as acc', 'acc.id', 'a.account_id')
        .selectAll('acc')
        .select(['a.id as app_id', 'a.name as app_name', 'a.token_hash'])
        .where('a.token_hash', '=', hash)
        .where('a.revoked_at', 'is', null)
        .executeTakeFirst();
      if (row?.token_hash && timingSafeEqual(Buffer.from(row.token_hash), Buffer.from(hash))) {
        const { token_hash: _h, ...rest } = row;
        return principalOf(rest);
      }
      const oauth = await sql<AccountRow & { app_id: string; app_name: string; payload: Record<string, unknown> }>`
        SELECT acc.*, a.id AS app_id, a.name AS app_name, t.payload
        FROM oauth_models t
        JOIN ai_apps a ON a.oauth_client_id = t.payload->>'clientId' AND a.account_id::text = t.payload->>'accountId'
          AND a.revoked_at IS NULL
        JOIN accounts acc ON acc.id = a.account_id
        WHERE t.kind = 'AccessToken' AND t.id_hash = ${hash}`.execute(db);
      const found = oauth.rows[0];
      if (!found) return null;
      const { payload, ...rest } = found;
      // The token's own clock is oidc-provider's (wall time), not the injected one.
      const live = typeof payload.exp === 'number' && payload.exp * 1000 > Date.now();
      const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : [];
      if (!live || payload.aud !== resource() || !scopes.includes('mcp')) return null;
      return principalOf(rest);
    },
  });

/** Where the protected resource's metadata is (RFC 9728), under this service's public URL. */
export const protectedResourceMetadataUrl = (s: Services): string => `${s.publicUrl}/.well-known/oauth-protected-resource`;

/** The `WWW-Authenticate` value of a 401 from /mcp (RFC 9728 §5.1), naming the scope to ask. */
export const mcpChallenge = (s: Services): string => `Bearer resource_metadata="${protectedResourceMetadataUrl(s)}/mcp", scope="mcp"`;

/**
 * The protected resource's metadata (RFC 9728 §2): the MCP endpoint exactly as clients call it,
 * this server as its authorization server (oauth/provider.ts), the one scope, bearer tokens in
 * the Authorization header.
 */
export const protectedResourceMetadata = (s: Services) => ({
  resource: `${s.publicUrl}/mcp`,
  authorization_servers: [s.publicUrl],
  scopes_supported: ['mcp'],
  bearer_methods_supported: ['header'],
  resource_name: 'Chasqui MCP',
});
