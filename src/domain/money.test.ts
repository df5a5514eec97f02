import { describe, expect, it } from 'vitest';
import {
  CURRENCIES,
  convertMinor,
  divideRounded,
  exceedsMajor,
  formatAmount,
  formatDisplay,
  formatMinor,
  getCurrency,
  MAX_PAYMENT_AMOUNT_MAJOR,
  minorToNumber,
  normaliseCurrencyCode,
  parseMajorAmount,
  SUPPORTED_CURRENCY_CODES,
} from './money.ts';

const { NGN, GHS, KES, UGX, XOF, USD, USDC, RWF } = CURRENCIES;

describe('currency table', () => {
  it('has the exponents the design names', () => {
    const exponents = Object.fromEntries(SUPPORTED_CURRENCY_CODES.map((code) => [code, CURRENCIES[code].exponent]));
    expect(exponents).toEqual({
      NGN: 2,
      GHS: 2,
      KES: 2,
      UGX: 0,
      TZS: 2,
      RWF: 0,
      XOF: 0,
      XAF: 0,
      ZAR: 2,
      EGP: 2,
      MAD: 2,
      ETB: 2,
      ZMW: 2,
      USD: 2,
      EUR: 2,
      GBP: 2,
      USDC: 6,
    });
    expect(USDC.kind).toBe('stablecoin');
    expect(NGN.kind).toBe('fiat');
  });

  it('looks codes up exactly, and only its own keys', () => {
    expect(getCurrency('NGN')).toBe(NGN);
    expect(getCurrency('ngn')).toBeUndefined();
    expect(getCurrency('XYZ')).toBeUndefined();
    expect(getCurrency('toString')).toBeUndefined();
    expect(getCurrency('__proto__')).toBeUndefined();
    expect(getCurrency(normaliseCurrencyCode('ngn'))).toBe(NGN);
    expect(getCurrency(normaliseCurrencyCode('Usdc'))).toBe(USDC);
  });

  it('does not repair malformed codes while normalising', () => {
    expect(normaliseCurrencyCode(' ngn')).toBe(' NGN');
    expect(getCurrency(normaliseCurrencyCode(' ngn'))).toBeUndefined();
  });

  it('is frozen', () => {
    expect(Object.isFrozen(CURRENCIES)).toBe(true);
    expect(Object.isFrozen(NGN)).toBe(true);
  });
});

