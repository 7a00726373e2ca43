// The authorization server's own keys (migration 0030, oauth_keys): the signing key of its JWKS
// (ID tokens; our access tokens are opaque) and the keys that sign its cookies. Made by the first
// process that needs them and read by every other, so any process can finish an authorization
// another one started, and a restart keeps them.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../db/index.js';

export interface OauthKeys {
  jwks: { keys: Record<string, unknown>[] };
  cookieKeys: string[];
}

async function loadOrCreate<T>(db: Db, name: string, make: () => T): Promise<T> {
  await sql`INSERT INTO oauth_keys (name, value) VALUES (${name}, ${JSON.stringify(make())}::jsonb)
    ON CONFLICT (name) DO NOTHING`.execute(db);
  const row = await db.selectFrom('oauth_keys').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value as T;
}

export async function oauthKeys(db: Db): Promise<OauthKeys> {
  const jwk = await loadOrCreate(db, 'jwks', () => ({
    ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }),
    kid: randomBytes(8).toString('hex'),
    use: 'sig',
    alg: 'ES256',
  }));
  const cookieKeys = await loadOrCreate(db, 'cookies', () => [randomBytes(32).toString('base64url')]);
  return { jwks: { keys: [jwk as Record<string, unknown>] }, cookieKeys: cookieKeys as string[] };
}
