import { describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey, parseApiKey } from './api-key-secret.ts';

describe('API key secrets', () => {
  it('have the mode prefix, 32 random base62 characters and a checksum', () => {
    const live = generateApiKey(true);
    const test = generateApiKey(false);
    expect(live.secret).toMatch(/^sk_live_[0-9A-Za-z]{38}$/);
    expect(test.secret).toMatch(/^sk_test_[0-9A-Za-z]{38}$/);
    // 32 base62 characters carry 32·log2(62) ≈ 190.5 bits.
    expect(32 * Math.log2(62)).toBeGreaterThanOrEqual(190);
    expect(parseApiKey(live.secret)).toEqual({ ok: true, livemode: true });
    expect(parseApiKey(test.secret)).toEqual({ ok: true, livemode: false });
  });

  it('store only a hash, a short prefix and the last four characters', () => {
    const key = generateApiKey(false);
    expect(key.secretHash).toBe(hashApiKey(key.secret));
    expect(key.secretHash).toMatch(/^[0-9a-f]{64}$/);
    expect(key.displayPrefix).toBe(key.secret.slice(0, 12));
    expect(key.last4).toBe(key.secret.slice(-4));
  });

  it('reject any single-character typo through the checksum', () => {
    const { secret } = generateApiKey(false);
    let rejected = 0;
    for (let i = 8; i < secret.length; i++) {
      const swapped = secret[i] === 'A' ? 'B' : 'A';
      if (!parseApiKey(secret.slice(0, i) + swapped + secret.slice(i + 1)).ok) rejected++;
    }
    // A 6-char base62 checksum lets a typo through with probability ~1/62^6 per edit.
    expect(rejected).toBe(secret.length - 8);
  });

  it('are different every time', () => {
    const seen = new Set(Array.from({ length: 200 }, () => generateApiKey(false).secret));
    expect(seen.size).toBe(200);
  });
});
