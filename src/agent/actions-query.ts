import { z } from 'zod';
import { parseInput } from '../core/validation.ts';
import type { Db } from '../db/database.ts';
import type { AgentActionRow } from '../db/tables/money.ts';
import { afterListedRow } from '../db/pagination.ts';

/**
 * The action log as a list: the filters of GET /agent/actions and its CSV form. The API and the
 * dashboard both read actions through here, so a filter means the same thing on both.
 */
export const actionsQuery = z.strictObject({
  status: z
    .enum(['executed', 'held', 'denied', 'failed', 'rejected', 'planned'])
    .optional()
    .describe('Only actions in this status.'),
  tool: z.string().max(100).optional().describe('Only calls of this tool.'),
  decision: z
    .enum(['allow', 'require_confirmation', 'deny', 'not_checked'])
    .optional()
    .describe('Only this policy decision.'),
  channel: z.enum(['api', 'agent', 'mcp']).optional().describe('Only calls from this channel.'),
  created_gte: z.iso
    .datetime({ offset: true, error: 'created_gte must be an ISO 8601 date-time' })
    .optional()
    .describe('From this time.'),
  created_lte: z.iso
    .datetime({ offset: true, error: 'created_lte must be an ISO 8601 date-time' })
    .optional()
    .describe('Until this time.'),
  limit: z.coerce.number().int().min(1).max(500).default(50).describe('Page size, 1 to 500 (default 50).'),
  starting_after: z.string().max(100).optional().describe('An action id: the next page.'),
});

export interface ActionScope {
  accountId: string;
  livemode: boolean;
}

export interface ActionPage {
  rows: AgentActionRow[];
  has_more: boolean;
}

/** One page of the account's actions, newest first, filtered by `raw` (validated by actionsQuery). */
export async function listActions(db: Db, scope: ActionScope, raw: unknown): Promise<ActionPage> {
  const query = parseInput(actionsQuery, raw);
  let q = db
    .selectFrom('agent_actions')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode);
  if (query.status) q = q.where('status', '=', query.status);
  if (query.tool) q = q.where('tool', '=', query.tool);
  if (query.decision) q = q.where('decision', '=', query.decision);
  if (query.channel) q = q.where('channel', '=', query.channel);
  if (query.created_gte) q = q.where('created_at', '>=', new Date(query.created_gte));
  if (query.created_lte) q = q.where('created_at', '<=', new Date(query.created_lte));
  if (query.starting_after)
    q = q.where(await afterListedRow(db, 'agent_actions', scope, query.starting_after, 'action'));
  const rows = await q
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(query.limit + 1)
    .execute();
  return { rows: rows.slice(0, query.limit), has_more: rows.length > query.limit };
}

const CSV_HEADER = [
  'id',
  'created',
  'channel',
  'run_id',
  'key_id',
  'tool',
  'decision',
  'status',
  'confirmation_id',
  'approved_by_key',
  'object_id',
  'input',
  'reasons',
  'error',
];

/** The CSV export of actions: a header line, then one line per action, CRLF line ends (RFC 4180). */
export function actionsCsv(rows: readonly AgentActionRow[]): string {
  const lines = rows.map((row) =>
    [
      row.id,
      row.created_at.toISOString(),
      row.channel,
      row.run_id,
      row.key_id,
      row.tool,
      row.decision,
      row.status,
      row.confirmation_id,
      row.approved_by_key,
      row.object_id,
      JSON.stringify(row.input),
      JSON.stringify(row.reasons),
      row.error === null ? '' : JSON.stringify(row.error),
    ]
      .map(csvCell)
      .join(','),
  );
  return `${CSV_HEADER.join(',')}\r\n${lines.join('\r\n')}\r\n`;
}

/** RFC 4180 quoting, and a leading quote for cells a spreadsheet would run as a formula. */
export function csvCell(value: unknown): string {
  let text = value === null || value === undefined ? '' : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
