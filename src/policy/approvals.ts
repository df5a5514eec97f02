import { advanceHeldAction } from '../audit/actions.ts';
import { lockAccountActions } from '../audit/action-log.ts';
import { canonicalHash } from '../core/canonical-json.ts';
import { AppError } from '../core/errors.ts';
import { executeTool, type ToolResult } from '../core/pipeline.ts';
import type { AnyTool, Channel } from '../core/tool.ts';
import type { ConfirmationRow } from '../db/tables/money.ts';
import type { Runtime } from '../runtime.ts';
import { effectiveStatus } from './confirmations.ts';

/**
 * A human's answer to a held action. Not a tool, on purpose: no model and no MCP client can
 * approve money movement. The approver needs the `approvals` scope and must not be the key that
 * asked. Approval runs the stored input through executeTool again (policy re-checked; only the
 * confirmation it satisfies is lifted) and consumes the confirmation in that same transaction.
 */
export interface Approver {
  accountId: string;
  livemode: boolean;
  keyId: string;
  scopes: ReadonlySet<string>;
}

async function loadForDecision(runtime: Runtime, approver: Approver, id: string): Promise<ConfirmationRow> {
  if (!approver.scopes.has('approvals')) {
    throw new AppError(
      'permission_denied',
      "Approving or rejecting a held action needs a key with the 'approvals' scope.",
    );
  }
  const row = await runtime.db
    .selectFrom('confirmations')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', approver.accountId)
    .where('livemode', '=', approver.livemode)
    .executeTakeFirst();
  if (!row) throw new AppError('not_found', `No such confirmation: '${id}'.`, { param: 'id' });
  if (row.requested_by_key !== null && row.requested_by_key === approver.keyId) {
    throw new AppError(
      'permission_denied',
      'The key that asked for an action cannot approve or reject it: use another key with the approvals scope.',
    );
  }
  const status = effectiveStatus(row, runtime.clock.now());
  if (status !== 'pending')
    throw new AppError('conflict', `Confirmation ${id} is ${status}; only a pending confirmation can be decided.`);
  return row;
}

export async function approveConfirmation(
  runtime: Runtime,
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
  return executeTool(tool, row.input, {
    runtime,
    actor: {
      accountId: row.account_id,
      livemode: row.livemode,
      keyId: row.requested_by_key,
      // The approval authorises exactly this tool call, whatever the asking key holds today.
      scopes: new Set([tool.scope]),
      channel: row.channel as Channel,
    },
    runId: row.run_id,
    // Single use is the confirmation row's: consuming it is a conditional update in the same
    // transaction as the action, so two racing approvals cannot both run it.
    confirmation: { id: row.id, approverKeyId: approver.keyId },
  });
}

export async function rejectConfirmation(runtime: Runtime, approver: Approver, id: string): Promise<void> {
  await loadForDecision(runtime, approver, id);
  const now = runtime.clock.now();
  await runtime.db.transaction().execute(async (trx) => {
    await lockAccountActions(trx, approver.accountId);
    const updated = await trx
      .updateTable('confirmations')
      .set({ status: 'rejected', decided_by_key: approver.keyId, decided_at: now })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .returning('id')
      .executeTakeFirst();
    if (!updated) throw new AppError('conflict', `Confirmation ${id} is no longer pending.`);
    await advanceHeldAction(trx, {
      accountId: approver.accountId,
      livemode: approver.livemode,
      confirmationId: id,
      status: 'rejected',
      approvedByKey: approver.keyId,
      at: now,
    });
  });
}
