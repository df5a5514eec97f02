import type { Db } from '../db/database.ts';
import { isId } from '../domain/ids.ts';
import { formatMinor, SETTLEMENT_CURRENCY } from '../domain/money.ts';
import type { ActionRow } from './action-rows.ts';

/**
 * The actions as finance books them: one line per movement. Most actions move money once and are
 * one line; an action that moved it in parts is one line per part, so that a spreadsheet sums the
 * amount column and finds each recipient and transaction on its own line:
 *
 * - a revenue share: one line per leg (its payout), in the order the merchant gave the splits,
 *   each with its amount, recipient and the leg's own transaction hash;
 * - a settlement batch (confirmed, failed or reverted): one line per transfer of this merchant's,
 *   with its recipient, the batch and its transaction hash, and the payment or payout it paid;
 * - a run that started payments' settlement: one line per payment, to its address or the balance.
 *
 * Every line keeps its action's fields (who asked, the decision, who approved it and when), so a
 * leg carries the approver of the split it belongs to. The parts are read from the money rows
 * (payouts, transfers, payments), which the action log commits to as it does to the actions
 * (docs/operations.md, "Tamper evidence"): what the export shows, verification covers.
 */
export interface ActionLine extends ActionRow {
  /** "1 of 2": which part of its action this line is; null for an action moved in one piece. */
  leg: string | null;
  /** The part's own id: a revenue share's leg (po_…) or a batch's transfer (tr_…). */
  leg_id: string | null;
  /** The merchant's reference: the payment's, payout's or revenue share's. */
  reference: string | null;
  /** The provider's reference for money a payer paid (M-Pesa's receipt, Paystack's reference). */
  provider_reference: string | null;
  /** Who the money moved to or from: an address, the balance, a payer on a rail, the test treasury. */
  counterparty: string | null;
  /** The settlement batch that carried it on chain. */
  batch_id: string | null;
}

interface Leg {
  id: string;
  amount_minor: bigint;
  to_address: string;
  reference: string | null;
  tx_hash: string | null;
  revenue_share_id: string | null;
}

interface TransferFacts {
  recipient: string;
  source_id: string;
}

/** The lines of these rows, in their order. */
export async function loadActionLines(db: Db, rows: readonly ActionRow[]): Promise<ActionLine[]> {
  const legs = await loadLegs(db, rows);
  const transfers = await loadTransfers(db, rows);
  const references = await loadReferences(db, rows, transfers);
  return rows.flatMap((row) => linesOf(row, { legs, transfers, references }));
}

interface Parts {
  legs: ReadonlyMap<string, Leg[]>;
  transfers: ReadonlyMap<string, TransferFacts>;
  references: ReadonlyMap<string, string | null>;
}

function linesOf(row: ActionRow, parts: Parts): ActionLine[] {
  const input = record(row.input);
  const output = record(row.result);
  const whole = wholeLine(row, input, output, parts);
  const legs = row.object_id === null ? undefined : parts.legs.get(row.object_id);
  if (row.tool === 'split_revenue' && legs && legs.length > 0) {
    return ordered(legs, input).map((leg, i, all) => ({
      ...whole,
      leg: `${i + 1} of ${all.length}`,
      leg_id: leg.id,
      amount: formatMinor(leg.amount_minor, SETTLEMENT_CURRENCY),
      asset: SETTLEMENT_CURRENCY.code,
      recipient: leg.to_address,
      counterparty: leg.to_address,
      tx_hash: leg.tx_hash,
      reference: leg.reference ?? whole.reference,
    }));
  }
  const batchTransfers = Array.isArray(output.transfers) ? output.transfers.map(record) : [];
  if (text(output.batch_id) !== null && batchTransfers.length > 0) {
    return batchTransfers.map((t, i, all) => {
      const id = text(t.transfer_id);
      const facts = id === null ? undefined : parts.transfers.get(id);
      const source = text(t.source_id);
      return {
        ...whole,
        leg: `${i + 1} of ${all.length}`,
        leg_id: id,
        amount: minorText(t.amount_minor),
        asset: SETTLEMENT_CURRENCY.code,
        recipient: facts?.recipient ?? null,
        counterparty: facts?.recipient ?? null,
        payment_id: isId('pay', source) ? source : null,
        object_id: source,
        reference: source === null ? null : (parts.references.get(source) ?? null),
        batch_id: text(output.batch_id),
        tx_hash: text(output.tx_hash),
      };
    });
  }
  const settlements = Array.isArray(output.settlements) ? output.settlements.map(record) : [];
  if (row.tool === 'start_payment_settlements' && settlements.length > 0) {
    return settlements.map((s, i, all) => {
      const payment = text(s.payment_id);
      const address = text(s.address);
      return {
        ...whole,
        leg: `${i + 1} of ${all.length}`,
        amount: minorText(s.settlement_minor),
        asset: SETTLEMENT_CURRENCY.code,
        recipient: address,
        counterparty: address ?? 'custodial balance',
        payment_id: payment,
        reference: payment === null ? null : (parts.references.get(payment) ?? null),
      };
    });
  }
  return [whole];
}

