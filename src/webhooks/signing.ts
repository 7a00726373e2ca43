// Standard Webhooks signing (decisions.md "Webhooks"): `v1,<base64 HMAC-SHA256 of "id.ts.body">`
// keyed by the base64-decoded part of a `whsec_` secret.
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new secret: `whsec_` + base64 of 24 random bytes. */
export const newSecret = (): string => `${PREFIX}${randomBytes(24).toString('base64')}`;

/** The HMAC key of a secret (what follows `whsec_`, base64-decoded). */
export const secretKey = (secret: string): Buffer =>
  Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');

/** One `v1,<base64>` signature of the payload. */
export function sign(key: Buffer, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The `webhook-signature` value: one signature per key, space-separated (rotation signs twice). */
export const signatureHeader = (keys: Buffer[], id: string, timestamp: number, body: string): string =>
  keys.map((k) => sign(k, id, timestamp, body)).join(' ');
