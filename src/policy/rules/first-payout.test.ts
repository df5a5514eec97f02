import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../policy-schema.ts';
import { CHECKSUMMED_ADDRESS, KNOWN_ADDRESS, moneyAction, NEW_ADDRESS, policyContext } from '../testing.ts';
import { firstPayout } from './first-payout.ts';

describe('firstPayout', () => {
  it('holds a payout to an address never paid before on agent and mcp', () => {
    for (const channel of ['agent', 'mcp'] as const) {
      const verdicts = firstPayout(
        moneyAction({ channel, recipients: [NEW_ADDRESS] }),
        policyContext(),
        DEFAULT_POLICY,
      );
      expect(verdicts).toEqual([
        {
          rule: 'first_payout',
          outcome: 'require_confirmation',
          reason: `First payout to a new recipient (${NEW_ADDRESS}): the ${channel} channel confirms payouts to addresses this account has never paid`,
        },
      ]);
    }
  });

  it('says nothing on api, where the flag is off by default', () => {
    const action = moneyAction({ channel: 'api', recipients: [NEW_ADDRESS] });
    expect(firstPayout(action, policyContext(), DEFAULT_POLICY)).toEqual([]);
  });

  it('allows a known recipient, matching the address case-insensitively', () => {
    const context = policyContext({ knownRecipients: new Set([CHECKSUMMED_ADDRESS.toLowerCase()]) });
    const verdicts = firstPayout(moneyAction({ recipients: [CHECKSUMMED_ADDRESS] }), context, DEFAULT_POLICY);
    expect(verdicts).toEqual([
      { rule: 'first_payout', outcome: 'allow', reason: 'This account has paid the recipient before' },
    ]);
  });

  it('holds a split when any one of its recipients is new, and names only the new ones', () => {
    const action = moneyAction({
      tool: 'split_revenue',
      recipients: [KNOWN_ADDRESS, NEW_ADDRESS, CHECKSUMMED_ADDRESS],
    });
    const [verdict] = firstPayout(action, policyContext(), DEFAULT_POLICY);
    expect(verdict?.outcome).toBe('require_confirmation');
    expect(verdict?.reason).toContain(`2 new recipients (${NEW_ADDRESS}, ${CHECKSUMMED_ADDRESS.toLowerCase()})`);
    expect(verdict?.reason).not.toContain(KNOWN_ADDRESS);
  });

  it('counts an address repeated in one split once', () => {
    const action = moneyAction({ recipients: [KNOWN_ADDRESS, KNOWN_ADDRESS.toUpperCase().replace('0X', '0x')] });
    expect(firstPayout(action, policyContext(), DEFAULT_POLICY)[0]?.reason).toBe(
      'This account has paid the recipient before',
    );
  });

  it('says nothing when the action pays no address (a refund to the payer)', () => {
    const action = moneyAction({ tool: 'refund_payment', recipients: [] });
    expect(firstPayout(action, policyContext({ knownRecipients: new Set() }), DEFAULT_POLICY)).toEqual([]);
  });
});
