import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../policy-schema.ts';
import { moneyAction, policyContext, usdc, withChannel } from '../testing.ts';
import { denyAbove } from './deny-above.ts';

describe('denyAbove', () => {
  it('refuses an agent action above 50,000 USDC by default', () => {
    expect(denyAbove(moneyAction({ amountSettlementMinor: usdc('60000') }), policyContext(), DEFAULT_POLICY)).toEqual([
      {
        rule: 'deny_above',
        outcome: 'deny',
        reason: "60,000 USDC is above the agent channel's limit of 50,000 USDC per action",
      },
    ]);
  });

  it('refuses an api action above 1,000,000 USDC and lets exactly 1,000,000 through', () => {
    const api = (amount: string) => moneyAction({ channel: 'api', amountSettlementMinor: usdc(amount) });
    expect(denyAbove(api('1000000.000001'), policyContext(), DEFAULT_POLICY)[0]?.outcome).toBe('deny');
    expect(denyAbove(api('1000000'), policyContext(), DEFAULT_POLICY)).toEqual([
      {
        rule: 'deny_above',
        outcome: 'allow',
        reason: "1,000,000 USDC is within the api channel's limit of 1,000,000 USDC per action",
      },
    ]);
  });

  it('says nothing when the channel has no ceiling', () => {
    const policy = withChannel('api', { deny_above: null });
    const action = moneyAction({ channel: 'api', amountSettlementMinor: usdc('999999999') });
    expect(denyAbove(action, policyContext(), policy)).toEqual([]);
  });

  it('a ceiling of 0 refuses any positive amount on the channel', () => {
    const policy = withChannel('mcp', { deny_above: '0' });
    const action = moneyAction({ channel: 'mcp', amountSettlementMinor: 1n });
    expect(denyAbove(action, policyContext(), policy)[0]?.outcome).toBe('deny');
  });

  it('denies when the amount is unknown', () => {
    const verdicts = denyAbove(moneyAction({ amountSettlementMinor: undefined }), policyContext(), DEFAULT_POLICY);
    expect(verdicts[0]).toMatchObject({ rule: 'deny_above', outcome: 'deny' });
    expect(verdicts[0]?.reason).toContain('amount in USDC is unknown');
  });
});
