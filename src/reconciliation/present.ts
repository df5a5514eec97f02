import { type CsvColumn, financeCsv } from '../core/finance-csv.ts';
import type { ReconciliationLineRow, ReconciliationRunRow } from '../db/tables/reconciliation.ts';
import { formatMinor, getCurrency } from '../domain/money.ts';
import { LINE_KINDS, type LineKind } from './lines.ts';
import type { ReconciliationSummary } from './reconcile.ts';

/**
 * How a run reads to the operator (CLI, operator API) and to a merchant's finance (the dashboard,
 * its own lines only): one JSON shape, one CSV, one text. Amounts stay exact: minor units as
 * decimal strings in JSON, the currency's decimal text in CSV and text.
 */

export interface RunView {
  object: 'reconciliation_run';
  id: string;
  day: string;
  trigger: string;
  /** running, completed, failed. */
  status: string;
  started_at: string;
  finished_at: string | null;
  error: string | null;
  differences: number;
  /** The totals of each side; null while running or when failed. */
  summary: ReconciliationSummary | null;
  /** Left out of a list of runs. */
  lines?: LineView[];
}

export interface LineView {
  line: number;
  kind: string;
  /** What the kind means (docs/reconciliation.md says what to do about it). */
  description: string;
  livemode: boolean | null;
  currency: string;
  account: string | null;
  payment: string | null;
  rail: string | null;
  collection: string | null;
  reference: string | null;
  source_amount_minor: string | null;
  ledger_amount_minor: string | null;
  detail: string;
}

export function runView(run: ReconciliationRunRow, lines?: readonly ReconciliationLineRow[]): RunView {
  return {
    object: 'reconciliation_run',
    id: run.id,
    day: run.day,
    trigger: run.trigger,
    status: run.status,
    started_at: run.started_at.toISOString(),
    finished_at: run.finished_at?.toISOString() ?? null,
    error: run.error,
    differences: run.differences,
    summary: (run.summary as ReconciliationSummary | null) ?? null,
    ...(lines ? { lines: lines.map(lineView) } : {}),
  };
}

function lineView(l: ReconciliationLineRow): LineView {
  return {
    line: l.line_no,
    kind: l.kind,
    description: LINE_KINDS[l.kind as LineKind] ?? l.kind,
    livemode: l.livemode,
    currency: l.currency,
    account: l.account_id,
    payment: l.payment_id,
    rail: l.rail,
    collection: l.collection_id,
    reference: l.reference,
    source_amount_minor: l.source_amount_minor?.toString() ?? null,
    ledger_amount_minor: l.ledger_amount_minor?.toString() ?? null,
    detail: l.detail,
  };
}

/** A minor amount as its currency's decimal text (the minor units when the currency is not one). */
export function amountText(minor: bigint | null, currency: string): string {
  if (minor === null) return '';
  const known = getCurrency(currency);
  return known ? formatMinor(minor, known) : minor.toString();
}

const CSV_COLUMNS: ReadonlyArray<[string, (run: ReconciliationRunRow, l: ReconciliationLineRow) => string]> = [
  ['run', (run) => run.id],
  ['day', (run) => run.day],
  ['line', (_run, l) => String(l.line_no)],
  ['kind', (_run, l) => l.kind],
  ['mode', (_run, l) => (l.livemode === null ? '' : l.livemode ? 'live' : 'test')],
  ['currency', (_run, l) => l.currency],
  ['account', (_run, l) => l.account_id ?? ''],
  ['payment', (_run, l) => l.payment_id ?? ''],
  ['rail', (_run, l) => l.rail ?? ''],
  ['collection', (_run, l) => l.collection_id ?? ''],
  ['reference', (_run, l) => l.reference ?? ''],
  ['source_amount', (_run, l) => amountText(l.source_amount_minor, l.currency)],
  ['ledger_amount', (_run, l) => amountText(l.ledger_amount_minor, l.currency)],
  ['detail', (_run, l) => l.detail],
];

/**
 * A run's lines as CSV, written like the actions export (RFC 4180 by csv-stringify, a UTF-8 byte
 * order mark for Excel, CRLF, formula-like cells quoted): a header, then one row per line.
 */
export function linesCsv(run: ReconciliationRunRow, lines: readonly ReconciliationLineRow[]): string {
  return financeCsv(
    CSV_COLUMNS.map(([name, cell]): CsvColumn<ReconciliationLineRow> => [name, (l) => cell(run, l)]),
    lines,
  );
}

/** The run for a terminal: totals of each side, the treasury, then every difference. */
export function runText(run: ReconciliationRunRow, lines: readonly ReconciliationLineRow[]): string {
  const out: string[] = [];
  const mode = (livemode: boolean | null) => (livemode === null ? 'both' : livemode ? 'live' : 'test');
  out.push(
    `Reconciliation of ${run.day} (${run.id}, ${run.trigger}): ${run.status}` +
      (run.status === 'completed' ? `, ${run.differences} difference(s)` : run.error ? `: ${run.error}` : ''),
  );
  const summary = run.summary as ReconciliationSummary | null;
  if (summary) {
    out.push('Collected (provider / ledger):');
    for (const t of summary.collections) {
      const provider =
        t.provider_count === null
          ? 'not listed'
          : `${t.provider_count}, ${amountText(BigInt(t.provider_amount_minor ?? '0'), t.currency)}`;
      out.push(
        `  ${mode(t.livemode)} ${t.currency} ${t.rail}: ${provider} / ${t.ledger_count}, ${amountText(BigInt(t.ledger_amount_minor), t.currency)}`,
      );
    }
    for (const l of summary.listings.filter((l) => !l.listed || l.not_from_plainpay > 0)) {
      out.push(
        l.listed
          ? `  ${l.collection_id} (${l.rail}) listed ${l.not_from_plainpay} row(s) plainpay did not start`
          : `  ${l.collection_id} (${l.rail}) not listed: ${l.reason}`,
      );
    }
    out.push('Settled on chain:');
    for (const s of summary.settlements) {
      out.push(
        `  ${mode(s.livemode)} ${s.kind}${s.payment_currency ? ` ${s.payment_currency}` : ''}: ${s.count}, ${amountText(BigInt(s.amount_minor), 'USDC')} USDC`,
      );
    }
    const t = summary.treasury;
    out.push(
      t
        ? `Treasury (${t.chain_key}): holds ${amountText(BigInt(t.held_minor), 'USDC')}, owes ${amountText(BigInt(t.owed_minor), 'USDC')} USDC, cover ${t.cover_ratio ?? 'n/a'}${BigInt(t.shortfall_minor) > 0n ? `, SHORT ${amountText(BigInt(t.shortfall_minor), 'USDC')}` : ''}`
        : 'Treasury: not read',
    );
  }
  if (lines.length > 0) out.push('Differences:');
  for (const l of lines) {
    const amounts = [
      l.source_amount_minor === null ? '' : `source ${amountText(l.source_amount_minor, l.currency)}`,
      l.ledger_amount_minor === null ? '' : `ledger ${amountText(l.ledger_amount_minor, l.currency)}`,
    ]
      .filter(Boolean)
      .join(', ');
    out.push(
      `  ${l.line_no}. ${l.kind} ${mode(l.livemode)} ${l.currency}${l.payment_id ? ` ${l.payment_id}` : ''}${amounts ? ` (${amounts})` : ''}: ${l.detail}`,
    );
  }
  return out.join('\n');
}
