import type { PolicyAction, PolicyContext, RuleVerdict } from '../action.ts';
import { formatSettlementAmount, optionalPolicyAmountToMinor } from '../amounts.ts';
import { limitsFor, type Policy } from '../policy-schema.ts';

/**
 * Refuses a money action that would take the channel's rolling 24-hour total above `daily_cap`.
 * A cap is a hard limit, not a prompt for confirmation: an approver cannot lift it, only the
 * passing of time or a policy change can. The reason says how much remains so a smaller action
 * can be tried.
 */
export function dailyCap(action: PolicyAction, context: PolicyContext, policy: Policy): RuleVerdict[] {
  const cap = optionalPolicyAmountToMinor(limitsFor(policy, action.channel).daily_cap);
  if (cap === undefined) return [];
  const limit = `the ${action.channel} channel's cap of ${formatSettlementAmount(cap)} per 24 hours`;
  const amount = action.amountSettlementMinor;
  const spent = context.spentLast24hSettlementMinor;
  if (amount === undefined) {
    return [{ rule: 'daily_cap', outcome: 'deny', reason: `Cannot check ${limit}: the amount in USDC is unknown` }];
  }
  if (spent < 0n) {
    // A negative total is a bug upstream; treating it as headroom would let money through.
    return [{ rule: 'daily_cap', outcome: 'deny', reason: `Cannot check ${limit}: the 24-hour total is negative` }];
  }
  const total = spent + amount;
  const remaining = cap > spent ? cap - spent : 0n;
  if (total > cap) {
    return [
      {
        rule: 'daily_cap',
        outcome: 'deny',
        reason: `${formatSettlementAmount(amount)} would bring the last 24 hours to ${formatSettlementAmount(total)}, above ${limit}; ${formatSettlementAmount(remaining)} remains`,
      },
    ];
  }
  return [
    {
      rule: 'daily_cap',
      outcome: 'allow',
      reason: `${formatSettlementAmount(amount)} brings the last 24 hours to ${formatSettlementAmount(total)}, within ${limit}; ${formatSettlementAmount(cap - total)} will remain`,
    },
  ];
}
