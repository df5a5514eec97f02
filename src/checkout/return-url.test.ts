import { describe, expect, it } from 'vitest';
import { returnUrl } from './return-url.ts';

describe('returnUrl', () => {
  it('appends payment_id and status', () => {
    expect(returnUrl('https://shop.example/thanks', 'pay_1', 'settled')).toBe(
      'https://shop.example/thanks?payment_id=pay_1&status=settled',
    );
  });

  it("keeps the merchant's query byte for byte and the fragment at the end", () => {
    expect(returnUrl('https://shop.example/t?order=42&q=a%20b&q=c+d#top', 'pay_1', 'paid')).toBe(
      'https://shop.example/t?order=42&q=a%20b&q=c+d&payment_id=pay_1&status=paid#top',
    );
  });

  it('replaces earlier payment_id and status pairs so ours are the only ones', () => {
    expect(returnUrl('https://shop.example/t?status=forged&x=1&payment%5Fid=pay_0', 'pay_1', 'expired')).toBe(
      'https://shop.example/t?x=1&payment_id=pay_1&status=expired',
    );
  });

  it('refuses non-http(s) targets', () => {
    expect(returnUrl('javascript:alert(1)', 'pay_1', 'paid')).toBeUndefined();
  });
});
