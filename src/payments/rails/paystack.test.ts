import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isAppError } from '../../core/errors.ts';
import { paystackReference, paystackRail, paystackSignatureValid } from './paystack.ts';

const KEY = 'sk_test_0123456789abcdef';
const sign = (body: string, key = KEY) => createHmac('sha512', key).update(body).digest('hex');

describe('Paystack event signature (x-paystack-signature)', () => {
  const body = '{"event":"charge.success","data":{"reference":"att-1","amount":500000}}';

  it('accepts the HMAC-SHA512 of the raw body with the secret key, in either hex case', () => {
    expect(paystackSignatureValid(KEY, body, sign(body))).toBe(true);
    expect(paystackSignatureValid(KEY, body, sign(body).toUpperCase())).toBe(true);
  });

  it('refuses another key, a changed body, and anything that is not a 128-hex signature', () => {
    expect(paystackSignatureValid(KEY, body, sign(body, 'sk_test_other0000000000'))).toBe(false);
    expect(paystackSignatureValid(KEY, body.replace('500000', '5000'), sign(body))).toBe(false);
    for (const header of [undefined, '', 'zz', sign(body).slice(0, 64), `${sign(body)}00`]) {
      expect(paystackSignatureValid(KEY, body, header)).toBe(false);
    }
  });
});

describe('Paystack payer email and reference', () => {
  const read = (email: string) => paystackRail.readPayer(new URLSearchParams({ email }));

  it('takes an ordinary email, trimmed, and keeps only a masked hint', () => {
    expect(read('  ada.obi+shop@example.com.ng ')).toEqual({ email: 'ada.obi+shop@example.com.ng' });
    expect(paystackRail.payerHint({ email: 'ada.obi@example.com' })).toBe('a***@example.com');
  });

  it('names the field and the rule for a missing or malformed email', () => {
    for (const email of ['', 'ada', 'ada@', '@example.com', 'ada@example', 'a b@example.com']) {
      try {
        read(email);
        expect.unreachable(email);
      } catch (error) {
        expect(isAppError(error) && error.param).toBe('email');
      }
    }
  });

  it("makes a reference of Paystack's allowed characters from the attempt id", () => {
    expect(paystackReference('att_7Qm2bX')).toBe('att-7Qm2bX');
    expect(paystackReference('att_7Qm2bX')).toMatch(/^[A-Za-z0-9.=-]+$/);
  });
});
