import type { PolicyAction, PolicyContext, RuleVerdict } from '../action.ts';
import type { Policy } from '../policy-schema.ts';

/**
 * Denies a money action whose amount could not be put in USDC (no exchange rate for its currency)
 * or makes no sense. Every limit is in USDC, so such an action cannot be judged, and it is refused
 * even on a channel with no limits at all: "no limit" was chosen for amounts the policy can see.
 */
export function amountKnown(action: PolicyAction, _context: PolicyContext, _policy: Policy): RuleVerdict[] {
  if (action.effect !== 'money') return [];
  const amount = action.amountSettlementMinor;
  if (amount === undefined) {
    return [
      {
        rule: 'amount_known',
        outcome: 'deny',
        reason:
          'The amount could not be converted to USDC (no exchange rate for its currency), so the policy cannot judge it',
      },
    ];
  }
  if (amount < 0n) {
    return [{ rule: 'amount_known', outcome: 'deny', reason: 'The amount is negative, so the policy cannot judge it' }];
  }
  return [];
}
