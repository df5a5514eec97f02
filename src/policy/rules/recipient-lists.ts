import type { PolicyAction, PolicyContext, RuleVerdict } from '../action.ts';
import { normaliseRecipient } from '../../domain/recipients.ts';
import type { Policy } from '../policy-schema.ts';

/**
 * The account's address lists, on every channel: an address on the denylist is refused, and when
 * an allowlist is set, an address not on it is refused. The denylist wins when an address is on
 * both. A money action with no recipient address (a refund back to the payer's own rail) is not
 * something either list speaks about.
 */
export function recipientLists(action: PolicyAction, _context: PolicyContext, policy: Policy): RuleVerdict[] {
  if (action.recipients.length === 0) return [];
  const recipients = [...new Set(action.recipients.map(normaliseRecipient))];
  const verdicts: RuleVerdict[] = [];

  const { allowlist, denylist } = policy.recipients;
  if (denylist.length > 0) {
    const denied = new Set(denylist.map(normaliseRecipient));
    const hits = recipients.filter((address) => denied.has(address));
    verdicts.push(
      hits.length > 0
        ? { rule: 'recipient_denylist', outcome: 'deny', reason: `On the account's denylist: ${hits.join(', ')}` }
        : { rule: 'recipient_denylist', outcome: 'allow', reason: "No recipient is on the account's denylist" },
    );
  }
  if (allowlist !== null) {
    const allowed = new Set(allowlist.map(normaliseRecipient));
    const misses = recipients.filter((address) => !allowed.has(address));
    verdicts.push(
      misses.length > 0
        ? {
            rule: 'recipient_allowlist',
            outcome: 'deny',
            reason: `Not on the account's allowlist: ${misses.join(', ')}`,
          }
        : { rule: 'recipient_allowlist', outcome: 'allow', reason: "Every recipient is on the account's allowlist" },
    );
  }
  return verdicts;
}
