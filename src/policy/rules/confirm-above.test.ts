import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../policy-schema.ts';
import { moneyAction, policyContext, runSpend, usdc, withChannel } from '../testing.ts';
import { confirmAbove, runTotal } from './confirm-above.ts';

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
  describe('inside an agent run (the run total is judged)', () => {
    const nineHundred = moneyAction({ amountSettlementMinor: usdc('900') });

    it('four 900 USDC payouts declared up front are one 3,600 USDC decision: the first is held too', () => {
      const run = runSpend({ declaredSettlementMinor: usdc('3600'), declaredActions: 4 });
      expect(confirmAbove(nineHundred, policyContext({ run }), DEFAULT_POLICY)).toEqual([
        {
          rule: 'confirm_above',
          outcome: 'require_confirmation',
          reason:
            "this run moves 3,600 USDC in total (4 actions, this one 900 USDC), above the agent channel's confirmation threshold of 1,000 USDC",
        },
      ]);
    });

    it('without a declared plan, the recorded total plus this action: the first runs, the second is held', () => {
      const first = confirmAbove(nineHundred, policyContext({ run: runSpend() }), DEFAULT_POLICY);
      expect(first).toEqual([
        {
          rule: 'confirm_above',
          outcome: 'allow',
          reason: "900 USDC is within the agent channel's confirmation threshold of 1,000 USDC",
        },
      ]);
      const run = runSpend({ recordedSettlementMinor: usdc('900'), recordedActions: 1 });
      expect(confirmAbove(nineHundred, policyContext({ run }), DEFAULT_POLICY)[0]).toEqual({
        rule: 'confirm_above',
        outcome: 'require_confirmation',
        reason:
          "this run moves 1,800 USDC in total (2 actions, this one 900 USDC), above the agent channel's confirmation threshold of 1,000 USDC",
      });
    });

    it('a run exactly at the threshold runs, and says what it counted', () => {
      const run = runSpend({ recordedSettlementMinor: usdc('100'), recordedActions: 1 });
      expect(confirmAbove(nineHundred, policyContext({ run }), DEFAULT_POLICY)).toEqual([
        {
          rule: 'confirm_above',
          outcome: 'allow',
          reason:
            "this run moves 1,000 USDC in total (2 actions, this one 900 USDC), within the agent channel's confirmation threshold of 1,000 USDC",
        },
      ]);
    });

    it('the larger of recorded-plus-this and declared wins: a plan only ever makes it stricter', () => {
      expect(runTotal(usdc('900'), runSpend({ declaredSettlementMinor: usdc('500'), declaredActions: 1 }))).toEqual({
        settlementMinor: usdc('900'),
        actions: 1,
      });
      const recorded = runSpend({
        recordedSettlementMinor: usdc('2700'),
        recordedActions: 3,
        declaredSettlementMinor: usdc('1800'),
        declaredActions: 2,
      });
      expect(runTotal(usdc('900'), recorded)).toEqual({ settlementMinor: usdc('3600'), actions: 4 });
      const declared = runSpend({ declaredSettlementMinor: usdc('3600'), declaredActions: 4 });
      expect(runTotal(usdc('900'), declared)).toEqual({ settlementMinor: usdc('3600'), actions: 4 });
    });

    it('outside a run (context.run null) only the action counts, as before', () => {
      expect(confirmAbove(nineHundred, policyContext({ run: null }), DEFAULT_POLICY)[0]?.outcome).toBe('allow');
    });
  });
});