/** The action as one line: its reference and counterparty, read from what it recorded. */
function wholeLine(
  row: ActionRow,
  input: Record<string, unknown>,
  output: Record<string, unknown>,
  parts: Parts,
): ActionLine {
  const payment = record(output.payment);
  const confirmed = record(input.confirmed);
  const rail = text(input.rail);
  const reference =
    text(input.reference) ??
    text(output.reference) ??
    text(payment.reference) ??
    (row.payment_id === null ? null : (parts.references.get(row.payment_id) ?? null));
  return {
    ...row,
    leg: null,
    leg_id: null,
    reference,
    provider_reference: text(confirmed.receipt) ?? text(confirmed.reference),
    counterparty: row.recipient ?? counterpartyOf(row.tool, rail),
    batch_id: null,
  };
}

function counterpartyOf(tool: string, rail: string | null): string | null {
  if (tool === 'fund_test_balance') return 'test treasury';
  if (tool === 'record_payment_attempt' && rail !== null) return `payer (${RAIL_WORDS[rail] ?? rail})`;
  if (tool === 'refund_payment') return 'payer';
  return null;
}

const RAIL_WORDS: Record<string, string> = { mpesa: 'M-Pesa', paystack: 'Paystack', sandbox: 'sandbox', usdc: 'USDC' };

/** A revenue share's legs in the order its input gave the splits (the table's order says nothing). */
function ordered(legs: readonly Leg[], input: Record<string, unknown>): Leg[] {
  const splits = Array.isArray(input.splits) ? input.splits.map((s) => text(record(s).to_address)?.toLowerCase()) : [];
  const rank = (leg: Leg): number => {
    const at = splits.indexOf(leg.to_address.toLowerCase());
    return at === -1 ? splits.length : at;
  };
  return [...legs].sort((a, b) => rank(a) - rank(b) || a.id.localeCompare(b.id));
}

async function loadLegs(db: Db, rows: readonly ActionRow[]): Promise<Map<string, Leg[]>> {
  const shares = rows.flatMap((row) =>
    row.tool === 'split_revenue' && isId('split', row.object_id) ? [row.object_id] : [],
  );
  const byShare = new Map<string, Leg[]>();
  if (shares.length === 0) return byShare;
  const legs = await db
    .selectFrom('payouts')
    .select(['id', 'amount_minor', 'to_address', 'reference', 'tx_hash', 'revenue_share_id'])
    .where('revenue_share_id', 'in', shares)
    .execute();
  for (const leg of legs) {
    const list = byShare.get(leg.revenue_share_id!) ?? [];
    list.push(leg);
    byShare.set(leg.revenue_share_id!, list);
  }
  return byShare;
}

async function loadTransfers(db: Db, rows: readonly ActionRow[]): Promise<Map<string, TransferFacts>> {
  const ids = rows.flatMap((row) => {
    const transfers = record(row.result).transfers;
    return Array.isArray(transfers) ? transfers.flatMap((t) => text(record(t).transfer_id) ?? []) : [];
  });
  if (ids.length === 0) return new Map();
  const found = await db
    .selectFrom('transfers')
    .select(['id', 'recipient', 'source_id'])
    .where('id', 'in', ids)
    .execute();
  return new Map(found.map((t) => [t.id, { recipient: t.recipient, source_id: t.source_id }]));
}

/** The merchant's reference of each payment and payout a line names. */
async function loadReferences(
  db: Db,
  rows: readonly ActionRow[],
  transfers: ReadonlyMap<string, TransferFacts>,
): Promise<Map<string, string | null>> {
  const ids = new Set<string>([...transfers.values()].map((t) => t.source_id));
  for (const row of rows) {
    if (row.payment_id !== null) ids.add(row.payment_id);
    const settlements = record(row.result).settlements;
    if (Array.isArray(settlements)) for (const s of settlements) ids.add(text(record(s).payment_id) ?? '');
  }
  const payments = [...ids].filter((id) => isId('pay', id));
  const payouts = [...ids].filter((id) => isId('po', id));
  const references = new Map<string, string | null>();
  if (payments.length > 0) {
    for (const p of await db.selectFrom('payments').select(['id', 'reference']).where('id', 'in', payments).execute()) {
      references.set(p.id, p.reference);
    }
  }
  if (payouts.length > 0) {
    for (const p of await db.selectFrom('payouts').select(['id', 'reference']).where('id', 'in', payouts).execute()) {
      references.set(p.id, p.reference);
    }
  }
  return references;
}

function minorText(value: unknown): string | null {
  const digits = text(value);
  return digits !== null && /^\d+$/.test(digits) ? formatMinor(BigInt(digits), SETTLEMENT_CURRENCY) : null;
}

function record(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}
