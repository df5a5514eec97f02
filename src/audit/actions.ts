import type { Channel } from '../core/tool.ts';
import type { Db } from '../db/database.ts';
import type { ActionDecision, ActionStatus } from '../db/tables/money.ts';
import { newId } from '../domain/ids.ts';
import type { RuleVerdict } from '../policy/action.ts';
import { appendActionLog } from './action-log.ts';

export interface ActionRecord {
  accountId: string;
  livemode: boolean;
  runId: string | null;
  channel: Channel;
  keyId: string | null;
  tool: string;
  input: unknown;
  decision: ActionDecision;
  reasons: readonly RuleVerdict[];
  status: ActionStatus;
  result?: unknown;
  error?: unknown;
  confirmationId?: string | null;
  objectId?: string | null;
  /** A money action's amount in settlement minor units, as the policy judged it (run totals read it). */
  amountSettlementMinor?: bigint | null;
  at: Date;
}

/**
 * Records one tool call: the queryable row (agent_actions) and its entry in the chained action
 * log, in the caller's transaction. Returns the action id.
 */
export async function recordAction(db: Db, action: ActionRecord): Promise<string> {
  const id = newId('act');
  await db
    .insertInto('agent_actions')
    .values({
      id,
      account_id: action.accountId,
      livemode: action.livemode,
      run_id: action.runId,
      channel: action.channel,
      key_id: action.keyId,
      tool: action.tool,
      input: JSON.stringify(action.input),
      decision: action.decision,
      reasons: JSON.stringify(action.reasons),
      status: action.status,
      result: action.result === undefined ? null : JSON.stringify(action.result),
      error: action.error === undefined ? null : JSON.stringify(action.error),
      confirmation_id: action.confirmationId ?? null,
      object_id: action.objectId ?? null,
      amount_settlement_minor: action.amountSettlementMinor ?? null,
      created_at: action.at,
      updated_at: action.at,
    })
    .execute();
  await appendActionLog(db, {
    accountId: action.accountId,
    livemode: action.livemode,
    entryType: `action.${action.status}`,
    runId: action.runId,
    actionId: id,
    payload: {
      channel: action.channel,
      key_id: action.keyId,
      tool: action.tool,
      input: action.input,
      decision: action.decision,
      reasons: action.reasons,
      result: action.result ?? null,
      error: action.error ?? null,
      confirmation_id: action.confirmationId ?? null,
      // Only money actions carry it (canonical JSON drops an undefined key), so other entries keep their shape.
      amount_settlement_minor: action.amountSettlementMinor?.toString(),
    },
    at: action.at,
  });
  return id;
}

/** Moves a held action on (executed after approval, rejected, expired), logging the step. */
export async function advanceHeldAction(
  db: Db,
  update: {
    accountId: string;
    livemode: boolean;
    confirmationId: string;
    status: ActionStatus;
    approvedByKey: string | null;
    result?: unknown;
    error?: unknown;
    at: Date;
  },
): Promise<void> {
  const rows = await db
    .updateTable('agent_actions')
    .set({
      status: update.status,
      approved_by_key: update.approvedByKey,
      ...(update.result === undefined ? {} : { result: JSON.stringify(update.result) }),
      ...(update.error === undefined ? {} : { error: JSON.stringify(update.error) }),
      updated_at: update.at,
    })
    .where('confirmation_id', '=', update.confirmationId)
    .where('account_id', '=', update.accountId)
    .returning(['id', 'run_id'])
    .execute();
  await appendActionLog(db, {
    accountId: update.accountId,
    livemode: update.livemode,
    entryType: `confirmation.${update.status}`,
    runId: rows[0]?.run_id ?? null,
    actionId: rows[0]?.id ?? null,
    payload: {
      confirmation_id: update.confirmationId,
      approved_by_key: update.approvedByKey,
      result: update.result ?? null,
      error: update.error ?? null,
    },
    at: update.at,
  });
}