describe('parseMajorAmount', () => {
  const ok = (minor: bigint) => ({ ok: true, minor });
  const fail = (reason: string) => ({ ok: false, reason });

  it('reads numbers through their decimal text, never float arithmetic', () => {
    expect(parseMajorAmount(5000, NGN)).toEqual(ok(500000n));
    expect(parseMajorAmount(10.1, NGN)).toEqual(ok(1010n)); // 10.1 * 100 is 1009.9999999999999 in floats
    expect(parseMajorAmount(0.29, NGN)).toEqual(ok(29n)); // 0.29 * 100 is 28.999999999999996
    expect(parseMajorAmount(1.005, USDC)).toEqual(ok(1_005_000n));
    expect(parseMajorAmount(12.5, GHS)).toEqual(ok(1250n));
    expect(parseMajorAmount(0.01, NGN)).toEqual(ok(1n));
    expect(parseMajorAmount(5000, UGX)).toEqual(ok(5000n));
  });

  it('accepts the seed maximum and leaves the bound to the caller', () => {
    expect(parseMajorAmount(1_000_000_000, NGN)).toEqual(ok(100_000_000_000n));
    expect(parseMajorAmount(999_999_999.99, NGN)).toEqual(ok(99_999_999_999n));
    expect(parseMajorAmount(1_000_000_000.01, NGN)).toEqual(ok(100_000_000_001n));
    expect(parseMajorAmount(999_999_999.999999, USDC)).toEqual(ok(999_999_999_999_999n));
  });

  it('expands exponent notation by moving the decimal point in the text', () => {
    expect(String(1e21)).toBe('1e+21');
    expect(parseMajorAmount(1e21, NGN)).toEqual(ok(10n ** 23n));
    expect(parseMajorAmount(1.5e21, UGX)).toEqual(ok(15n * 10n ** 20n));
    expect(String(1e-7)).toBe('1e-7');
    expect(parseMajorAmount(1e-7, USDC)).toEqual(fail('too_many_decimals'));
    expect(parseMajorAmount(1e-6, USDC)).toEqual(ok(1n));
    expect(parseMajorAmount(2.5e-6, USDC)).toEqual(fail('too_many_decimals'));
    expect(parseMajorAmount('1.5e2', NGN)).toEqual(ok(15000n));
    expect(parseMajorAmount('125E-2', NGN)).toEqual(ok(125n));
    expect(parseMajorAmount(5e-324, NGN)).toEqual(fail('too_many_decimals'));
  });

  it('refuses more fraction digits than the currency has, but not trailing zeros', () => {
    expect(parseMajorAmount(10.555, NGN)).toEqual(fail('too_many_decimals'));
    expect(parseMajorAmount(0.001, NGN)).toEqual(fail('too_many_decimals'));
    expect(parseMajorAmount(100.5, UGX)).toEqual(fail('too_many_decimals'));
    expect(parseMajorAmount(1.0000001, USDC)).toEqual(fail('too_many_decimals'));
    expect(parseMajorAmount('10.500', NGN)).toEqual(ok(1050n));
    expect(parseMajorAmount('100.000', XOF)).toEqual(ok(100n));
    expect(parseMajorAmount(10.5, NGN)).toEqual(ok(1050n));
  });

  it('refuses zero, negatives, NaN and infinities', () => {
    expect(parseMajorAmount(0, NGN)).toEqual(fail('not_positive'));
    expect(parseMajorAmount(-0, NGN)).toEqual(fail('not_positive'));
    expect(parseMajorAmount(-5, NGN)).toEqual(fail('not_positive'));
    expect(parseMajorAmount(-0.001, NGN)).toEqual(fail('not_positive'));
    expect(parseMajorAmount('0.00', NGN)).toEqual(fail('not_positive'));
    expect(parseMajorAmount('0e-999', NGN)).toEqual(fail('not_positive'));
    expect(parseMajorAmount('-1e999', NGN)).toEqual(fail('not_positive'));
    expect(parseMajorAmount(Number.NaN, NGN)).toEqual(fail('not_a_number'));
    expect(parseMajorAmount(Number.POSITIVE_INFINITY, NGN)).toEqual(fail('not_a_number'));
    expect(parseMajorAmount(Number.NEGATIVE_INFINITY, NGN)).toEqual(fail('not_a_number'));
  });

  it('is strict about string input', () => {
    for (const text of ['', ' 5', '5 ', '+5', '.5', '5.', '0x10', '1_000', '1,000', 'abc', '5e', '1e+', 'Infinity']) {
      expect(parseMajorAmount(text, NGN)).toEqual(fail('not_a_number'));
    }
    expect(parseMajorAmount('0005.50', NGN)).toEqual(ok(550n));
  });

  it('refuses absurdly large values before building them', () => {
    expect(parseMajorAmount(1e300, NGN)).toEqual(fail('too_large'));
    expect(parseMajorAmount('1e999999999', NGN)).toEqual(fail('too_large'));
    expect(parseMajorAmount('1e-999999999', NGN)).toEqual(fail('too_many_decimals'));
  });

  it('refuses values that are not numbers or strings at run time', () => {
    expect(parseMajorAmount(null as unknown as number, NGN)).toEqual(fail('not_a_number'));
    expect(parseMajorAmount(5n as unknown as number, NGN)).toEqual(fail('not_a_number'));
  });
});

describe('exceedsMajor', () => {
  it('compares in minor units against the major-unit cap', () => {
    expect(exceedsMajor(100_000_000_000n, MAX_PAYMENT_AMOUNT_MAJOR, NGN)).toBe(false);
    expect(exceedsMajor(100_000_000_001n, MAX_PAYMENT_AMOUNT_MAJOR, NGN)).toBe(true);
    expect(exceedsMajor(1_000_000_000n, MAX_PAYMENT_AMOUNT_MAJOR, UGX)).toBe(false);
    expect(exceedsMajor(1_000_000_001n, MAX_PAYMENT_AMOUNT_MAJOR, UGX)).toBe(true);
    expect(exceedsMajor(1_000_000_000_000_001n, MAX_PAYMENT_AMOUNT_MAJOR, USDC)).toBe(true);
  });
});

