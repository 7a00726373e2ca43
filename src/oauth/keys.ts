// The authorization server's own keys (migration 0030, oauth_keys): the signing key of its JWKS
// (ID tokens; our access tokens are opaque) and the keys that sign its cookies. Made by the first
// process that needs them and read by every other, so any process can finish an authorization
// another one started, and a restart keeps them. Each is stored sealed, as one JSON string
// (docs/privacy.md "Secrets sealed at rest"); a row a version before sealing wrote is the JSON itself.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import type { Keyring } from '../secrets/keyring.js';

export interface OauthKeys {
  jwks: { keys: Record<string, unknown>[] };
  cookieKeys: string[];
}

async function loadOrCreate<T>(db: Db, ring: Keyring, name: string, make: () => T): Promise<T> {
  const sealed = ring.seal(JSON.stringify(make()), 'oauth_keys.value');
  await sql`INSERT INTO oauth_keys (name, value) VALUES (${name}, to_jsonb(${sealed}::text))
    ON CONFLICT (name) DO NOTHING`.execute(db);
  const row = await db.selectFrom('oauth_keys').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return (typeof row.value === 'string' ? JSON.parse(ring.open(row.value, 'oauth_keys.value')) : row.value) as T;
}

export async function oauthKeys(db: Db, ring: Keyring): Promise<OauthKeys> {
  const jwk = await loadOrCreate(db, ring, 'jwks', () => ({
    ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }),
    kid: randomBytes(8).toString('hex'),
    use: 'sig',
    alg: 'ES256',
  }));
  const cookieKeys = await loadOrCreate(db, ring, 'cookies', () => [randomBytes(32).toString('base64url')]);
  return { jwks: { keys: [jwk as Record<string, unknown>] }, cookieKeys: cookieKeys as string[] };
}
