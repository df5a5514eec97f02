import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY, type Policy } from '../policy-schema.ts';
import { CHECKSUMMED_ADDRESS, KNOWN_ADDRESS, moneyAction, NEW_ADDRESS, policyContext } from '../testing.ts';
import { recipientLists } from './recipient-lists.ts';

function withLists(allowlist: string[] | null, denylist: string[]): Policy {
  return { ...DEFAULT_POLICY, recipients: { allowlist, denylist } };
}

describe('recipientLists', () => {
  it('says nothing with the default lists (any address, nobody denied)', () => {
    expect(recipientLists(moneyAction({ recipients: [NEW_ADDRESS] }), policyContext(), DEFAULT_POLICY)).toEqual([]);
  });

  it('denies a denylisted address, case-insensitively, on every channel', () => {
    const policy = withLists(null, [CHECKSUMMED_ADDRESS]);
    for (const channel of ['api', 'agent', 'mcp'] as const) {
      const action = moneyAction({ channel, recipients: [CHECKSUMMED_ADDRESS.toLowerCase()] });
      expect(recipientLists(action, policyContext(), policy)).toEqual([
        {
          rule: 'recipient_denylist',
          outcome: 'deny',
          reason: `On the account's denylist: ${CHECKSUMMED_ADDRESS.toLowerCase()}`,
        },
      ]);
    }
  });

  it('denies an address missing from a set allowlist and allows one on it', () => {
    const policy = withLists([KNOWN_ADDRESS], []);
    expect(recipientLists(moneyAction({ recipients: [NEW_ADDRESS] }), policyContext(), policy)).toEqual([
      { rule: 'recipient_allowlist', outcome: 'deny', reason: `Not on the account's allowlist: ${NEW_ADDRESS}` },
    ]);
    expect(recipientLists(moneyAction({ recipients: [KNOWN_ADDRESS] }), policyContext(), policy)).toEqual([
      { rule: 'recipient_allowlist', outcome: 'allow', reason: "Every recipient is on the account's allowlist" },
    ]);
  });

  it('an empty allowlist allows no address at all', () => {
    const verdicts = recipientLists(moneyAction(), policyContext(), withLists([], []));
    expect(verdicts[0]?.outcome).toBe('deny');
  });

  it('denylist wins over allowlist, and both reasons are given', () => {
    const policy = withLists([KNOWN_ADDRESS], [KNOWN_ADDRESS]);
    const verdicts = recipientLists(moneyAction({ recipients: [KNOWN_ADDRESS] }), policyContext(), policy);
    expect(verdicts.map((v) => [v.rule, v.outcome])).toEqual([
      ['recipient_denylist', 'deny'],
      ['recipient_allowlist', 'allow'],
    ]);
  });

  it('judges every recipient of a split', () => {
    const policy = withLists([KNOWN_ADDRESS], [CHECKSUMMED_ADDRESS]);
    const action = moneyAction({ recipients: [KNOWN_ADDRESS, NEW_ADDRESS, CHECKSUMMED_ADDRESS] });
    const verdicts = recipientLists(action, policyContext(), policy);
    expect(verdicts).toEqual([
      {
        rule: 'recipient_denylist',
        outcome: 'deny',
        reason: `On the account's denylist: ${CHECKSUMMED_ADDRESS.toLowerCase()}`,
      },
      {
        rule: 'recipient_allowlist',
        outcome: 'deny',
        reason: `Not on the account's allowlist: ${NEW_ADDRESS}, ${CHECKSUMMED_ADDRESS.toLowerCase()}`,
      },
    ]);
  });

  it('says nothing when the action pays no address (a refund to the payer)', () => {
    const action = moneyAction({ tool: 'refund_payment', recipients: [] });
    expect(recipientLists(action, policyContext(), withLists([], [KNOWN_ADDRESS]))).toEqual([]);
  });
});
