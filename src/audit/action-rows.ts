import { z } from 'zod';
import { AppError } from '../core/errors.ts';
import { loadKeyLabels } from '../keys/labels.ts';
import type { Db, ModeScope } from '../db/database.ts';
import { formatMinor, getCurrency, parseMajorAmount, SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { type ActionSnapshot, loadActionSnapshots } from './action-snapshot.ts';
import type { ApprovalAttempt } from './actions.ts';
import { loadSettlementHashes, shownHashes } from './settlement-hashes.ts';

/**
 * An action as finance reads it: one row per action in its final state, what moved in plain
 * fields. Built from the action's snapshot (audit/action-snapshot.ts), the same record the action
 * log chains and verification compares, plus the settlement hash (checked against its batch).
 * GET /agent/actions, its CSV and the dashboard's Actions screen all show these rows.
 */

/** An action's final status: `expired` is a held action whose confirmation lapsed undecided. */
export const ACTION_STATUSES = ['executed', 'held', 'denied', 'failed', 'rejected', 'planned', 'expired'] as const;

const verdict = z.object({ rule: z.string(), outcome: z.string(), reason: z.string() });

export const actionRowOutput = z
  .object({
    id: z.string().describe('Action id (act_…).'),
    created: z.string().describe('When it was asked (ISO 8601, UTC).'),
    channel: z.string().describe('Where it was asked: api, agent or mcp.'),
    key_id: z.string().nullable().describe('The API key that asked.'),
    requested_by: z.string().nullable().describe("That key's label: its redacted secret and name."),
    run_id: z.string().nullable().describe('The agent run it belongs to.'),
    instruction: z.string().nullable().describe("The agent run's instruction, in the words it was given."),
    tool: z.string().describe('The tool called, e.g. create_payout.'),
    amount: z
      .string()
      .nullable()
      .describe(
        'What it moves, a decimal string in `asset` (all its decimals): what moved once it ran, else what was asked; for a held refund of everything, the policy amount in USDC.',
      ),
    asset: z.string().nullable().describe('USDC, or the currency of a payment or refund.'),
    recipient: z.string().nullable().describe("The address paid (a revenue share's addresses, space-separated)."),
    payment_id: z.string().nullable().describe('The payment it refunds, shares or creates.'),
    memo: z.string().nullable().describe("The payout's memo, the refund's reason or the payment's description."),
    decision: z
      .object({
        outcome: z.string().describe('allow, require_confirmation, deny, or not_checked.'),
        reasons: z.array(verdict).describe("Every rule's verdict."),
      })
      .describe('What the policy decided, and why.'),
    decision_reasons: z.string().describe('The reasons for the outcome, in words: "rule: reason; …".'),
    confirmation_id: z.string().nullable().describe('The confirmation (conf_…) of a held action.'),
    approved_by_key: z.string().nullable().describe('The key that approved or rejected it.'),
    decided_by: z.string().nullable().describe("That key's label: its redacted secret and name."),
    decided_at: z.string().nullable().describe('When it was approved or rejected.'),
    status: z.enum(ACTION_STATUSES).describe('Its final status.'),
    object_id: z.string().nullable().describe('What it created: the payout, refund, revenue share or payment id.'),
    tx_hash: z
      .string()
      .nullable()
      .describe("The settlement transaction of that object once settled (a revenue share's legs', space-separated)."),
    input: z.unknown().describe('The exact input, as recorded.'),
    result: z.unknown().describe("The tool's output, as recorded."),
    error: z.unknown().describe('The error of a denied or failed action ({ code, message, … }).'),
  })
  .describe('A recorded action: one per tool call, in its final state.');

export type ActionRow = z.output<typeof actionRowOutput>;

/**
 * An action as the API returns it (GET /agent/actions, /agent/actions/:id): the row finance reads,
 * saying what it is (`object`) and with its amount a JSON number in major units, as every amount
 * the API writes (docs/api.md, "Amounts"). The CSV and the dashboard keep the decimal text.
 */
export const agentActionOutput = actionRowOutput
  .extend({
    object: z.literal('agent_action'),
    amount: z
      .number()
      .nullable()
      .describe(
        'What it moves, in major units of `asset`: what moved once it ran, else what was asked; for a held refund of everything, the policy amount in USDC.',
      ),
  })
  .describe('A recorded action: one per tool call, in its final state.');

export type AgentAction = z.output<typeof agentActionOutput>;

export function presentAgentAction(row: ActionRow): AgentAction {
  const { id, ...rest } = row;
  return { id, object: 'agent_action', ...rest, amount: row.amount === null ? null : Number(row.amount) };
}

export const actionHistoryOutput = z.array(
  z.object({
    seq: z.string().describe('Its action-log entry.'),
    at: z.string(),
    step: z.string().describe('What happened, in words: "Held for approval", "Approval attempt failed", …'),
    type: z.string().describe('The entry type: action.held, action.failed, confirmation.executed, …'),
    key_id: z.string().nullable().describe('The key that asked, approved, rejected or tried to approve.'),
    key: z.string().nullable().describe("That key's label."),
    error: z.unknown().describe('Why a step failed.'),
  }),
);

/** The rows of these actions, in the order given (ids without a row are left out). */
export async function loadActionRows(db: Db, ids: readonly string[], now: Date): Promise<ActionRow[]> {
  const snapshots = await loadActionSnapshots(db, ids);
  const hashes = shownHashes(
    await loadSettlementHashes(
      db,
      [...snapshots.values()].map((s) => s.object_id),
    ),
  );
  return ids.flatMap((id) => {
    const snapshot = snapshots.get(id);
    return snapshot ? [presentActionRow(snapshot, hashes, now)] : [];
  });
}

export function presentActionRow(s: ActionSnapshot, hashes: ReadonlyMap<string, string>, now: Date): ActionRow {
  const reasons = verdicts(s.reasons);
  const decidedBy = s.confirmation?.decided_by_key ?? s.approved_by_key;
  return {
    id: s.id,
    created: s.created_at,
    channel: s.channel,
    key_id: s.key_id,
    requested_by: labelOf(s, s.key_id),
    run_id: s.run_id,
    instruction: s.instruction,
    tool: s.tool,
    ...moneyOf(s),
    decision: { outcome: s.decision, reasons },
    decision_reasons: reasons
      .filter((r) => r.outcome === s.decision)
      .map((r) => `${r.rule}: ${r.reason}`)
      .join('; '),
    confirmation_id: s.confirmation_id,
    approved_by_key: decidedBy,
    decided_by: labelOf(s, decidedBy),
    decided_at: s.confirmation?.decided_at ?? null,
    status: finalStatus(s, now),
    object_id: s.object_id,
    tx_hash: (s.object_id !== null && hashes.get(s.object_id)) || null,
    input: s.input,
    result: s.result,
    error: s.error,
  };
}

function labelOf(s: ActionSnapshot, keyId: string | null): string | null {
  return keyId === null ? null : (s.key_labels[keyId] ?? null);
}

function finalStatus(s: ActionSnapshot, now: Date): ActionRow['status'] {
  const lapsed =
    s.status === 'held' &&
    s.confirmation?.status === 'pending' &&
    Date.parse(s.confirmation.expires_at) <= now.getTime();
  return lapsed ? 'expired' : (s.status as ActionRow['status']);
}

function verdicts(reasons: unknown): z.output<typeof verdict>[] {
  if (!Array.isArray(reasons)) return [];
  return reasons.map((r: { rule?: unknown; outcome?: unknown; reason?: unknown }) => ({
    rule: String(r.rule ?? ''),
    outcome: String(r.outcome ?? ''),
    reason: String(r.reason ?? ''),
  }));
}

type Money = Pick<ActionRow, 'amount' | 'asset' | 'recipient' | 'payment_id' | 'memo'>;

/**
 * What moved, read from the recorded input and output by the field names the money tools share
 * (tools/schemas.ts): amount with asset or currency, to_address or splits, payment_id, and memo,
 * reason or description. The output wins over the input: it is what moved (a refund of
 * "everything" learns its amount only when it runs).
 */
function moneyOf(s: ActionSnapshot): Money {
  const input = record(s.input);
  const output = record(s.result);
  const amount =
    amountIn(output) ??
    amountIn(input) ??
    receivedIn(s.tool, input, output) ??
    // A started attempt records what the payer is asked for; nothing moved yet (its end says what did).
    (s.tool === 'start_payment_attempt' ? undefined : (minorAmountIn(output) ?? minorAmountIn(input))) ??
    (s.amount_settlement_minor === null
      ? { amount: null, asset: null }
      : {
          amount: formatMinor(BigInt(s.amount_settlement_minor), SETTLEMENT_CURRENCY),
          asset: SETTLEMENT_CURRENCY.code,
        });
  const splits = Array.isArray(input.splits)
    ? input.splits.map((split) => text(record(split).to_address)).filter((a): a is string => a !== null)
    : [];
  return {
    ...amount,
    recipient: text(input.to_address) ?? (splits.length > 0 ? splits.join(' ') : null) ?? text(output.to_address),
    payment_id:
      text(input.payment_id) ?? text(output.payment_id) ?? (output.object === 'payment' ? text(output.id) : null),
    memo: text(input.memo) ?? text(input.reason) ?? text(input.description),
  };
}

function amountIn(source: Record<string, unknown>): Pick<Money, 'amount' | 'asset'> | undefined {
  const currency = getCurrency(text(source.asset) ?? text(source.currency) ?? '');
  const value = source.amount;
  if (!currency || (typeof value !== 'number' && typeof value !== 'string')) return undefined;
  const parsed = parseMajorAmount(value, currency);
  return parsed.ok ? { amount: formatMinor(parsed.minor, currency), asset: currency.code } : undefined;
}

/**
 * What a payer paid, on the action that recorded it (record_payment_attempt): the amount the
 * provider confirmed, in the currency's minor unit as every rail's confirmation carries it (M-Pesa's
 * callback says shillings, and the rail turns them into cents before it records them:
 * docs/rails.md), or, on the sandbox rail, the payment's own amount. Only a payment paid (or paid
 * late) received money; an attempt declined or still open moved none.
 */
function receivedIn(
  tool: string,
  input: Record<string, unknown>,
  output: Record<string, unknown>,
): Pick<Money, 'amount' | 'asset'> | undefined {
  if (tool !== 'record_payment_attempt' || (output.result !== 'paid' && output.result !== 'late')) return undefined;
  return minorAmountIn(record(input.confirmed)) ?? amountIn(record(output.payment));
}

/**
 * An amount a system tool records in minor units (`amount_minor`, as a digit string) with its
 * `currency` or `asset`; without either it is the settlement asset's (fund_test_balance's USDC).
 */
function minorAmountIn(source: Record<string, unknown>): Pick<Money, 'amount' | 'asset'> | undefined {
  const digits = text(source.amount_minor);
  if (digits === null || !/^\d{1,30}$/.test(digits)) return undefined;
  const code = text(source.currency) ?? text(source.asset);
  const currency = code === null ? SETTLEMENT_CURRENCY : getCurrency(code);
  return currency ? { amount: formatMinor(BigInt(digits), currency), asset: currency.code } : undefined;
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

export type ActionHistory = z.output<typeof actionHistoryOutput>;

/**
 * An action's steps, read from the chained log itself: how it was recorded, each failed
 * approval attempt, its approval or rejection. 404 for another account's or mode's action.
 */
export async function loadActionHistory(db: Db, scope: ModeScope, id: string): Promise<ActionHistory> {
  const entries = await db
    .selectFrom('action_log')
    .select(['seq', 'entry_type', 'created_at', 'payload'])
    .where('action_id', '=', id)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .orderBy('seq')
    .execute();
  if (entries.length === 0) throw new AppError('not_found', `No such action: '${id}'.`, { param: 'id' });
  const steps = entries.map((entry) => {
    const payload = record(entry.payload) as { action?: ActionSnapshot; attempt?: ApprovalAttempt };
    // Entries written before migration 016 carry the action's fields at the top level.
    const action = payload.action ?? (payload as Partial<ActionSnapshot>);
    const decision = entry.entry_type.startsWith('confirmation.');
    return {
      seq: String(entry.seq),
      at: entry.created_at.toISOString(),
      step: payload.attempt ? 'Approval attempt failed' : (STEP_WORDS[entry.entry_type] ?? entry.entry_type),
      type: entry.entry_type,
      key_id: payload.attempt?.by_key ?? (decision ? action.approved_by_key : action.key_id) ?? null,
      error: payload.attempt?.error ?? (decision ? null : (action.error ?? null)),
    };
  });
  const labels = await loadKeyLabels(
    db,
    scope.accountId,
    steps.map((step) => step.key_id),
  );
  return steps.map((step) => ({ ...step, key: step.key_id === null ? null : (labels.get(step.key_id) ?? null) }));
}

const STEP_WORDS: Record<string, string> = {
  'action.executed': 'Executed',
  'action.held': 'Held for approval',
  'action.denied': 'Denied by the policy',
  'action.failed': 'Failed',
  'action.planned': 'Planned (dry run)',
  'confirmation.executed': 'Approved and executed',
  'confirmation.rejected': 'Rejected',
};
