// oidc-provider's storage (its adapter interface) on our database: one table, oauth_models
// (migration 0030), shared by every process and kept across restarts, on PGlite and PostgreSQL.
// Rows are keyed by the SHA-256 of the model's id, and for tokens and codes the id itself (their
// `jti` IS the token or code) is never stored: a dump holds no token or code anyone can present.
// A client's `client_secret` (none today: clients are public, with PKCE) is stored sealed.
// Expiry is the provider's own check (every model carries `exp`); expired rows are deleted by
// `purgeExpired`.
import type { Db } from '../db/index.js';
import { hashToken } from '../keys/token-cache.js';
import type { Keyring } from '../secrets/keyring.js';

/** The row key: the id's SHA-256 (hex), the same hash the /mcp door's token cache looks tokens up by. */
const idHash = (id: string): string => hashToken(id);

/** Models whose id is a bearer secret: stored without it, found only by its hash. */
const SECRET_IDS = new Set([
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'ClientCredentials',
  'InitialAccessToken',
  'RegistrationAccessToken',
]);

type Payload = Record<string, unknown>;

/** The adapter class oidc-provider instantiates once per model name. */
export function adapterClass(db: Db, ring: Keyring) {
  return class OauthAdapter {
    constructor(readonly name: string) {}

    async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
      const { jti: _jti, ...bare } = payload;
      const stored = SECRET_IDS.has(this.name) ? bare : sealClientSecret(ring, payload);
      const row = {
        payload: JSON.stringify(stored),
        grant_id: typeof payload.grantId === 'string' ? payload.grantId : null,
        uid: typeof payload.uid === 'string' ? payload.uid : null,
        expires_at: typeof expiresIn === 'number' ? new Date(Date.now() + expiresIn * 1000) : null,
      };
      await db
        .insertInto('oauth_models')
        .values({ kind: this.name, id_hash: idHash(id), consumed_at: null, ...row })
        .onConflict((oc) => oc.columns(['kind', 'id_hash']).doUpdateSet(row))
        .execute();
    }

    async find(id: string): Promise<Payload | undefined> {
      const row = await db
        .selectFrom('oauth_models')
        .select(['payload', 'consumed_at'])
        .where('kind', '=', this.name)
        .where('id_hash', '=', idHash(id))
        .executeTakeFirst();
      if (!row) return undefined;
      return withState(openClientSecret(ring, row.payload), id, row.consumed_at);
    }

    async findByUid(uid: string): Promise<Payload | undefined> {
      const row = await db
        .selectFrom('oauth_models')
        .select(['payload', 'consumed_at'])
        .where('kind', '=', this.name)
        .where('uid', '=', uid)
        .executeTakeFirst();
      // A session found by uid: its id (the cookie's value) is not stored, so it cannot be given back.
      return row ? withState(openClientSecret(ring, row.payload), undefined, row.consumed_at) : undefined;
    }

    async findByUserCode(): Promise<undefined> {
      // No device flow.
      return undefined;
    }

    async consume(id: string): Promise<void> {
      await db
        .updateTable('oauth_models')
        .set({ consumed_at: new Date() })
        .where('kind', '=', this.name)
        .where('id_hash', '=', idHash(id))
        .execute();
    }

    async destroy(id: string): Promise<void> {
      await db.deleteFrom('oauth_models').where('kind', '=', this.name).where('id_hash', '=', idHash(id)).execute();
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await db.deleteFrom('oauth_models').where('grant_id', '=', grantId).execute();
    }
  };
}

function sealClientSecret(ring: Keyring, p: Payload): Payload {
  return typeof p.client_secret === 'string' ? { ...p, client_secret: ring.seal(p.client_secret, 'oauth_models.client_secret') } : p;
}

function openClientSecret(ring: Keyring, p: Payload): Payload {
  return typeof p.client_secret === 'string' ? { ...p, client_secret: ring.open(p.client_secret, 'oauth_models.client_secret') } : p;
}

function withState(payload: Payload, id: string | undefined, consumedAt: Date | null): Payload {
  return {
    ...payload,
    ...(id === undefined ? {} : { jti: id }),
    ...(consumedAt ? { consumed: Math.floor(consumedAt.getTime() / 1000) } : {}),
  };
}

/** Deletes the models past their expiry; returns how many. */
export async function purgeExpired(db: Db, now: Date): Promise<number> {
  const r = await db.deleteFrom('oauth_models').where('expires_at', '<', now).executeTakeFirst();
  return Number(r.numDeletedRows);
}
