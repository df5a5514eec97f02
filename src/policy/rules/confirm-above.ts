import type { PolicyAction, PolicyContext, RuleVerdict, RunSpend } from '../action.ts';
import { formatSettlementAmount, optionalPolicyAmountToMinor } from '../amounts.ts';
import { limitsFor, type Policy } from '../policy-schema.ts';

/**
 * Holds a money action above the channel's `confirm_above` for a human. "Above" is strict: exactly
 * the threshold runs. Without a known amount the threshold cannot be checked, so it denies.
 *
 * Inside an agent run the threshold judges the run's total, not the action alone (docs/policy.md):
 * splitting 3,600 USDC into four payouts of 900 must not slip under a 1,000 threshold. The policy
 * has no per-recipient threshold, and what a run pays one recipient is never more than its total,
 * so the total is what the per-recipient count comes to.
 */
export function confirmAbove(action: PolicyAction, context: PolicyContext, policy: Policy): RuleVerdict[] {
  const threshold = optionalPolicyAmountToMinor(limitsFor(policy, action.channel).confirm_above);
  if (threshold === undefined) return [];
  const limit = `the ${action.channel} channel's confirmation threshold of ${formatSettlementAmount(threshold)}`;
  const amount = action.amountSettlementMinor;
  if (amount === undefined) {
    return [{ rule: 'confirm_above', outcome: 'deny', reason: `Cannot check ${limit}: the amount in USDC is unknown` }];
  }
  const judged = context.run === null ? { settlementMinor: amount, actions: 1 } : runTotal(amount, context.run);
  const alone = judged.actions === 1 && judged.settlementMinor === amount;
  const over = judged.settlementMinor > threshold;
  const reason = alone
    ? `${formatSettlementAmount(amount)} is ${over ? 'above' : 'within'} ${limit}`
    : `this run moves ${formatSettlementAmount(judged.settlementMinor)} in total (${judged.actions} ${judged.actions === 1 ? 'action' : 'actions'}, this one ${formatSettlementAmount(amount)}), ${over ? 'above' : 'within'} ${limit}`;
  return [{ rule: 'confirm_above', outcome: over ? 'require_confirmation' : 'allow', reason }];
}

/**
 * A run's total with this action: what the run recorded before plus this action, or what it
 * declared it will move, whichever is larger. A declared plan can only make the judgement
 * stricter: it holds the first of four 900 USDC payouts, where the recorded total alone would
 * only hold the second.
 */
export function runTotal(amount: bigint, run: RunSpend): { settlementMinor: bigint; actions: number } {
  const recorded = { settlementMinor: run.recordedSettlementMinor + amount, actions: run.recordedActions + 1 };
  return run.declaredSettlementMinor > recorded.settlementMinor
    ? { settlementMinor: run.declaredSettlementMinor, actions: run.declaredActions }
    : recorded;
}
