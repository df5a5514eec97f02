import { stringifyJson } from '../core/json-text.ts';
import type { Channel } from '../core/tool.ts';
import type { Db } from '../db/database.ts';
import type { ActionDecision, ActionStatus } from '../db/tables/money.ts';
import { newId } from '../domain/ids.ts';
import type { RuleVerdict } from '../policy/action.ts';
import { appendActionLog } from './action-log.ts';
import { loadActionSnapshot } from './action-snapshot.ts';

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
      input: stringifyJson(action.input),
      decision: action.decision,
      reasons: JSON.stringify(action.reasons),
      status: action.status,
      result: action.result === undefined ? null : stringifyJson(action.result),
      error: action.error === undefined ? null : JSON.stringify(action.error),
      confirmation_id: action.confirmationId ?? null,
      object_id: action.objectId ?? null,
      amount_settlement_minor: action.amountSettlementMinor ?? null,
      created_at: action.at,
      updated_at: action.at,
    })
    .execute();
  await appendActionEntry(db, {
    accountId: action.accountId,
    livemode: action.livemode,
    entryType: `action.${action.status}`,
    runId: action.runId,
    actionId: id,
    at: action.at,
  });
  return id;
}

/**
 * Moves a held action on (executed after approval, rejected), logging the step. An approved
 * action's row gets the id of the object it created, as an action that ran at once has it.
 */
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
    objectId?: string | null;
    at: Date;
  },
): Promise<void> {
  const row = await db
    .updateTable('agent_actions')
    .set({
      status: update.status,
      approved_by_key: update.approvedByKey,
      ...(update.result === undefined ? {} : { result: stringifyJson(update.result) }),
      ...(update.error === undefined ? {} : { error: JSON.stringify(update.error) }),
      ...(update.objectId === undefined ? {} : { object_id: update.objectId }),
      updated_at: update.at,
    })
    .where('confirmation_id', '=', update.confirmationId)
    .where('account_id', '=', update.accountId)
    .returning(['id', 'run_id'])
    .executeTakeFirst();
  const entry = {
    accountId: update.accountId,
    livemode: update.livemode,
    entryType: `confirmation.${update.status}`,
    at: update.at,
  };
  if (row) {
    await appendActionEntry(db, { ...entry, runId: row.run_id, actionId: row.id });
  } else {
    // A confirmation without an action row (made outside the pipeline, as test fixtures do).
    await appendActionLog(db, {
      ...entry,
      payload: { confirmation_id: update.confirmationId, approved_by_key: update.approvedByKey },
    });
  }
}

/**
 * A try at running a held action that a human approved, which failed (the balance was short, the
 * confirmation was used meanwhile): a step of that action in the log, which its detail lists, not
 * an action of its own. The action stays held and can be approved again.
 */
export async function recordFailedAttempt(
  db: Db,
  attempt: {
    accountId: string;
    livemode: boolean;
    confirmationId: string;
    byKey: string;
    error: unknown;
    at: Date;
  },
): Promise<void> {
  const row = await db
    .selectFrom('agent_actions')
    .select(['id', 'run_id'])
    .where('confirmation_id', '=', attempt.confirmationId)
    .where('account_id', '=', attempt.accountId)
    .executeTakeFirst();
  const step = {
    accountId: attempt.accountId,
    livemode: attempt.livemode,
    entryType: 'action.failed',
    at: attempt.at,
  };
  const recorded: ApprovalAttempt = {
    by_key: attempt.byKey,
    confirmation_id: attempt.confirmationId,
    error: attempt.error,
  };
  if (row) {
    await appendActionEntry(db, { ...step, runId: row.run_id, actionId: row.id, attempt: recorded });
  } else {
    await appendActionLog(db, { ...step, payload: { attempt: recorded } });
  }
}

/**
 * Appends an entry about an action, with the action's snapshot after the step (and what an
 * approval attempt did, for one): what verification compares the views' tables with.
 */
async function appendActionEntry(
  db: Db,
  entry: {
    accountId: string;
    livemode: boolean;
    entryType: string;
    runId: string | null;
    actionId: string;
    at: Date;
    attempt?: ApprovalAttempt;
  },
): Promise<void> {
  const { attempt, ...logged } = entry;
  const action = await loadActionSnapshot(db, entry.actionId);
  await appendActionLog(db, { ...logged, payload: attempt === undefined ? { action } : { action, attempt } });
}

/** A failed approval attempt, as its log entry records it (payload.attempt). */
export interface ApprovalAttempt {
  by_key: string;
  confirmation_id: string;
  error: unknown;
}
