import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../policy-schema.ts';
import { moneyAction, policyContext, usdc, withChannel } from '../testing.ts';
import { confirmAbove } from './confirm-above.ts';

describe('confirmAbove', () => {
  it('holds an agent action above 1,000 USDC by default, with the numbers in the reason', () => {
    expect(confirmAbove(moneyAction({ amountSettlementMinor: usdc('5000') }), policyContext(), DEFAULT_POLICY)).toEqual(
      [
        {
          rule: 'confirm_above',
          outcome: 'require_confirmation',
          reason: "5,000 USDC is above the agent channel's confirmation threshold of 1,000 USDC",
        },
      ],
    );
  });

  it('lets exactly the threshold through ("above" is strict) and one minor unit more is held', () => {
    const at = confirmAbove(moneyAction({ amountSettlementMinor: usdc('1000') }), policyContext(), DEFAULT_POLICY);
    expect(at).toEqual([
      {
        rule: 'confirm_above',
        outcome: 'allow',
        reason: "1,000 USDC is within the agent channel's confirmation threshold of 1,000 USDC",
      },
    ]);
    const over = confirmAbove(
      moneyAction({ amountSettlementMinor: usdc('1000.000001') }),
      policyContext(),
      DEFAULT_POLICY,
    );
    expect(over[0]?.outcome).toBe('require_confirmation');
  });

  it('says nothing where the channel has no threshold (api by default)', () => {
    const action = moneyAction({ channel: 'api', amountSettlementMinor: usdc('900000') });
    expect(confirmAbove(action, policyContext(), DEFAULT_POLICY)).toEqual([]);
  });

  it('reads fractional thresholds exactly', () => {
    const policy = withChannel('mcp', { confirm_above: '0.5' });
    const action = (amount: string) => moneyAction({ channel: 'mcp', amountSettlementMinor: usdc(amount) });
    expect(confirmAbove(action('0.5'), policyContext(), policy)[0]?.outcome).toBe('allow');
    expect(confirmAbove(action('0.500001'), policyContext(), policy)[0]?.outcome).toBe('require_confirmation');
  });

  it('denies when the amount is unknown: the threshold cannot be checked', () => {
    const verdicts = confirmAbove(moneyAction({ amountSettlementMinor: undefined }), policyContext(), DEFAULT_POLICY);
    expect(verdicts).toEqual([
      {
        rule: 'confirm_above',
        outcome: 'deny',
        reason: "Cannot check the agent channel's confirmation threshold of 1,000 USDC: the amount in USDC is unknown",
      },
    ]);
  });
});