describe('formatMinor and minorToNumber', () => {
  it('prints exactly `exponent` fraction digits', () => {
    expect(formatMinor(500000n, NGN)).toBe('5000.00');
    expect(formatMinor(1n, NGN)).toBe('0.01');
    expect(formatMinor(0n, NGN)).toBe('0.00');
    expect(formatMinor(5000n, UGX)).toBe('5000');
    expect(formatMinor(1n, USDC)).toBe('0.000001');
    expect(formatMinor(-1050n, NGN)).toBe('-10.50');
    expect(formatMinor(100_000_000_000n, NGN)).toBe('1000000000.00');
  });

  it('returns the API number form through the decimal text', () => {
    expect(minorToNumber(500000n, NGN)).toBe(5000);
    expect(minorToNumber(1010n, NGN)).toBe(10.1);
    expect(minorToNumber(29n, NGN)).toBe(0.29);
    expect(minorToNumber(5000n, UGX)).toBe(5000);
    expect(String(minorToNumber(999_999_999_999_999n, USDC))).toBe('999999999.999999');
    expect(String(minorToNumber(99_999_999_999n, NGN))).toBe('999999999.99');
  });

  it('round-trips every amount the API accepts, even at 16 significant digits', () => {
    // Near 1e9 doubles are 1.2e-7 apart, finer than USDC's 1e-6 step, so each amount keeps its text.
    for (let i = 0; i < 2000; i++) {
      const minor = BigInt(Math.floor(Math.random() * 1e9)) * 1_000_000n + BigInt(Math.floor(Math.random() * 1e6)) + 1n;
      expect(parseMajorAmount(minorToNumber(minor, USDC), USDC)).toEqual({ ok: true, minor });
    }
  });

  it('round-trips with parseMajorAmount', () => {
    for (const minor of [1n, 29n, 1010n, 123456789n, 99_999_999_999n]) {
      expect(parseMajorAmount(minorToNumber(minor, NGN), NGN)).toEqual({ ok: true, minor });
    }
  });
});

describe('formatDisplay', () => {
  it('uses hard-coded symbols and its own grouping', () => {
    expect(formatDisplay(500000n, NGN)).toBe('₦5,000.00');
    expect(formatDisplay(1250n, GHS)).toBe('GH₵12.50');
    expect(formatDisplay(100000n, KES)).toBe('KSh 1,000.00');
    expect(formatDisplay(5000n, UGX)).toBe('USh 5,000');
    expect(formatDisplay(1_234_567n, XOF)).toBe('CFA 1,234,567');
    expect(formatDisplay(999n, RWF)).toBe('FRw 999');
    expect(formatDisplay(100_000_000_000n, NGN)).toBe('₦1,000,000,000.00');
    expect(formatDisplay(12_500_000n, USDC)).toBe('12.500000 USDC');
    expect(formatDisplay(5n, USD)).toBe('$0.05');
    expect(formatDisplay(-150000n, NGN)).toBe('-₦1,500.00');
  });
});

describe('formatAmount', () => {
  it('groups, names the code, and keeps every significant decimal but no zeros past two', () => {
    expect(formatAmount(1_000_000_000_000_000n, USDC)).toBe('1,000,000,000.00 USDC');
    expect(formatAmount(15_662_078n, USDC)).toBe('15.662078 USDC');
    expect(formatAmount(12_500_000n, USDC)).toBe('12.50 USDC');
    expect(formatAmount(1n, USDC)).toBe('0.000001 USDC');
    expect(formatAmount(100n, KES)).toBe('1.00 KES');
    expect(formatAmount(2_500_000n, NGN)).toBe('25,000.00 NGN');
    expect(formatAmount(5000n, UGX)).toBe('5,000 UGX');
    expect(formatAmount(-150000n, NGN)).toBe('-1,500.00 NGN');
  });
});

describe('divideRounded and convertMinor', () => {
  it('rounds in the direction asked', () => {
    expect(divideRounded(7n, 2n, 'down')).toBe(3n);
    expect(divideRounded(7n, 2n, 'up')).toBe(4n);
    expect(divideRounded(8n, 2n, 'up')).toBe(4n);
    expect(divideRounded(0n, 3n, 'up')).toBe(0n);
    expect(() => divideRounded(-1n, 2n, 'down')).toThrow(RangeError);
    expect(() => divideRounded(1n, 0n, 'down')).toThrow(RangeError);
  });

  it('converts with one rounding at the end', () => {
    // 10.00 USD → USDC at 1:1
    expect(convertMinor(1000n, 2, 6, { numerator: 1n, denominator: 1n })).toBe(10_000_000n);
    // 1 UGX at 1/3660 USDC per UGX: 273.22… micro-USDC
    expect(convertMinor(1n, 0, 6, { numerator: 1n, denominator: 3660n }, 'down')).toBe(273n);
    expect(convertMinor(1n, 0, 6, { numerator: 1n, denominator: 3660n }, 'up')).toBe(274n);
    expect(() => convertMinor(-1n, 2, 6, { numerator: 1n, denominator: 1n })).toThrow(RangeError);
    expect(() => convertMinor(1n, 2, 6, { numerator: 0n, denominator: 1n })).toThrow(RangeError);
  });
});
