import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY, type Policy } from '../policy-schema.ts';
import { moneyAction, policyContext } from '../testing.ts';
import { toolSwitch } from './tool-switch.ts';

const policy: Policy = { ...DEFAULT_POLICY, tools: { disabled: ['create_payout', 'list_payments'] } };

describe('toolSwitch', () => {
  it('denies a disabled tool on every channel', () => {
    for (const channel of ['api', 'agent', 'mcp'] as const) {
      expect(toolSwitch(moneyAction({ channel }), policyContext(), policy)).toEqual([
        { rule: 'tool_switch', outcome: 'deny', reason: "The create_payout tool is disabled by this account's policy" },
      ]);
    }
  });

  it('denies a disabled read tool too', () => {
    const action = moneyAction({
      tool: 'list_payments',
      effect: 'read',
      amountSettlementMinor: undefined,
      recipients: [],
    });
    expect(toolSwitch(action, policyContext(), policy)[0]?.outcome).toBe('deny');
  });

  it('says nothing about an enabled tool', () => {
    expect(toolSwitch(moneyAction({ tool: 'refund_payment' }), policyContext(), policy)).toEqual([]);
    expect(toolSwitch(moneyAction(), policyContext(), DEFAULT_POLICY)).toEqual([]);
  });
});
