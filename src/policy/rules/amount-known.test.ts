import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../policy-schema.ts';
import { moneyAction, policyContext } from '../testing.ts';
import { amountKnown } from './amount-known.ts';

describe('amountKnown', () => {
  it('denies a money action whose amount could not be converted (no FX rate)', () => {
    expect(amountKnown(moneyAction({ amountSettlementMinor: undefined }), policyContext(), DEFAULT_POLICY)).toEqual([
      {
        rule: 'amount_known',
        outcome: 'deny',
        reason:
          'The amount could not be converted to USDC (no exchange rate for its currency), so the policy cannot judge it',
      },
    ]);
  });

  it('denies a negative amount', () => {
    expect(amountKnown(moneyAction({ amountSettlementMinor: -1n }), policyContext(), DEFAULT_POLICY)[0]?.outcome).toBe(
      'deny',
    );
  });

  it('says nothing about a known amount, including zero', () => {
    expect(amountKnown(moneyAction(), policyContext(), DEFAULT_POLICY)).toEqual([]);
    expect(amountKnown(moneyAction({ amountSettlementMinor: 0n }), policyContext(), DEFAULT_POLICY)).toEqual([]);
  });

  it('ignores read and write actions, which carry no amount', () => {
    const read = moneyAction({ tool: 'get_payment', effect: 'read', amountSettlementMinor: undefined });
    expect(amountKnown(read, policyContext(), DEFAULT_POLICY)).toEqual([]);
    const write = moneyAction({ tool: 'create_payment', effect: 'write', amountSettlementMinor: undefined });
    expect(amountKnown(write, policyContext(), DEFAULT_POLICY)).toEqual([]);
  });
});
