import { describe, expect, it } from 'vitest';
import {
  convertFromSettlement,
  convertToSettlement,
  getRate,
  isValidRate,
  loadRatesFile,
  quoteFromTable,
  quoteSettlement,
  rateToRatio,
  SANDBOX_RATES,
} from './fx.ts';
import { CURRENCIES, SUPPORTED_CURRENCY_CODES } from './money.ts';

const { NGN, UGX, USD, USDC, EUR, XOF } = CURRENCIES;

// Expected values below were computed independently with Python's fractions.Fraction:
// gross = floor(amount_minor × 10^6 / (10^exponent × rate)), fee = ceil(gross × bps / 10000).

describe('rates', () => {
  it('parses decimal strings into exact ratios', () => {
    expect(rateToRatio('1580.25')).toEqual({ numerator: 158025n, denominator: 100n });
    expect(rateToRatio('3660')).toEqual({ numerator: 3660n, denominator: 1n });
    expect(rateToRatio('0.000000000001')).toEqual({ numerator: 1n, denominator: 1_000_000_000_000n });
  });

  it('accepts only positive plain decimals with up to 12 fraction digits', () => {
    for (const good of ['1', '0.86', '1580.25', '0.000000000001', '123456789012345'])
      expect(isValidRate(good)).toBe(true);
    for (const bad of ['0', '0.0', '-1', '+1', '1e3', '01', '1.', '.5', '1.0000000000001', '', ' 1', '1,5', 'NaN']) {
      expect(isValidRate(bad)).toBe(false);
    }
    expect(() => rateToRatio('0')).toThrow(RangeError);
  });

  it('labels the sandbox table and covers every fiat currency', () => {
    expect(SANDBOX_RATES.source).toBe('sandbox');
    expect(SANDBOX_RATES.base).toBe('USDC');
    for (const code of SUPPORTED_CURRENCY_CODES) {
      const rate = getRate(SANDBOX_RATES, code);
      expect(rate, code).toBeDefined();
      expect(isValidRate(rate ?? ''), code).toBe(true);
    }
    expect(getRate(SANDBOX_RATES, 'USD')).toBe('1');
    expect(getRate(SANDBOX_RATES, 'USDC')).toBe('1');
    expect(getRate(SANDBOX_RATES, 'XYZ')).toBeUndefined();
    expect(getRate(SANDBOX_RATES, 'constructor')).toBeUndefined();
  });
});

