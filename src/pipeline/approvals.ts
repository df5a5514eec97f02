import { advanceHeldAction } from '../audit/actions.ts';
import { lockAccountActions } from '../audit/action-log.ts';
import { canonicalHash } from '../core/canonical-json.ts';
import { AppError } from '../core/errors.ts';
import { executeTool, type ToolResult } from './execute-tool.ts';
import type { AnyTool, Channel, ToolEnvironment } from '../core/tool.ts';
import type { Db } from '../db/database.ts';
import type { ConfirmationRow } from '../db/tables/money.ts';
import { isSamePrincipal } from '../keys/lineage.ts';
import { recordMoneyApproval } from '../metrics/metrics.ts';
import { announceConfirmation, effectiveStatus } from '../policy/confirmations.ts';
import { findConfirmation, markConfirmationRejected } from '../db/repositories/confirmations.ts';
import { findApiKey } from '../db/repositories/api-keys.ts';

/**
 * A human's answer to a held action. Not a tool, on purpose: no model and no MCP client can
 * approve money movement. The approver needs the `approvals` scope and must be another principal
 * than the key that asked (src/keys/lineage.ts). Approval runs the stored input through executeTool
 * again (policy re-checked; only the confirmation it satisfies is lifted) and consumes the
 * confirmation in that same transaction.
 */
export interface Approver {
  accountId: string;
  livemode: boolean;
  keyId: string;
  scopes: ReadonlySet<string>;
  /**
   * Deciding as a person signed in on the dashboard (sign-in form, session cookie, CSRF token), not
   * with a bearer key. Only such a person may decide a held action with no recorded requester: no
   * lineage can be excluded, and anything holding a key could otherwise wave it through. Left
   * out, the stricter rule applies. The session's key still meets the lineage rule.
   */
  viaDashboard?: boolean;
}

/**
 * Why `approver` may not decide this held action (the requester's own principal, or a key deciding
 * what has no recorded requester), or undefined when it may. The one copy of the rule: the API and
 * the dashboard's decisions apply it here, and the approval screen asks it to say why its buttons
 * are disabled.
 */
export async function refusedDecider(
  db: Db,
  row: Pick<ConfirmationRow, 'requested_by_key'>,
  approver: Pick<Approver, 'accountId' | 'keyId' | 'viaDashboard'>,
): Promise<AppError | undefined> {
  if (row.requested_by_key === null) {
    if (approver.viaDashboard) return undefined;
    return new AppError(
      'permission_denied',
      'This held action has no recorded requester, so no API key can approve or reject it: decide it on the dashboard, signed in with a key that has the approvals scope.',
    );
  }
  if (!(await isSamePrincipal(db, approver.accountId, row.requested_by_key, approver.keyId))) return undefined;
  return new AppError(
    'permission_denied',
    'The key that asked for an action cannot approve or reject it, nor can a key rotated from or into it or one it created (directly or through other keys): use a key with the approvals scope that it did not create.',
  );
}

async function loadForDecision(runtime: ToolEnvironment, approver: Approver, id: string): Promise<ConfirmationRow> {
  if (!approver.scopes.has('approvals')) {
    throw new AppError(
      'permission_denied',
      "Approving or rejecting a held action needs a key with the 'approvals' scope.",
    );
  }
  const row = await findConfirmation(runtime.db, approver, id);
  if (!row) throw new AppError('not_found', `No such confirmation: '${id}'.`, { param: 'id' });
  const refused = await refusedDecider(runtime.db, row, approver);
  if (refused) throw refused;
  const status = effectiveStatus(row, runtime.clock.now());
  if (status !== 'pending')
    throw new AppError('conflict', `Confirmation ${id} is ${status}; only a pending confirmation can be decided.`);
  return row;
}

export async function approveConfirmation(
  runtime: ToolEnvironment,
  tools: readonly AnyTool[],
  approver: Approver,
  id: string,
): Promise<ToolResult<unknown>> {
  const row = await loadForDecision(runtime, approver, id);
  const tool = tools.find((t) => t.name === row.tool);
  if (!tool) throw new AppError('conflict', `The held tool ${row.tool} no longer exists.`);
  if (canonicalHash(row.input) !== row.input_hash) {
    throw new AppError('conflict', `Confirmation ${id} does not match the action it was created for; it cannot run.`);
  }
  // An assistant's held action is judged again by the assistant's limits too (a deny still refuses it).
  const requester =
    row.requested_by_key === null
      ? undefined
      : await findApiKey(runtime.db, { accountId: row.account_id }, row.requested_by_key);
  return executeTool(tool, row.input, {
    runtime,
    actor: {
      accountId: row.account_id,
      livemode: row.livemode,
      keyId: row.requested_by_key,
      // The approval authorises exactly this tool call, whatever the asking key holds today.
      scopes: new Set([tool.scope]),
      channel: row.channel as Channel,
      assistant: requester?.assistant ?? false,
    },
    runId: row.run_id,
    // Single use is the confirmation row's: consuming it is a conditional update in the same
    // transaction as the action, so two racing approvals cannot both run it.
    confirmation: { id: row.id, approverKeyId: approver.keyId },
  });
}

export async function rejectConfirmation(runtime: ToolEnvironment, approver: Approver, id: string): Promise<void> {
  const row = await loadForDecision(runtime, approver, id);
  const now = runtime.clock.now();
  await runtime.db.transaction().execute(async (trx) => {
    await lockAccountActions(trx, approver.accountId);
    const updated = await markConfirmationRejected(trx, id, approver.keyId, now);
    if (!updated) throw new AppError('conflict', `Confirmation ${id} is no longer pending.`);
    await announceConfirmation(trx, runtime.config, updated, 'action.rejected', now);
    await advanceHeldAction(trx, {
      accountId: approver.accountId,
      livemode: approver.livemode,
      confirmationId: id,
      status: 'rejected',
      approvedByKey: approver.keyId,
      at: now,
    });
  });
  recordMoneyApproval(row.tool, 'rejected');
}
