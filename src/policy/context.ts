import type { Channel } from '../core/tool.ts';
import type { Db } from '../db/database.ts';
import { sumRunRecordedSpend } from '../db/repositories/agent-actions.ts';
import { listPaidRecipients } from '../db/repositories/payouts.ts';
import { insertPolicySpend, sumPolicySpendSince } from '../db/repositories/policy-spend.ts';
import type { PolicyContext, RunSpend } from './action.ts';
import { normaliseRecipient } from '../domain/recipients.ts';
import type { DeclaredSpend } from './run-plan.ts';

const DAY_MS = 24 * 3600_000;

/** The agent run an action belongs to, as the pipeline knows it. */
export interface RunScope {
  runId: string;
  /** What the run declared it will move (declaredSpend), or none when it declared no plan. */
  declared: DeclaredSpend;
  /**
   * Set when a human approved this action and it now runs: its own held row is already recorded
   * for the run and must not count a second time.
   */
  approvedConfirmationId: string | null;
}

/**
 * Counts a money action the policy let through (or a human approved) towards the rolling 24-hour
 * cap of its channel: the history loadPolicyContext reads. In the action's transaction.
 */
export async function recordPolicySpend(
  db: Db,
  spend: {
    actor: { accountId: string; livemode: boolean; channel: Channel };
    tool: string;
    objectId: string | null;
    amountSettlementMinor: bigint;
    at: Date;
  },
): Promise<void> {
  await insertPolicySpend(db, {
    account_id: spend.actor.accountId,
    livemode: spend.actor.livemode,
    channel: spend.actor.channel,
    tool: spend.tool,
    object_id: spend.objectId ?? '',
    amount_settlement_minor: spend.amountSettlementMinor,
    created_at: spend.at,
  });
}

/**
 * What the rules need from history: the money this channel moved in the last 24 hours and which
 * of the action's recipients this account has paid before (only those: an account's whole payout
 * history would be read on every money action). Read inside the action's transaction, after the
 * account's action-log head is locked, so two concurrent actions cannot both slip under a cap.
 */
export async function loadPolicyContext(
  db: Db,
  actor: { accountId: string; livemode: boolean; channel: Channel },
  actionRecipients: readonly string[],
  now: Date,
  run: RunScope | null = null,
): Promise<PolicyContext> {
  const spent = await sumPolicySpendSince(db, actor, new Date(now.getTime() - DAY_MS));
  const asked = [...new Set(actionRecipients.map(normaliseRecipient))];
  const recipients = asked.length === 0 ? [] : await listPaidRecipients(db, actor, asked);
  return {
    spentLast24hSettlementMinor: BigInt(spent),
    knownRecipients: new Set(recipients),
    run: run === null ? null : await loadRunSpend(db, actor, run),
  };
}

/**
 * The money the run has recorded so far, by the amounts the policy judged when each action was
 * recorded (agent_actions.amount_settlement_minor): executed and held actions, and a dry run's
 * planned ones unless the plan was a deny. Read under the same account lock as the rest of the
 * context, so two calls of one run cannot both count without the other.
 */
async function loadRunSpend(db: Db, actor: { accountId: string; livemode: boolean }, run: RunScope): Promise<RunSpend> {
  const recorded = await sumRunRecordedSpend(db, actor, run.runId, run.approvedConfirmationId);
  return {
    recordedSettlementMinor: BigInt(recorded.total),
    recordedActions: Number(recorded.actions),
    declaredSettlementMinor: run.declared.settlementMinor,
    declaredActions: run.declared.actions,
  };
}