describe('quoteSettlement', () => {
  it('locks a quote for 5,000.00 NGN at 1580.25 with a 1% fee', () => {
    const quote = quoteSettlement({
      amountMinor: 500000n,
      currency: NGN,
      rate: '1580.25',
      feeBps: 100,
      source: 'sandbox',
    });
    expect(quote).toEqual({
      source: 'sandbox',
      currency: 'NGN',
      settlement_currency: 'USDC',
      amount_minor: 500000n,
      rate: '1580.25',
      fee_bps: 100,
      gross_settlement_minor: 3_164_056n, // 3.164056 USDC (exact value 3.16405632…, rounded down)
      fee_minor: 31_641n, // 31640.56 rounded up
      settlement_minor: 3_132_415n,
    });
  });

  it('rounds gross down and fee up at the edges', () => {
    // 0.01 NGN is 6.328… micro-USDC: gross 6, and any non-zero fee takes at least 1.
    const tiny = quoteSettlement({ amountMinor: 1n, currency: NGN, rate: '1580.25', feeBps: 1, source: 'sandbox' });
    expect([tiny.gross_settlement_minor, tiny.fee_minor, tiny.settlement_minor]).toEqual([6n, 1n, 5n]);
    // An exact division leaves nothing to round: 1.00 USD at 1 → 1 USDC, 1.5% of it exactly 15000.
    const exact = quoteSettlement({ amountMinor: 100n, currency: USD, rate: '1', feeBps: 150, source: 'sandbox' });
    expect([exact.gross_settlement_minor, exact.fee_minor, exact.settlement_minor]).toEqual([
      1_000_000n,
      15_000n,
      985_000n,
    ]);
    // 0.01 EUR at 0.86 EUR per USDC is 11627.9… micro-USDC.
    const eur = quoteSettlement({ amountMinor: 1n, currency: EUR, rate: '0.86', feeBps: 100, source: 'sandbox' });
    expect([eur.gross_settlement_minor, eur.fee_minor]).toEqual([11_627n, 117n]);
  });

  it('handles a currency without minor units', () => {
    const quote = quoteSettlement({ amountMinor: 5000n, currency: UGX, rate: '3660', feeBps: 150, source: 'sandbox' });
    expect([quote.gross_settlement_minor, quote.fee_minor, quote.settlement_minor]).toEqual([
      1_366_120n,
      20_492n,
      1_345_628n,
    ]);
    const one = quoteSettlement({ amountMinor: 1n, currency: UGX, rate: '3660', feeBps: 100, source: 'sandbox' });
    expect([one.gross_settlement_minor, one.fee_minor]).toEqual([273n, 3n]);
    const xof = quoteSettlement({ amountMinor: 100000n, currency: XOF, rate: '565', feeBps: 100, source: 'sandbox' });
    expect([xof.gross_settlement_minor, xof.fee_minor]).toEqual([176_991_150n, 1_769_912n]);
  });

  it('is exact at the largest amount the API accepts', () => {
    const quote = quoteSettlement({
      amountMinor: 100_000_000_000n, // 1,000,000,000.00 NGN
      currency: NGN,
      rate: '1580.25',
      feeBps: 150,
      source: 'file',
    });
    expect(quote.gross_settlement_minor).toBe(632_811_264_040n);
    expect(quote.fee_minor).toBe(9_492_168_961n);
    expect(quote.settlement_minor).toBe(623_319_095_079n);
    expect(quote.source).toBe('file');

    const ugx = quoteSettlement({
      amountMinor: 1_000_000_000n,
      currency: UGX,
      rate: '3660',
      feeBps: 100,
      source: 'file',
    });
    expect([ugx.gross_settlement_minor, ugx.fee_minor]).toEqual([273_224_043_715n, 2_732_240_438n]);
  });

  it('takes nothing at 0 bps and everything at 10000 bps', () => {
    const free = quoteSettlement({
      amountMinor: 500000n,
      currency: NGN,
      rate: '1580.25',
      feeBps: 0,
      source: 'sandbox',
    });
    expect([free.fee_minor, free.settlement_minor]).toEqual([0n, 3_164_056n]);
    const all = quoteSettlement({
      amountMinor: 500000n,
      currency: NGN,
      rate: '1580.25',
      feeBps: 10_000,
      source: 'sandbox',
    });
    expect([all.fee_minor, all.settlement_minor]).toEqual([3_164_056n, 0n]);
  });

  it('always satisfies gross = fee + settlement, with settlement never negative', () => {
    for (const amountMinor of [0n, 1n, 7n, 99n, 12345n, 500000n, 100_000_000_000n]) {
      for (const feeBps of [0, 1, 99, 150, 5000, 9999, 10_000]) {
        const q = quoteSettlement({ amountMinor, currency: NGN, rate: '1580.25', feeBps, source: 'sandbox' });
        expect(q.fee_minor + q.settlement_minor).toBe(q.gross_settlement_minor);
        expect(q.settlement_minor >= 0n).toBe(true);
      }
    }
  });

  it('refuses bad fees, negative amounts and bad rates', () => {
    const base = { amountMinor: 100n, currency: NGN, rate: '1580.25', source: 'sandbox' } as const;
    for (const feeBps of [-1, 10_001, 1.5, Number.NaN]) {
      expect(() => quoteSettlement({ ...base, feeBps })).toThrow(RangeError);
    }
    expect(() => quoteSettlement({ ...base, amountMinor: -1n, feeBps: 0 })).toThrow(RangeError);
    expect(() => quoteSettlement({ ...base, rate: '0', feeBps: 0 })).toThrow(RangeError);
    expect(() => quoteSettlement({ ...base, rate: '1e3', feeBps: 0 })).toThrow(RangeError);
  });

  it('quotes from a table with its source', () => {
    const quote = quoteFromTable(500000n, NGN, SANDBOX_RATES, 100);
    expect(quote?.source).toBe('sandbox');
    expect(quote?.gross_settlement_minor).toBe(3_164_056n);
    const partial = loadRatesFile({ base: 'USDC', rates: { NGN: '1500' } });
    if (!partial.ok) throw new Error('fixture');
    expect(quoteFromTable(100n, CURRENCIES.KES, partial.table, 100)).toBeUndefined();
  });
});

