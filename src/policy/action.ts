// What the policy engine judges, and what it answers. The pipeline builds a PolicyAction from the
// validated tool input (through the tool's policy extractors and the FX table) and a PolicyContext
// from the database; the engine itself reads nothing else, so every decision can be replayed from
// the action log.

import type { Channel, ToolEffect } from '../core/tool.ts';

export interface PolicyAction {
  /** The tool's name, e.g. "create_payout"; matched against `tools.disabled`. */
  readonly tool: string;
  readonly effect: ToolEffect;
  /** Where the call came from. `system` is not policy-checked (see evaluatePolicy). */
  readonly channel: Channel;
  /**
   * The money the action moves, in settlement-asset minor units (USDC, 6 decimals), converted at
   * the locked rate when there is one, else the current rate, rounded UP (convertToSettlement).
   * undefined when it could not be converted (no rate for the currency): a money action with an
   * unknown amount is always denied. Ignored for read and write actions.
   */
  readonly amountSettlementMinor: bigint | undefined;
  /**
   * The addresses money goes to: one for a payout, several for a split, none for a refund to the
   * payer's own rail. Any letter case; the rules compare lower-case.
   */
  readonly recipients: readonly string[];
}

export interface PolicyContext {
  /**
   * Settlement minor units of this account's money actions on this channel in the last 24 hours
   * that were allowed, or approved after confirmation, excluding the action being judged. Held,
   * rejected, expired and denied actions do not count: no money moved for them.
   */
  readonly spentLast24hSettlementMinor: bigint;
  /** Lower-case addresses this account has paid before (in this mode); the loader looks up only the action's. */
  readonly knownRecipients: ReadonlySet<string>;
  /**
   * The agent run this action belongs to, when it belongs to one: its money actions count together
   * against the confirmation threshold (docs/policy.md). null outside a run.
   */
  readonly run: RunSpend | null;
}

/**
 * What one agent run moves besides the action being judged, in settlement minor units. The run's
 * total is the larger of what it has recorded so far plus this action, and what it declared up
 * front (see runTotal): four 900 USDC payouts asked for in one message are one 3,600 USDC decision,
 * whether the run declared them (the first is held too) or not (the second and later are held).
 */
export interface RunSpend {
  /**
   * The run's money actions recorded before this one that may move money: executed, held for
   * confirmation, or planned in a dry run (unless the plan was a deny). Denied, failed and rejected
   * actions do not count: they never move money.
   */
  readonly recordedSettlementMinor: bigint;
  readonly recordedActions: number;
  /**
   * The money calls the run declared it will make, this one included, each converted by its own
   * tool's policy extractor as the action itself would be. Zero when the run declared no plan.
   */
  readonly declaredSettlementMinor: bigint;
  readonly declaredActions: number;
}

/** From least to most severe; the engine keeps the most severe. */
export const POLICY_OUTCOMES = Object.freeze(['allow', 'require_confirmation', 'deny'] as const);

export type PolicyOutcome = (typeof POLICY_OUTCOMES)[number];

/** Stable ids of the rules, as they appear in reasons, the action log and API errors. */
export type PolicyRuleId =
  | 'tool_switch'
  | 'amount_known'
  | 'deny_above'
  | 'daily_cap'
  | 'recipient_denylist'
  | 'recipient_allowlist'
  | 'recipient_lists'
  | 'confirm_above'
  | 'first_payout'
  | 'policy_engine';

export interface RuleVerdict {
  readonly rule: PolicyRuleId;
  readonly outcome: PolicyOutcome;
  /** For a person: what was checked, with the numbers, e.g. "5,000 USDC is above … 1,000 USDC". */
  readonly reason: string;
}

export function severity(outcome: PolicyOutcome): number {
  return POLICY_OUTCOMES.indexOf(outcome);
}
