// The policy engine (docs/policy.md): runs the pure rules over one action and keeps the strictest
// verdict with every reason. It is called by the tool pipeline, outside the model, so nothing a
// model is told can change the outcome. No I/O: the pipeline loads the policy and the context.

import {
  POLICY_OUTCOMES,
  type PolicyAction,
  type PolicyContext,
  type PolicyOutcome,
  type PolicyRuleId,
  type RuleVerdict,
  severity,
} from './action.ts';
import type { Channel } from '../core/tool.ts';
import { isPolicyChannel, type Policy, type PolicyChannel } from './policy-schema.ts';
import { amountKnown } from './rules/amount-known.ts';
import { confirmAbove } from './rules/confirm-above.ts';
import { dailyCap } from './rules/daily-cap.ts';
import { denyAbove } from './rules/deny-above.ts';
import { firstPayout } from './rules/first-payout.ts';
import { recipientLists } from './rules/recipient-lists.ts';
import { toolSwitch } from './rules/tool-switch.ts';

export type PolicyRule = (action: PolicyAction, context: PolicyContext, policy: Policy) => readonly RuleVerdict[];

interface RegisteredRule {
  /** Names the rule in the deny verdict when it throws. */
  readonly id: PolicyRuleId;
  readonly run: PolicyRule;
}

/** Every rule, in the order reasons of equal severity are listed. */
const MONEY_RULES: readonly RegisteredRule[] = Object.freeze([
  { id: 'tool_switch', run: toolSwitch },
  { id: 'amount_known', run: amountKnown },
  { id: 'deny_above', run: denyAbove },
  { id: 'daily_cap', run: dailyCap },
  { id: 'recipient_lists', run: recipientLists },
  { id: 'confirm_above', run: confirmAbove },
  { id: 'first_payout', run: firstPayout },
]);

/**
 * Reads and writes move no money now: the per-tool switch applies to them, and the recipient lists
 * to a write that names where money will go later (a payment's payout_address receives the payer's
 * money at settlement; the lists have nothing to say when a write names no address).
 */
const NON_MONEY_RULES: readonly RegisteredRule[] = Object.freeze([
  { id: 'tool_switch', run: toolSwitch },
  { id: 'recipient_lists', run: recipientLists },
]);

export interface EvaluateOptions {
  /**
   * True when a human approved this exact held action and it is now being executed. Each
   * `require_confirmation` verdict is satisfied by that approval and becomes `allow`; every other
   * rule is checked again as if for the first time, so a deny (a cap used up meanwhile, an address
   * denylisted meanwhile) still refuses it.
   */
  satisfiedConfirmation?: boolean;
}

export interface PolicyDecision {
  /** The strictest verdict: deny > require_confirmation > allow; allow when no rule spoke. */
  readonly outcome: PolicyOutcome;
  /** Every verdict a rule gave, strictest first (allow verdicts say what was checked and passed). */
  readonly reasons: readonly RuleVerdict[];
}

/**
 * Judges one action against the account's policy.
 *
 * - `system` actions (the service's own workers) are not policy-checked and are allowed: they carry
 *   out what a policy-checked action or the service itself already committed to.
 * - Read and write actions meet the per-tool switch, and the recipient lists when they name one.
 * - Money actions meet every rule. A rule that throws denies the action with the error as reason;
 *   so does a channel or effect the engine does not know.
 */
export function evaluatePolicy(
  policy: Policy,
  action: PolicyAction,
  context: PolicyContext,
  options: EvaluateOptions = {},
): PolicyDecision {
  if (action.channel === 'system') {
    return decide([
      {
        rule: 'policy_engine',
        outcome: 'allow',
        reason: "The system channel (the service's own workers) is not policy-checked",
      },
    ]);
  }
  if (!isPolicyChannel(action.channel)) {
    return decide([{ rule: 'policy_engine', outcome: 'deny', reason: `Unknown channel ${String(action.channel)}` }]);
  }
  if (action.effect !== 'money' && action.effect !== 'read' && action.effect !== 'write') {
    return decide([{ rule: 'policy_engine', outcome: 'deny', reason: `Unknown effect ${String(action.effect)}` }]);
  }

  const rules = action.effect === 'money' ? MONEY_RULES : NON_MONEY_RULES;
  const verdicts = rules.flatMap((rule) => runRule(rule, policy, action, context));
  return decide(options.satisfiedConfirmation === true ? verdicts.map(satisfyConfirmation) : verdicts);
}

function runRule(rule: RegisteredRule, policy: Policy, action: PolicyAction, context: PolicyContext): RuleVerdict[] {
  try {
    const verdicts = rule.run(action, context, policy);
    // A verdict outside the closed set would otherwise sort as "less than allow" and vanish.
    return verdicts.map((verdict) =>
      POLICY_OUTCOMES.includes(verdict.outcome)
        ? verdict
        : {
            rule: rule.id,
            outcome: 'deny',
            reason: `The ${rule.id} rule gave an unknown outcome ${String(verdict.outcome)}`,
          },
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return [{ rule: rule.id, outcome: 'deny', reason: `The ${rule.id} rule could not judge this action (${message})` }];
  }
}

function satisfyConfirmation(verdict: RuleVerdict): RuleVerdict {
  if (verdict.outcome !== 'require_confirmation') return verdict;
  return { rule: verdict.rule, outcome: 'allow', reason: `${verdict.reason}; confirmed by an approver` };
}

function decide(verdicts: readonly RuleVerdict[]): PolicyDecision {
  // Array.prototype.sort is stable, so equal severities keep the rule order.
  const reasons = [...verdicts].sort((a, b) => severity(b.outcome) - severity(a.outcome));
  return { outcome: reasons[0]?.outcome ?? 'allow', reasons };
}

/** Whose limits an assistant's key is held to, on every channel: those of outside models. */
export const ASSISTANT_CHANNEL: PolicyChannel = 'mcp';

/**
 * The channels whose limits judge a call (docs/policy.md: limits follow the principal): the one it
 * arrived on and, for an assistant's key, the assistant channel too, whatever transport carried
 * it. So a key held at its MCP limits is held the same way when it calls REST, the agent or
 * anything else; the strictest of the two decisions applies (strictestDecision).
 */
export function judgingChannels(actor: { channel: Channel; assistant?: boolean }): Channel[] {
  if (actor.assistant !== true || actor.channel === ASSISTANT_CHANNEL || actor.channel === 'system') {
    return [actor.channel];
  }
  return [actor.channel, ASSISTANT_CHANNEL];
}

/**
 * One decision from the decisions of several channels on the same action: the strictest outcome,
 * with every distinct reason (a rule that reads no channel limit, such as the tool switch, speaks
 * once).
 */
export function strictestDecision(decisions: readonly PolicyDecision[]): PolicyDecision {
  const seen = new Set<string>();
  const verdicts = decisions
    .flatMap((decision) => decision.reasons)
    .filter((verdict) => {
      const key = `${verdict.rule}\u0000${verdict.outcome}\u0000${verdict.reason}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  return decide(verdicts);
}

/**
 * One line for an error message or a held action's summary: the reasons that decided the outcome
 * (the deny reasons for a deny, the confirmation reasons for a hold), joined with "; ".
 */
export function summarizeDecision(decision: PolicyDecision): string {
  const deciding = decision.reasons.filter((verdict) => verdict.outcome === decision.outcome);
  return deciding.map((verdict) => verdict.reason).join('; ');
}
