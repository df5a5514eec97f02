import type { PolicyAction, PolicyContext, RuleVerdict } from '../action.ts';
import { formatSettlementAmount, optionalPolicyAmountToMinor } from '../amounts.ts';
import { limitsFor, type Policy } from '../policy-schema.ts';

/** Refuses a money action above the channel's `deny_above` ceiling. Exactly the ceiling runs. */
export function denyAbove(action: PolicyAction, _context: PolicyContext, policy: Policy): RuleVerdict[] {
  const ceiling = optionalPolicyAmountToMinor(limitsFor(policy, action.channel).deny_above);
  if (ceiling === undefined) return [];
  const limit = `the ${action.channel} channel's limit of ${formatSettlementAmount(ceiling)} per action`;
  const amount = action.amountSettlementMinor;
  if (amount === undefined) {
    return [{ rule: 'deny_above', outcome: 'deny', reason: `Cannot check ${limit}: the amount in USDC is unknown` }];
  }
  return amount > ceiling
    ? [{ rule: 'deny_above', outcome: 'deny', reason: `${formatSettlementAmount(amount)} is above ${limit}` }]
    : [{ rule: 'deny_above', outcome: 'allow', reason: `${formatSettlementAmount(amount)} is within ${limit}` }];
}
