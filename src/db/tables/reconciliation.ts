import type { ColumnType, Selectable } from 'kysely';

/** Table types of migrations/026_reconciliation.sql, owned by src/reconciliation; composed into Database. */

type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export type ReconciliationTrigger = 'schedule' | 'cli' | 'api';
export type ReconciliationRunStatus = 'running' | 'completed' | 'failed';

export interface ReconciliationRunsTable {
  id: string;
  /** The UTC day reconciled, YYYY-MM-DD. */
  day: ColumnType<string, string, never>;
  trigger: ReconciliationTrigger;
  status: ReconciliationRunStatus;
  claimed_by: string;
  lease_until: ColumnType<Date, Date | string, Date | string>;
  started_at: ColumnType<Date, Date | string, Date | string>;
  finished_at: NullableTimestamp;
  error: string | null;
  /** json text on write; parsed on read. */
  summary: ColumnType<unknown, string | null | undefined, string | null>;
  differences: ColumnType<number, number | undefined, number>;
  treasury_cover_ratio: number | null;
  treasury_shortfall_minor: bigint | null;
  created_at: ColumnType<Date, Date | string | undefined, never>;
}

export interface ReconciliationLinesTable {
  run_id: string;
  line_no: number;
  kind: string;
  livemode: boolean | null;
  currency: string;
  account_id: string | null;
  payment_id: string | null;
  rail: string | null;
  collection_id: string | null;
  reference: string | null;
  source_amount_minor: bigint | null;
  ledger_amount_minor: bigint | null;
  detail: string;
}

export interface ReconciliationTables {
  reconciliation_runs: ReconciliationRunsTable;
  reconciliation_lines: ReconciliationLinesTable;
}

export type ReconciliationRunRow = Selectable<ReconciliationRunsTable>;
export type ReconciliationLineRow = Selectable<ReconciliationLinesTable>;
