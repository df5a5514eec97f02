import { type RawBuilder, type Selectable, sql } from 'kysely';
import type { Db, PaymentAttemptsTable } from '../database.ts';
import type { RefundRow } from '../tables/money.ts';

/**
 * The payer-rails worker's leases (src/payments/rails/reconcile.ts, refunds.ts), on the two tables
 * it works through: payment_attempts and refunds. A row that needs a provider call
 * (an open attempt, a late success to refund, a pending refund) is worked on by one worker at a
 * time: `checked_at` is its lease. A worker reads the rows whose lease has lapsed, then takes each
 * one with a compare-and-set from the value it read, so of two workers that read the same row
 * only one works on it, and always from the row as it is now.
 */
export type LeasedTable = 'payment_attempts' | 'refunds';

/** The rows whose lease lapsed at `cutoff` (or never taken): a condition for the caller's select. */
export function leaseLapsed(cutoff: Date): RawBuilder<boolean> {
  return sql<boolean>`(checked_at is null or checked_at <= ${cutoff})`;
}

/**
 * Takes the lease of one row, read with its `checked_at`: the row as it is now, or undefined when
 * another worker took it first.
 */
export function takeLease(db: Db, table: 'refunds', row: LeaseRead, now: Date): Promise<RefundRow | undefined>;
export function takeLease(
  db: Db,
  table: 'payment_attempts',
  row: LeaseRead,
  now: Date,
): Promise<Selectable<PaymentAttemptsTable> | undefined>;
export function takeLease(
  db: Db,
  table: LeasedTable,
  row: LeaseRead,
  now: Date,
): Promise<RefundRow | Selectable<PaymentAttemptsTable> | undefined> {
  // One table's builder for both: only `id` and `checked_at`, which both have, are used.
  return db
    .updateTable(table as 'refunds')
    .set({ checked_at: now })
    .where('id', '=', row.id)
    .where((eb) => (row.checked_at === null ? eb('checked_at', 'is', null) : eb('checked_at', '=', row.checked_at)))
    .returningAll()
    .executeTakeFirst();
}

interface LeaseRead {
  id: string;
  checked_at: Date | null;
}
