// Secrets sealed at rest (docs/privacy.md "Secrets sealed at rest"): AES-256-GCM with a random
// 12-byte nonce per value, the sealing key's id inside the value, and the value's place (table and
// column) as additional data, so a sealed value copied to another column does not open.
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { secretTexts } from '../http/messages.es-AR.js';

/** Where a sealed value lives: bound into it as AAD. */
export type Place =
  | 'phone_numbers.cloud_access_token'
  | 'phone_numbers.cloud_app_secret'
  | 'phone_numbers.cloud_verify_token'
  | 'social_accounts.access_token'
  | 'social_accounts.app_secret'
  | 'social_accounts.verify_token'
  | 'webhooks.secret'
  | 'webhooks.previous_secret'
  | 'automations.webhook_token'
  | 'automations.steps.headers'
  | 'oauth_keys.value'
  | 'oauth_models.client_secret';

export interface SecretKey {
  id: string;
  key: Buffer;
}

const PREFIX = 'sealed:v1:';
const NONCE = 12;
const TAG = 16;

/** A value sealed by a key id the ring does not hold: the text names the id (never a crash loop). */
export class SecretKeyMissing extends Error {
  constructor(readonly keyId: string) {
    super(secretTexts.keyMissing(keyId));
    this.name = 'SecretKeyMissing';
  }
}

/** The key id of a sealed value; null for a value written before sealing (plaintext). */
export function sealedBy(value: string): string | null {
  if (!value.startsWith(PREFIX)) return null;
  const end = value.indexOf(':', PREFIX.length);
  return end < 0 ? null : value.slice(PREFIX.length, end);
}

const isSealed = (value: string): boolean => sealedBy(value) !== null;

export class Keyring {
  private readonly byId: Map<string, Buffer>;

  /** `keys[0]` seals; every key opens. */
  constructor(readonly keys: readonly SecretKey[]) {
    if (keys.length === 0) throw new Error('a keyring needs at least one key');
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  /** Whether a value sealed by this key id opens here. */
  has(keyId: string): boolean {
    return this.byId.has(keyId);
  }

  /** The id of the key that seals new values. */
  get sealingKeyId(): string {
    return this.keys[0]!.id;
  }

  /** Seals `value` for `place`; an already sealed value is returned as it is. */
  seal(value: string, place: Place): string {
    if (isSealed(value)) return value;
    const { id, key } = this.keys[0]!;
    const nonce = randomBytes(NONCE);
    const cipher = createCipheriv('aes-256-gcm', key, nonce);
    cipher.setAAD(Buffer.from(place));
    const body = Buffer.concat([nonce, cipher.update(value, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${PREFIX}${id}:${body.toString('base64url')}`;
  }

  sealNullable(value: string | null | undefined, place: Place): string | null {
    return value == null ? null : this.seal(value, place);
  }

  /**
   * The plain value. A value without the prefix (written by a version before sealing, not yet
   * sealed by the start pass) passes through unchanged. Throws SecretKeyMissing for an unknown key id.
   */
  open(value: string, place: Place): string {
    const keyId = sealedBy(value);
    if (keyId === null) return value;
    const key = this.byId.get(keyId);
    if (!key) throw new SecretKeyMissing(keyId);
    const body = Buffer.from(value.slice(PREFIX.length + keyId.length + 1), 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(0, NONCE));
    decipher.setAAD(Buffer.from(place));
    decipher.setAuthTag(body.subarray(body.length - TAG));
    return Buffer.concat([decipher.update(body.subarray(NONCE, body.length - TAG)), decipher.final()]).toString('utf8');
  }

  openNullable(value: string | null | undefined, place: Place): string | null {
    return value == null ? null : this.open(value, place);
  }
}

/**
 * `SECRETS_KEYS` = `id:base64(32 bytes)`, comma-separated: the keys, or the Spanish reason it is
 * malformed (naming the entry's position, never its text: it may be a key).
 */
export function parseKeyring(text: string): { keys: SecretKey[] } | { problem: string } {
  const keys: SecretKey[] = [];
  // Empty entries (a trailing comma, two commas) are no key and no mistake.
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (parts.length === 0) return { problem: secretTexts.empty };
  for (const [i, part] of parts.entries()) {
    const n = i + 1;
    const colon = part.indexOf(':');
    if (colon < 0) return { problem: secretTexts.noId(n) };
    const id = part.slice(0, colon);
    const encoded = part.slice(colon + 1);
    if (!/^[A-Za-z0-9_-]{1,32}$/.test(id)) return { problem: secretTexts.badId(n) };
    if (!/^[A-Za-z0-9+/=_-]+$/.test(encoded)) return { problem: secretTexts.notBase64(n) };
    const key = Buffer.from(encoded, /[-_]/.test(encoded) ? 'base64url' : 'base64');
    if (key.length !== 32) return { problem: secretTexts.wrongLength(n, key.length) };
    if (keys.some((k) => k.id === id)) return { problem: secretTexts.duplicate(id) };
    keys.push({ id, key });
  }
  return { keys };
}

/**
 * The plain value, or null when it cannot be opened (a key not in the ring, or a value altered or
 * moved from its place): for the scans that look for a match, where one bad row must not hide the rest.
 */
export function openOrNull(ring: Keyring, value: string | null | undefined, place: Place): string | null {
  if (value == null) return null;
  try {
    return ring.open(value, place);
  } catch {
    return null;
  }
}

/** Constant-time equality of two secrets (their SHA-256, so lengths do not leak either). */
export function sameSecret(a: string, b: string): boolean {
  const h = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(h(a), h(b));
}
