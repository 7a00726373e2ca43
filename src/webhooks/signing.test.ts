import { describe, expect, it } from 'vitest';
import { newSecret, secretKey, sign, signatureHeader } from './signing.js';

describe('Standard Webhooks signing (decisions.md "Webhooks")', () => {
  it('reproduces the test vector published in the Standard Webhooks specification', () => {
    // spec/standard-webhooks.md, "Signature scheme": the example secret, id, timestamp and payload.
    const key = secretKey('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    const sig = sign(key, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
    expect(sig).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('secrets are whsec_ + base64 of 24 random bytes', () => {
    const a = newSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(secretKey(a)).toHaveLength(24);
    expect(newSecret()).not.toBe(a);
  });

  it('rotation signs with every key, space-separated', () => {
    const k1 = secretKey(newSecret());
    const k2 = secretKey(newSecret());
    const h = signatureHeader([k1, k2], 'id', 1, '{}');
    expect(h.split(' ')).toEqual([sign(k1, 'id', 1, '{}'), sign(k2, 'id', 1, '{}')]);
  });
});
