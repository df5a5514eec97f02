import { z } from 'zod';
import { type ActionLine, loadActionLines } from '../audit/action-lines.ts';
import { ACTION_STATUSES, type ActionRow, loadActionRows } from '../audit/action-rows.ts';
import { parseInput } from '../core/validation.ts';
import { type CsvColumn, financeCsv } from '../core/finance-csv.ts';
import type { Db } from '../db/database.ts';
import { createdRange, pageParams } from '../db/pagination.ts';
import { type ActionFilter, listActionsPage } from '../db/repositories/agent-actions.ts';

/**
 * The action log as a list: the filters of GET /agent/actions and its CSV form. The API and the
 * dashboard both read actions through here, so a filter means the same thing on both.
 */
export const actionsQuery = z.strictObject({
  status: z
    .enum(ACTION_STATUSES)
    .optional()
    .describe('Only actions in this final status (expired: held, and its confirmation lapsed undecided).'),
  tool: z.string().max(100).optional().describe('Only calls of this tool.'),
  decision: z
    .enum(['allow', 'require_confirmation', 'deny', 'not_checked'])
    .optional()
    .describe('Only this policy decision.'),
  channel: z
    .enum(['api', 'agent', 'mcp', 'system'])
    .optional()
    .describe("Only calls from this channel ('system': the service's own steps, e.g. settling a payment)."),
  ...createdRange('action'),
  ...pageParams('action', 'act_…', { default: 50, max: 500 }),
});

export interface ActionScope {
  accountId: string;
  livemode: boolean;
}

export interface ActionPage {
  rows: ActionRow[];
  has_more: boolean;
}

/** One page of the account's actions, newest first, filtered by `raw` (validated by actionsQuery). */
export async function listActions(
  db: Db,
  scope: ActionScope,
  raw: unknown,
  now: Date,
  extra: Pick<ActionFilter, 'excludeChannels'> = {},
): Promise<ActionPage> {
  const query = parseInput(actionsQuery, raw);
  const page = await listActionsPage(db, scope, { ...query, ...extra }, query, now);
  return {
    rows: await loadActionRows(
      db,
      page.data.map((row) => row.id),
      now,
    ),
    has_more: page.has_more,
  };
}

/**
 * The CSV's columns: plain text each, in this order, named by the header row. The columns up to
 * `error` are an action's; those after it say which part of the action a line is and what finance
 * books it by (audit/action-lines.ts). New columns go at the end, so a sheet that reads columns by
 * position keeps working.
 */
const CSV_COLUMNS: readonly CsvColumn<ActionLine>[] = [
  ['id', (row) => row.id],
  ['created', (row) => row.created],
  ['channel', (row) => row.channel],
  ['key_id', (row) => row.key_id],
  ['requested_by', (row) => row.requested_by],
  ['run_id', (row) => row.run_id],
  ['instruction', (row) => row.instruction],
  ['tool', (row) => row.tool],
  ['amount', (row) => row.amount],
  ['asset', (row) => row.asset],
  ['recipient', (row) => row.recipient],
  ['payment_id', (row) => row.payment_id],
  ['memo', (row) => row.memo],
  ['decision', (row) => row.decision.outcome],
  ['decision_reasons', (row) => row.decision_reasons],
  ['confirmation_id', (row) => row.confirmation_id],
  ['approved_by_key', (row) => row.approved_by_key],
  ['decided_by', (row) => row.decided_by],
  ['decided_at', (row) => row.decided_at],
  ['status', (row) => row.status],
  ['object_id', (row) => row.object_id],
  ['tx_hash', (row) => row.tx_hash],
  ['error', (row) => errorMessage(row.error)],
  ['leg', (row) => row.leg],
  ['leg_id', (row) => row.leg_id],
  ['reference', (row) => row.reference],
  ['provider_reference', (row) => row.provider_reference],
  ['counterparty', (row) => row.counterparty],
  ['batch_id', (row) => row.batch_id],
];

function errorMessage(error: unknown): string | null {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : null;
}

/**
 * The CSV export of actions, written as every finance CSV is (core/finance-csv.ts): one line per
 * movement (an action, or each leg of a revenue share and each transfer of a settlement batch:
 * audit/action-lines.ts), amounts as decimal strings.
 */
export async function actionsCsv(db: Db, rows: readonly ActionRow[]): Promise<string> {
  const lines = await loadActionLines(db, rows);
  return financeCsv(CSV_COLUMNS, lines);
}