describe('convertToSettlement and convertFromSettlement', () => {
  it('rounds up for policy thresholds', () => {
    expect(convertToSettlement(500000n, NGN, SANDBOX_RATES)).toBe(3_164_057n);
    expect(convertToSettlement(158025n, NGN, SANDBOX_RATES)).toBe(1_000_000n); // exactly 1 USDC
    expect(convertToSettlement(1n, UGX, SANDBOX_RATES)).toBe(274n);
    expect(convertToSettlement(2_500_000n, USDC, SANDBOX_RATES)).toBe(2_500_000n);
    const partial = loadRatesFile({ base: 'USDC', rates: { NGN: '1500' } });
    if (!partial.ok) throw new Error('fixture');
    expect(convertToSettlement(100n, CURRENCIES.KES, partial.table)).toBeUndefined();
  });

  it('converts settlement back at the locked rate, rounding down', () => {
    expect(convertFromSettlement(3_164_056n, NGN, '1580.25')).toBe(499_999n); // 4,999.99 NGN, never 5,000.00
    expect(convertFromSettlement(1_000_000n, NGN, '1580.25')).toBe(158_025n);
    expect(convertFromSettlement(1_366_120n, UGX, '3660')).toBe(4_999n);
    expect(convertFromSettlement(1n, UGX, '3660')).toBe(0n);
  });
});

describe('loadRatesFile', () => {
  it('accepts a well-formed file and labels it', () => {
    const result = loadRatesFile({
      base: 'USDC',
      as_of: '2026-01-15T09:00:00Z',
      rates: { NGN: '1601.5', KES: '129.100000000001', USDC: '1.000' },
    });
    expect(result).toEqual({
      ok: true,
      table: {
        source: 'file',
        base: 'USDC',
        asOf: '2026-01-15T09:00:00Z',
        rates: { NGN: '1601.5', KES: '129.100000000001', USDC: '1.000' },
      },
    });
    if (result.ok) expect(getRate(result.table, 'NGN')).toBe('1601.5');
  });

  it('lists every problem with its path', () => {
    const result = loadRatesFile({
      base: 'USDC',
      rates: { NGN: 1580.25, KES: '-1', XYZ: '1', UGX: '1.0000000000001' },
      extra: true,
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues.some((i) => i.startsWith('rates.NGN:'))).toBe(true);
    expect(result.issues.some((i) => i.startsWith('rates.KES:'))).toBe(true);
    expect(result.issues.some((i) => i.startsWith('rates.XYZ:') && i.includes('not a supported currency'))).toBe(true);
    expect(result.issues.some((i) => i.startsWith('rates.UGX:'))).toBe(true);
    expect(result.issues.some((i) => i.includes('extra'))).toBe(true);
  });

  it('refuses other bases, empty tables, bad dates, a self-contradicting base and non-objects', () => {
    expect(loadRatesFile({ base: 'USD', rates: { NGN: '1' } }).ok).toBe(false);
    expect(loadRatesFile({ base: 'USDC', rates: {} }).ok).toBe(false);
    expect(loadRatesFile({ base: 'USDC', as_of: 'yesterday', rates: { NGN: '1' } }).ok).toBe(false);
    expect(loadRatesFile({ base: 'USDC', rates: { USDC: '1.01' } })).toEqual({
      ok: false,
      issues: ["rates.USDC: the base currency's rate must be 1"],
    });
    expect(loadRatesFile(null).ok).toBe(false);
    expect(loadRatesFile('{"base":"USDC"}').ok).toBe(false);
  });
});
