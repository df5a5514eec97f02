import type { PolicyAction, PolicyContext, RuleVerdict } from '../action.ts';
import type { Policy } from '../policy-schema.ts';

/**
 * Refuses a tool the account switched off, whatever its effect and channel: an owner who disables
 * list_payments for their agent means the agent should not read payments either.
 */
export function toolSwitch(action: PolicyAction, _context: PolicyContext, policy: Policy): RuleVerdict[] {
  if (!policy.tools.disabled.includes(action.tool)) return [];
  return [
    { rule: 'tool_switch', outcome: 'deny', reason: `The ${action.tool} tool is disabled by this account's policy` },
  ];
}
