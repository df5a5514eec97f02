import type { PolicyAction, PolicyContext, RuleVerdict } from '../action.ts';
import { formatSettlementAmount, optionalPolicyAmountToMinor } from '../amounts.ts';
import { limitsFor, type Policy } from '../policy-schema.ts';

/**
 * Holds a money action above the channel's `confirm_above` for a human. "Above" is strict: exactly
 * the threshold runs. Without a known amount the threshold cannot be checked, so it denies.
 */
export function confirmAbove(action: PolicyAction, _context: PolicyContext, policy: Policy): RuleVerdict[] {
  const threshold = optionalPolicyAmountToMinor(limitsFor(policy, action.channel).confirm_above);
  if (threshold === undefined) return [];
  const limit = `the ${action.channel} channel's confirmation threshold of ${formatSettlementAmount(threshold)}`;
  const amount = action.amountSettlementMinor;
  if (amount === undefined) {
    return [{ rule: 'confirm_above', outcome: 'deny', reason: `Cannot check ${limit}: the amount in USDC is unknown` }];
  }
  return amount > threshold
    ? [
        {
          rule: 'confirm_above',
          outcome: 'require_confirmation',
          reason: `${formatSettlementAmount(amount)} is above ${limit}`,
        },
      ]
    : [{ rule: 'confirm_above', outcome: 'allow', reason: `${formatSettlementAmount(amount)} is within ${limit}` }];
}
