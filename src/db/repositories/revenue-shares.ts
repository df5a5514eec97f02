import type { Db, ModeScope } from '../database.ts';
import { type CreatedRange, keysetIn, type Page, type PageRequest, readPage } from '../pagination.ts';
import type { RevenueShareRow } from '../tables/money.ts';

// Reads of revenue shares. tools/split-revenue.ts writes them; their legs are payouts.

export interface RevenueShareFilter extends CreatedRange {
  paymentId?: string | undefined;
  reference?: string | undefined;
}

/** One page of the caller's revenue shares, newest first (GET /v1/revenue_shares). */
export async function listRevenueSharesPage(
  db: Db,
  scope: ModeScope,
  filter: RevenueShareFilter,
  page: PageRequest,
): Promise<Page<RevenueShareRow>> {
  const keyset = await keysetIn(db, 'revenue_shares', scope, page, 'revenue share');
  let query = db
    .selectFrom('revenue_shares')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode);
  if (filter.paymentId) query = query.where('payment_id', '=', filter.paymentId);
  if (filter.reference) query = query.where('reference', '=', filter.reference);
  if (filter.created_gte) query = query.where('created_at', '>=', filter.created_gte);
  if (filter.created_lte) query = query.where('created_at', '<=', filter.created_lte);
  return readPage(query, keyset, page.limit);
}

/** The account's revenue share with this reference, the first made: what a retry of split_revenue with that reference finds. */
export async function findRevenueShareByReference(
  db: Db,
  scope: ModeScope,
  reference: string,
): Promise<RevenueShareRow | undefined> {
  return db
    .selectFrom('revenue_shares')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('reference', '=', reference)
    .orderBy('created_at')
    .orderBy('id')
    .executeTakeFirst();
}
