// Social accounts of an account (docs/operator.md "Social accounts"; spec social.md): a social
// account is to the social channel (Instagram Direct) what a phone number is to WhatsApp. The
// Instagram ids and secrets live in their columns, the secrets sealed (docs/privacy.md "Secrets
// sealed at rest"), and never leave this module's view (nor the logs). DELETE keeps the row (deleted_at) with its secrets cleared: its conversations keep their
// key and history.
import { sql } from 'kysely';
import { type AuditWho, audit, fromTo } from '../audit/trail.js';
import type { Executor } from '../db/index.js';
import type { SocialAccountRow } from '../db/types.js';
import { ApiError, invalid } from '../http/errors.js';
import { textFor } from '../http/messages.es-AR.js';
import { newId } from '../lib/ids.js';
import { type Keyring, openOrNull, sameSecret } from '../secrets/keyring.js';
import type { Services } from '../services.js';

export interface SocialAccountView {
  id: string;
  name: string;
  provider: 'sandbox' | 'instagram';
  status: 'connected' | 'disconnected';
  /** instagram: our Instagram account id (not a secret: Meta's webhooks name it). */
  igUserId: string | null;
  agentId: string | null;
  createdAt: string;
  updatedAt: string;
}

export const socialAccountView = (r: SocialAccountRow): SocialAccountView => ({
  id: r.id,
  name: r.name,
  provider: r.provider,
  status: r.status,
  igUserId: r.ig_user_id,
  agentId: r.agent_id,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

export interface InstagramCredentials {
  igUserId: string;
  accessToken: string;
  appSecret: string;
  verifyToken: string;
}

export interface NewSocialAccount {
  name: string;
  provider: 'sandbox' | 'instagram';
  instagram?: InstagramCredentials | undefined;
}

const live = (db: Executor) => db.selectFrom('social_accounts').selectAll().where('deleted_at', 'is', null);

/** The account's social accounts, oldest first. */
export async function listSocialAccounts(db: Executor, accountId: string): Promise<SocialAccountView[]> {
  const rows = await live(db).where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
  return withLiveAgents(db, rows);
}

/**
 * The views, naming no agent where the agent was deleted (the agents' delete unassigns numbers, not
 * social accounts; the inbound path already ignores a deleted agent).
 */
async function withLiveAgents(db: Executor, rows: SocialAccountRow[]): Promise<SocialAccountView[]> {
  const ids = [...new Set(rows.flatMap((r) => (r.agent_id ? [r.agent_id] : [])))];
  const alive =
    ids.length === 0
      ? new Set<string>()
      : new Set(
          (
            await db
              .selectFrom('agents')
              .select('id')
              .where(sql<boolean>`id = any(${ids}::uuid[])`)
              .where('deleted_at', 'is', null)
              .execute()
          ).map((a) => a.id),
        );
  return rows.map((r) => socialAccountView({ ...r, agent_id: r.agent_id && alive.has(r.agent_id) ? r.agent_id : null }));
}

/** A social account of the account, not deleted (404 otherwise). */
export async function getSocialAccountRow(db: Executor, accountId: string, id: string): Promise<SocialAccountRow> {
  const row = await live(db).where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
  if (!row) throw new ApiError('social_account_not_found');
  return row;
}

/** A social account of any account, not deleted (the sandbox names one directly), or 404. */
export async function getLiveSocialAccount(db: Executor, id: string): Promise<SocialAccountRow> {
  const row = await live(db).where('id', '=', id).executeTakeFirst();
  if (!row) throw new ApiError('social_account_not_found');
  return row;
}

/** The agent named by `agentId`: the account's and not deleted (a paused one may be named). */
async function assertAgent(trx: Executor, accountId: string, agentId: string): Promise<void> {
  const agent = await trx
    .selectFrom('agents')
    .select('id')
    .where('account_id', '=', accountId)
    .where('id', '=', agentId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!agent) throw invalid(['agentId'], textFor('agent_ref_not_found'));
}

/** The secrets as stored: sealed (an absent one stays absent). */
const sealInstagram = <T extends { accessToken?: string | undefined; appSecret?: string | undefined; verifyToken?: string | undefined }>(
  ring: Keyring,
  ig: T,
): T => ({
  ...ig,
  ...(ig.accessToken !== undefined ? { accessToken: ring.seal(ig.accessToken, 'social_accounts.access_token') } : {}),
  ...(ig.appSecret !== undefined ? { appSecret: ring.seal(ig.appSecret, 'social_accounts.app_secret') } : {}),
  ...(ig.verifyToken !== undefined ? { verifyToken: ring.seal(ig.verifyToken, 'social_accounts.verify_token') } : {}),
});

/** The account's access token, opened for an Instagram call; throws SecretKeyMissing when its key is not in the ring. */
export const instagramAccessToken = (ring: Keyring, r: Pick<SocialAccountRow, 'access_token'>): string | null =>
  ring.openNullable(r.access_token, 'social_accounts.access_token');

/** The account's app secret, opened to check a signature; null when unset or its key is not in the ring. */
export const instagramAppSecret = (ring: Keyring, r: Pick<SocialAccountRow, 'app_secret'>): string | null =>
  openOrNull(ring, r.app_secret, 'social_accounts.app_secret');

/**
 * Inserts a social account row, its secrets already sealed; undefined when a live one already has
 * the igUserId (the seed and createSocialAccount).
 */
export const insertSocialAccount = (db: Executor, accountId: string, input: NewSocialAccount, now: Date) => {
  const ig = input.provider === 'instagram' ? input.instagram : undefined;
  return (
    db
      .insertInto('social_accounts')
      .values({
        id: newId(),
        account_id: accountId,
        name: input.name,
        provider: input.provider,
        ig_user_id: ig?.igUserId ?? null,
        access_token: ig?.accessToken ?? null,
        app_secret: ig?.appSecret ?? null,
        verify_token: ig?.verifyToken ?? null,
        created_at: now,
        updated_at: now,
      })
      // The unique index on live Instagram ids: another live account has this igUserId.
      .onConflict((oc) => oc.doNothing())
      .returningAll()
      .executeTakeFirst()
  );
};

const target = (id: string) => ({ type: 'social_account', id });

/** Connects a social account: an Instagram one needs its credentials and an igUserId no other live one has. */
export async function createSocialAccount(
  s: Services,
  accountId: string,
  input: NewSocialAccount,
  who: AuditWho,
): Promise<SocialAccountView> {
  if (input.provider === 'instagram' && !input.instagram) throw invalid(['instagram'], textFor('social_instagram_required'));
  const now = s.clock.now();
  const sealed = { ...input, instagram: input.instagram && sealInstagram(s.secrets, input.instagram) };
  const row = await s.db.transaction().execute(async (trx) => {
    const row = await insertSocialAccount(trx, accountId, sealed, now);
    if (!row) throw invalid(['instagram', 'igUserId'], textFor('social_instagram_taken'));
    const changes = { name: row.name, provider: row.provider, igUserId: row.ig_user_id };
    await audit(trx, now, who, { accountId, action: 'social_account.connected', target: target(row.id), changes });
    return row;
  });
  return socialAccountView(row);
}

/**
 * Connects or disconnects it, renames it, names the AI agent that answers its conversations
 * (`agentId`; null: none) with the rules of PATCH …/phone-numbers, or replaces an Instagram
 * account's secrets (a renewed access token: its conversations stay, as the account is the same).
 */
export async function updateSocialAccount(
  s: Services,
  accountId: string,
  id: string,
  patch: {
    status?: 'connected' | 'disconnected' | undefined;
    agentId?: string | null | undefined;
    name?: string | undefined;
    instagram?: { accessToken?: string | undefined; appSecret?: string | undefined; verifyToken?: string | undefined } | undefined;
  },
  who: AuditWho,
): Promise<SocialAccountView> {
  const row = await s.db.transaction().execute(async (trx) => {
    const cur = await getSocialAccountRow(trx, accountId, id);
    if (patch.agentId) await assertAgent(trx, accountId, patch.agentId);
    const ig = patch.instagram && sealInstagram(s.secrets, patch.instagram);
    if (ig && cur.provider !== 'instagram') throw invalid(['instagram'], textFor('social_secrets_sandbox'));
    // Which secrets were replaced, by name only.
    const secrets = Object.keys(ig ?? {}).filter((k) => ig?.[k as keyof typeof ig] !== undefined);
    const changes = {
      ...fromTo({ status: cur.status, agentId: cur.agent_id, name: cur.name }, patch, ['status', 'agentId', 'name']),
      ...(secrets.length > 0 ? { secretsReplaced: secrets } : {}),
    };
    await audit(trx, s.clock.now(), who, { accountId, action: 'social_account.updated', target: target(cur.id), changes });
    if (patch.status === undefined && patch.agentId === undefined && patch.name === undefined && !ig) return cur;
    return trx
      .updateTable('social_accounts')
      .set({
        ...(patch.status !== undefined ? { status: patch.status } : {}),
        ...(patch.agentId !== undefined ? { agent_id: patch.agentId } : {}),
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(ig?.accessToken !== undefined ? { access_token: ig.accessToken } : {}),
        ...(ig?.appSecret !== undefined ? { app_secret: ig.appSecret } : {}),
        ...(ig?.verifyToken !== undefined ? { verify_token: ig.verifyToken } : {}),
        updated_at: s.clock.now(),
      })
      .where('id', '=', cur.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  return (await withLiveAgents(s.db, [row]))[0]!;
}

/** Removes it from the lists and the receiver: secrets cleared, disconnected; its conversations stay. */
export async function deleteSocialAccount(s: Services, accountId: string, id: string, who: AuditWho): Promise<void> {
  const now = s.clock.now();
  await s.db.transaction().execute(async (trx) => {
    const done = await trx
      .updateTable('social_accounts')
      .set({
        deleted_at: now,
        updated_at: now,
        status: 'disconnected',
        access_token: null,
        app_secret: null,
        verify_token: null,
        agent_id: null,
      })
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .returning(['id', 'name', 'provider'])
      .executeTakeFirst();
    if (!done) throw new ApiError('social_account_not_found');
    const changes = { name: done.name, provider: done.provider };
    await audit(trx, now, who, { accountId, action: 'social_account.deleted', target: target(done.id), changes });
  });
}

/** A deleted agent answers no social account (agents/service.ts, in its transaction), as numbers. */
export async function unassignAgentFromSocialAccounts(trx: Executor, accountId: string, agentId: string): Promise<void> {
  await trx
    .updateTable('social_accounts')
    .set({ agent_id: null })
    .where('account_id', '=', accountId)
    .where('agent_id', '=', agentId)
    .execute();
}

/** Whether some Instagram social account has this webhook verify token (the GET handshake; sealed, so each is opened). */
export async function isInstagramVerifyToken(s: Services, token: string): Promise<boolean> {
  const rows = await live(s.db).where('provider', '=', 'instagram').where('verify_token', 'is not', null).execute();
  return rows.some((r) => {
    const mine = openOrNull(s.secrets, r.verify_token, 'social_accounts.verify_token');
    return mine !== null && sameSecret(mine, token);
  });
}

/** Live Instagram social accounts by their igUserIds (the receiver). */
export async function instagramAccountsByIgId(db: Executor, igUserIds: string[]): Promise<SocialAccountRow[]> {
  if (igUserIds.length === 0) return [];
  // The provider as a literal: a parameter would keep a generic plan off the partial index
  // social_accounts_ig_user (`WHERE provider = 'instagram'`) and read every social account.
  return live(db).where('provider', '=', sql.lit('instagram')).where(sql<boolean>`ig_user_id = any(${igUserIds}::text[])`).execute();
}

/** The app secrets of every live Instagram social account (a signed body that names none of ours). */
export async function instagramAppSecrets(s: Services): Promise<string[]> {
  const rows = await live(s.db).where('provider', '=', 'instagram').where('app_secret', 'is not', null).execute();
  return [...new Set(rows.flatMap((r) => instagramAppSecret(s.secrets, r) ?? []))];
}
