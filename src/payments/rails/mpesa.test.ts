import { describe, expect, it } from 'vitest';
import { darajaTimestamp, normaliseKenyanPhone, stkPassword } from './mpesa.ts';

describe('M-Pesa payer input and Daraja fields', () => {
  it('reads a Kenyan mobile number however the payer types it', () => {
    for (const typed of [
      '0712345678',
      '0712 345 678',
      '712345678',
      '+254712345678',
      '254 712-345-678',
      '(0712) 345678',
    ]) {
      expect(normaliseKenyanPhone(typed), typed).toBe('254712345678');
    }
    // Safaricom's 011x numbers too.
    expect(normaliseKenyanPhone('0110 123 456')).toBe('254110123456');
  });

  it('refuses what is not a Kenyan mobile number', () => {
    for (const typed of [
      '',
      '07123',
      '071234567890',
      '+255712345678',
      '0212345678',
      'abc',
      '0712a45678',
      '2547123456789',
    ]) {
      expect(normaliseKenyanPhone(typed), typed).toBeUndefined();
    }
  });

  it('stamps in East Africa Time and builds the password from shortcode, passkey and timestamp', () => {
    expect(darajaTimestamp(new Date('2026-11-23T21:30:05.123Z'))).toBe('20261124003005');
    expect(Buffer.from(stkPassword('174379', 'pk', '20261124003005'), 'base64').toString()).toBe(
      '174379pk20261124003005',
    );
  });
});
