// X-Hub-Signature-256 (Meta webhooks): `sha256=<hex HMAC-SHA256 of the exact raw body, keyed by the
// app secret>`. Compared in constant time.
import { createHmac, timingSafeEqual } from 'node:crypto';

export function verifySignature(body: Buffer, header: string | undefined, appSecret: string): boolean {
  if (!header || !appSecret) return false;
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!m) return false;
  const given = Buffer.from(m[1]!.toLowerCase(), 'hex');
  const expected = createHmac('sha256', appSecret).update(body).digest();
  return given.length === expected.length && timingSafeEqual(given, expected);
}
