// Builders for the policy tests (this folder's and the lead's pipeline tests). Not used by the
// service itself.

import type { PolicyAction, PolicyContext, RunSpend } from './action.ts';
import { policyAmountToMinor } from './amounts.ts';
import { DEFAULT_POLICY, type Policy, type PolicyChannel } from './policy-schema.ts';

/** "5000" → 5,000 USDC in minor units. */
export function usdc(text: string): bigint {
  return policyAmountToMinor(text);
}

export const KNOWN_ADDRESS = '0x1111111111111111111111111111111111111111';
export const NEW_ADDRESS = '0x2222222222222222222222222222222222222222';
/** Mixed case on purpose: lists and the known set must match it case-insensitively. */
export const CHECKSUMMED_ADDRESS = '0xAbCdEf0123456789aBcDeF0123456789AbCdEf01';

/** A create_payout of `amount` USDC to a recipient the account has paid before, via the agent. */
export function moneyAction(overrides: Partial<PolicyAction> = {}): PolicyAction {
  return {
    tool: 'create_payout',
    effect: 'money',
    channel: 'agent',
    amountSettlementMinor: usdc('500'),
    recipients: [KNOWN_ADDRESS],
    ...overrides,
  };
}

export function policyContext(overrides: Partial<PolicyContext> = {}): PolicyContext {
  return {
    spentLast24hSettlementMinor: 0n,
    knownRecipients: new Set([KNOWN_ADDRESS]),
    run: null,
    ...overrides,
  };
}

/** The run an action belongs to: nothing recorded and nothing declared unless given. */
export function runSpend(overrides: Partial<RunSpend> = {}): RunSpend {
  return {
    recordedSettlementMinor: 0n,
    recordedActions: 0,
    declaredSettlementMinor: 0n,
    declaredActions: 0,
    ...overrides,
  };
}

/** DEFAULT_POLICY with one channel's limits changed (DEFAULT_POLICY itself is frozen). */
export function withChannel(
  channel: PolicyChannel,
  limits: Partial<Policy['channels'][PolicyChannel]>,
  base: Policy = DEFAULT_POLICY,
): Policy {
  return { ...base, channels: { ...base.channels, [channel]: { ...base.channels[channel], ...limits } } };
}
