/**
 * The tables whose rows are money, each row's digest recorded by its table's trigger
 * (migrations/028_money_row_digests.sql) and verified by money-rows.ts; the verification's report
 * (view-check.ts) names them too.
 */
export const MONEY_TABLES = [
  'payments',
  'payouts',
  'refunds',
  'revenue_shares',
  'ledger_entries',
  'transfers',
  'settlement_batches',
] as const;

export type MoneyTable = (typeof MONEY_TABLES)[number];
