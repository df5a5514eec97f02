import { sql } from 'kysely';
import type { Db, ModeScope } from '../database.ts';
import { type CreatedRange, keysetIn, type Page, type PageRequest, readPage } from '../pagination.ts';
import type { RefundRow } from '../tables/money.ts';
import { leaseLapsed } from './rail-leases.ts';

// Reads of refunds. tools/refund-payment.ts and the rail refunds' system tools write them.

export interface RefundFilter extends CreatedRange {
  paymentId?: string | undefined;
  status?: RefundRow['status'] | undefined;
}

/** One page of the caller's refunds, newest first (GET /v1/refunds). */
export async function listRefundsPage(
  db: Db,
  scope: ModeScope,
  filter: RefundFilter,
  page: PageRequest,
): Promise<Page<RefundRow>> {
  const keyset = await keysetIn(db, 'refunds', scope, page, 'refund');
  let query = db
    .selectFrom('refunds')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode);
  if (filter.paymentId) query = query.where('payment_id', '=', filter.paymentId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.created_gte) query = query.where('created_at', '>=', filter.created_gte);
  if (filter.created_lte) query = query.where('created_at', '<=', filter.created_lte);
  return readPage(query, keyset, page.limit);
}

/** Every refund of one of the caller's payments, oldest first (the dashboard's payment page). */
export async function listPaymentRefunds(db: Db, scope: ModeScope, paymentId: string): Promise<RefundRow[]> {
  return db
    .selectFrom('refunds')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('payment_id', '=', paymentId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Pending refunds on a provider rail whose lease lapsed at `leaseCutoff`, oldest first: the rail refunds worker's. */
export async function findRailRefundsToAdvance(
  db: Db,
  leaseCutoff: Date,
  limit: number,
): Promise<Pick<RefundRow, 'id' | 'checked_at'>[]> {
  return db
    .selectFrom('refunds')
    .select(['id', 'checked_at'])
    .where('status', '=', 'pending')
    .where('rail', '<>', 'sandbox')
    .where(leaseLapsed(leaseCutoff))
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/**
 * What the payment's refunds that stand (not failed and undone) took from the balance and the
 * fees, summed in SQL: int8 sums are numeric, so they leave as text and become bigint, never a float.
 */
export async function sumStandingRefunds(
  db: Db,
  paymentId: string,
): Promise<{ merchantDebit: bigint; feeReturn: bigint }> {
  const row = await db
    .selectFrom('refunds')
    .select([
      sql<string>`coalesce(sum(merchant_debit_minor), 0)::text`.as('debit'),
      sql<string>`coalesce(sum(fee_return_minor), 0)::text`.as('fee'),
    ])
    .where('payment_id', '=', paymentId)
    .where('status', '<>', 'failed')
    .executeTakeFirstOrThrow();
  return { merchantDebit: BigInt(row.debit), feeReturn: BigInt(row.fee) };
}

/** The caller's refund `id` under a row lock (FOR UPDATE): a concurrent outcome for it waits, then sees what this one did. */
export async function lockScopedRefund(db: Db, scope: ModeScope, id: string): Promise<RefundRow | undefined> {
  return db
    .selectFrom('refunds')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .forUpdate()
    .executeTakeFirst();
}
