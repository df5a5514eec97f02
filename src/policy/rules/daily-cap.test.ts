import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../policy-schema.ts';
import { moneyAction, policyContext, usdc } from '../testing.ts';
import { dailyCap } from './daily-cap.ts';

describe('dailyCap', () => {
  it('allows while spent + amount stays within 10,000 USDC per 24 h on the agent channel', () => {
    const verdicts = dailyCap(
      moneyAction({ amountSettlementMinor: usdc('500') }),
      policyContext({ spentLast24hSettlementMinor: usdc('9500') }),
      DEFAULT_POLICY,
    );
    expect(verdicts).toEqual([
      {
        rule: 'daily_cap',
        outcome: 'allow',
        reason:
          "500 USDC brings the last 24 hours to 10,000 USDC, within the agent channel's cap of 10,000 USDC per 24 hours; 0 USDC will remain",
      },
    ]);
  });

  it('refuses the action that would cross the cap and says how much remains', () => {
    const verdicts = dailyCap(
      moneyAction({ amountSettlementMinor: usdc('800') }),
      policyContext({ spentLast24hSettlementMinor: usdc('9500.25') }),
      DEFAULT_POLICY,
    );
    expect(verdicts).toEqual([
      {
        rule: 'daily_cap',
        outcome: 'deny',
        reason:
          "800 USDC would bring the last 24 hours to 10,300.25 USDC, above the agent channel's cap of 10,000 USDC per 24 hours; 499.75 USDC remains",
      },
    ]);
  });

  it('reports 0 remaining when the cap is already overrun (e.g. after a policy change)', () => {
    const verdicts = dailyCap(
      moneyAction({ channel: 'mcp', amountSettlementMinor: 1n }),
      policyContext({ spentLast24hSettlementMinor: usdc('12000') }),
      DEFAULT_POLICY,
    );
    expect(verdicts[0]?.outcome).toBe('deny');
    expect(verdicts[0]?.reason).toMatch(/; 0 USDC remains$/);
  });

  it('says nothing on a channel without a cap (api by default)', () => {
    const verdicts = dailyCap(
      moneyAction({ channel: 'api', amountSettlementMinor: usdc('900000') }),
      policyContext({ spentLast24hSettlementMinor: usdc('5000000') }),
      DEFAULT_POLICY,
    );
    expect(verdicts).toEqual([]);
  });

  it('denies what it cannot judge: an unknown amount or a negative total', () => {
    const unknown = dailyCap(moneyAction({ amountSettlementMinor: undefined }), policyContext(), DEFAULT_POLICY);
    expect(unknown[0]?.outcome).toBe('deny');
    const negative = dailyCap(
      moneyAction(),
      policyContext({ spentLast24hSettlementMinor: -usdc('1000000') }),
      DEFAULT_POLICY,
    );
    expect(negative[0]).toMatchObject({ rule: 'daily_cap', outcome: 'deny' });
    expect(negative[0]?.reason).toContain('negative');
  });
});
