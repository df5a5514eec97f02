import type { PolicyAction, PolicyContext, RuleVerdict } from '../action.ts';
import { normaliseRecipient } from '../../domain/recipients.ts';
import { limitsFor, type Policy } from '../policy-schema.ts';

/**
 * Holds a money action that pays any address this account has never paid before, when the
 * channel's `confirm_first_payout_to_new_recipient` is on. A model steered by a prompt injection
 * most plausibly tries to pay a fresh address, so the first payment to each one is a human's call.
 */
export function firstPayout(action: PolicyAction, context: PolicyContext, policy: Policy): RuleVerdict[] {
  if (!limitsFor(policy, action.channel).confirm_first_payout_to_new_recipient) return [];
  if (action.recipients.length === 0) return [];
  const recipients = [...new Set(action.recipients.map(normaliseRecipient))];
  const fresh = recipients.filter((address) => !context.knownRecipients.has(address));
  if (fresh.length === 0) {
    return [
      {
        rule: 'first_payout',
        outcome: 'allow',
        reason: `This account has paid ${recipients.length === 1 ? 'the recipient' : `all ${recipients.length} recipients`} before`,
      },
    ];
  }
  return [
    {
      rule: 'first_payout',
      outcome: 'require_confirmation',
      reason: `First payout to ${fresh.length === 1 ? 'a new recipient' : `${fresh.length} new recipients`} (${fresh.join(', ')}): the ${action.channel} channel confirms payouts to addresses this account has never paid`,
    },
  ];
}
