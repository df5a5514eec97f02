import { type CsvColumn, financeCsv } from '../core/finance-csv.ts';
import type { Db, ModeScope } from '../db/database.ts';
import { listWaitingConfirmations } from '../db/repositories/confirmations.ts';
import { listPayoutApprovals, listPayoutsPage } from '../db/repositories/payouts.ts';
import type { ConfirmationRow, PayoutRow } from '../db/tables/money.ts';
import { formatAmount, formatMinor, parseMajorAmount, SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { loadKeyLabels } from '../keys/labels.ts';
import { PAYOUT_STATUSES } from '../payouts/present.ts';

/**
 * The Payouts screen's rows and its CSV: the payouts (a revenue share's legs among them) and the
 * payouts the policy holds for approval, which have no payout yet, each with who approved it.
 */

/** The statuses the screen filters by: a payout's, and `held` (waiting for a person's approval). */
export const PAYOUT_SCREEN_STATUSES = [...PAYOUT_STATUSES, 'held'] as const;
export type PayoutScreenStatus = (typeof PAYOUT_SCREEN_STATUSES)[number];

/** The tools whose held actions are payouts waiting for approval. */
const PAYOUT_TOOLS = ['create_payout', 'split_revenue'];
/** Held payouts shown at most (they expire within the policy's window, so there are few). */
const HELD_MAX = 100;

export interface PayoutScreenRow {
  /** The payout (po_…), or for a held one its confirmation (conf_…). */
  id: string;
  status: PayoutScreenStatus;
  created: Date;
  /** Decimal text in the asset, all its decimals (the CSV's form). */
  amount: string | null;
  /** Grouped, for the page: "1,000,000,000.00 USDC". */
  amountShown: string | null;
  asset: string;
  to: string;
  reference: string | null;
  memo: string | null;
  revenueShare: string | null;
  channel: string;
  confirmationId: string | null;
  approvedByKey: string | null;
  approvedBy: string | null;
  approvedAt: Date | null;
  txHash: string | null;
  settledAt: Date | null;
  failureReason: string | null;
}

export interface PayoutScreenQuery {
  status: PayoutScreenStatus | undefined;
  created_gte: Date | undefined;
  created_lte: Date | undefined;
}

export interface PayoutScreenPage {
  held: PayoutScreenRow[];
  payouts: PayoutScreenRow[];
  has_more: boolean;
}

/** One page of payouts (and, on the first page, the held ones) matching the query. */
export async function loadPayoutScreen(
  db: Db,
  scope: ModeScope,
  query: PayoutScreenQuery,
  page: { limit: number; starting_after: string | undefined },
  now: Date,
): Promise<PayoutScreenPage> {
  const range = { created_gte: query.created_gte, created_lte: query.created_lte };
  const wantsHeld = (query.status === undefined || query.status === 'held') && page.starting_after === undefined;
  const held = wantsHeld ? await listWaitingConfirmations(db, scope, PAYOUT_TOOLS, range, now, HELD_MAX) : [];
  const listed =
    query.status === 'held'
      ? { data: [], has_more: false }
      : await listPayoutsPage(db, scope, { status: query.status, ...range }, page);
  const approvals = await listPayoutApprovals(db, scope, listed.data);
  const labels = await loadKeyLabels(db, scope.accountId, [
    ...[...approvals.values()].map((a) => a.keyId),
    ...held.map((c) => c.requested_by_key),
  ]);
  return {
    held: held.map(heldRow),
    payouts: listed.data.map((p) => {
      const approval = approvals.get(p.id);
      return payoutRow(
        p,
        approval?.keyId ?? null,
        approval ? (labels.get(approval.keyId) ?? null) : null,
        approval?.at ?? null,
      );
    }),
    has_more: listed.has_more,
  };
}

function payoutRow(p: PayoutRow, keyId: string | null, label: string | null, at: Date | null): PayoutScreenRow {
  return {
    id: p.id,
    status: p.status,
    created: p.created_at,
    amount: formatMinor(p.amount_minor, SETTLEMENT_CURRENCY),
    amountShown: formatAmount(p.amount_minor, SETTLEMENT_CURRENCY),
    asset: p.asset,
    to: p.to_address,
    reference: p.reference,
    memo: p.memo,
    revenueShare: p.revenue_share_id,
    channel: p.channel,
    confirmationId: null,
    approvedByKey: keyId,
    approvedBy: label,
    approvedAt: at,
    txHash: p.tx_hash,
    settledAt: p.settled_at,
    failureReason: p.failure_reason,
  };
}

/** A held payout, from its confirmation's stored input (a payout's or a revenue share's fields). */
function heldRow(c: ConfirmationRow): PayoutScreenRow {
  const input = (c.input ?? {}) as Record<string, unknown>;
  const amount =
    typeof input.amount === 'number' || typeof input.amount === 'string'
      ? parseMajorAmount(input.amount, SETTLEMENT_CURRENCY)
      : undefined;
  const minor = amount?.ok ? amount.minor : null;
  const splits = Array.isArray(input.splits) ? input.splits : [];
  const to =
    typeof input.to_address === 'string'
      ? input.to_address
      : splits.map((s) => String((s as Record<string, unknown>).to_address ?? '')).join(' ');
  return {
    id: c.id,
    status: 'held',
    created: c.created_at,
    amount: minor === null ? null : formatMinor(minor, SETTLEMENT_CURRENCY),
    amountShown: minor === null ? null : formatAmount(minor, SETTLEMENT_CURRENCY),
    asset: SETTLEMENT_CURRENCY.code,
    to,
    reference: typeof input.reference === 'string' ? input.reference : null,
    memo: typeof input.memo === 'string' ? input.memo : null,
    revenueShare: null,
    channel: c.channel,
    confirmationId: c.id,
    approvedByKey: null,
    approvedBy: null,
    approvedAt: null,
    txHash: null,
    settledAt: null,
    failureReason: null,
  };
}

const CSV_COLUMNS: readonly CsvColumn<PayoutScreenRow>[] = [
  ['id', (r) => r.id],
  ['created', (r) => r.created.toISOString()],
  ['status', (r) => r.status],
  ['amount', (r) => r.amount],
  ['asset', (r) => r.asset],
  ['to_address', (r) => r.to],
  ['reference', (r) => r.reference],
  ['memo', (r) => r.memo],
  ['revenue_share', (r) => r.revenueShare],
  ['channel', (r) => r.channel],
  ['confirmation_id', (r) => r.confirmationId],
  ['approved_by_key', (r) => r.approvedByKey],
  ['approved_by', (r) => r.approvedBy],
  ['approved_at', (r) => r.approvedAt?.toISOString() ?? null],
  ['tx_hash', (r) => r.txHash],
  ['settled_at', (r) => r.settledAt?.toISOString() ?? null],
  ['failure_reason', (r) => r.failureReason],
];

/** The export, as the actions CSV is written: BOM, header, CRLF, formulas defused. */
export function payoutsCsv(rows: readonly PayoutScreenRow[]): string {
  return financeCsv(CSV_COLUMNS, rows);
}
