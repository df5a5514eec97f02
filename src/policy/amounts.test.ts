import { describe, expect, it } from 'vitest';
import { formatSettlementAmount, optionalPolicyAmountToMinor, policyAmountToMinor } from './amounts.ts';

describe('policyAmountToMinor', () => {
  it('reads decimal strings of USDC into 6-decimal minor units without floats', () => {
    expect(policyAmountToMinor('0')).toBe(0n);
    expect(policyAmountToMinor('1000')).toBe(1_000_000_000n);
    expect(policyAmountToMinor('1000.50')).toBe(1_000_500_000n);
    expect(policyAmountToMinor('0.000001')).toBe(1n);
    expect(policyAmountToMinor('0.1')).toBe(100_000n);
    expect(policyAmountToMinor('999999999999999.999999')).toBe(999_999_999_999_999_999_999n);
  });

  it.each([
    '',
    ' 1000',
    '1000 ',
    '-1',
    '+1',
    '01',
    '1.',
    '.5',
    '1e3',
    '1,000',
    '1_000',
    '0x10',
    '1.0000001',
    '1000000000000000',
  ])('refuses %j', (text) => {
    expect(() => policyAmountToMinor(text)).toThrow(RangeError);
  });

  it('maps null (no limit) to undefined', () => {
    expect(optionalPolicyAmountToMinor(null)).toBeUndefined();
    expect(optionalPolicyAmountToMinor('2')).toBe(2_000_000n);
  });
});

describe('formatSettlementAmount', () => {
  it('groups thousands and drops trailing zeros', () => {
    expect(formatSettlementAmount(5_000_000_000n)).toBe('5,000 USDC');
    expect(formatSettlementAmount(1_000_500_000n)).toBe('1,000.5 USDC');
    expect(formatSettlementAmount(3_164_557n)).toBe('3.164557 USDC');
    expect(formatSettlementAmount(0n)).toBe('0 USDC');
    expect(formatSettlementAmount(1n)).toBe('0.000001 USDC');
    expect(formatSettlementAmount(1_000_000_000_000n)).toBe('1,000,000 USDC');
    expect(formatSettlementAmount(-2_500_000n)).toBe('-2.5 USDC');
  });
});
