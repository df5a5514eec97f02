import type { Db, ModeScope } from '../database.ts';
import { type CreatedRange, keysetIn, type Page, type PageRequest, readPage } from '../pagination.ts';
import type { PayoutRow } from '../tables/money.ts';
import { findScoped } from './scoped.ts';

// Reads of payouts. Payouts are written in the paying tools' runs only (src/db/money-writes/payouts.ts,
// which only tools/ imports): nothing here changes one.

/** A payout as its owner sees it: another account's or the other mode's payout does not exist. */
export function findPayout(db: Db, scope: ModeScope, id: string): Promise<PayoutRow | undefined> {
  return findScoped(db, 'payouts', scope, id);
}

export interface PayoutFilter extends CreatedRange {
  status?: PayoutRow['status'] | undefined;
  reference?: string | undefined;
  revenueShareId?: string | undefined;
}

/** One page of the caller's payouts, newest first: GET /v1/payouts and the dashboard's Payouts screen. */
export async function listPayoutsPage(
  db: Db,
  scope: ModeScope,
  filter: PayoutFilter,
  page: PageRequest,
): Promise<Page<PayoutRow>> {
  const keyset = await keysetIn(db, 'payouts', scope, page, 'payout');
  let query = db
    .selectFrom('payouts')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.reference) query = query.where('reference', '=', filter.reference);
  if (filter.revenueShareId) query = query.where('revenue_share_id', '=', filter.revenueShareId);
  if (filter.created_gte) query = query.where('created_at', '>=', filter.created_gte);
  if (filter.created_lte) query = query.where('created_at', '<=', filter.created_lte);
  return readPage(query, keyset, page.limit);
}

/** The caller's payouts among `ids`, as a summary (state, amount, transaction); unknown ids are left out. */
export async function listPayoutSummaries(
  db: Db,
  scope: ModeScope,
  ids: readonly string[],
): Promise<Pick<PayoutRow, 'id' | 'status' | 'amount_minor' | 'tx_hash'>[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('payouts')
    .select(['id', 'status', 'amount_minor', 'tx_hash'])
    .where('id', 'in', ids)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .execute();
}

/** Who approved a payout that the policy held: the key that decided it, and when. */
export interface PayoutApproval {
  keyId: string;
  at: Date | null;
}

/**
 * The approval behind each of these payouts, by payout id: the action that created it (or, for a
 * revenue share's leg, the share) was held and approved by a person. Payouts the policy let
 * through are absent.
 */
export async function listPayoutApprovals(
  db: Db,
  scope: ModeScope,
  payouts: readonly Pick<PayoutRow, 'id' | 'revenue_share_id'>[],
): Promise<Map<string, PayoutApproval>> {
  const objects = [...new Set(payouts.flatMap((p) => [p.id, ...(p.revenue_share_id ? [p.revenue_share_id] : [])]))];
  if (objects.length === 0) return new Map();
  const rows = await db
    .selectFrom('agent_actions as a')
    .leftJoin('confirmations as c', 'c.id', 'a.confirmation_id')
    .select(['a.object_id', 'a.approved_by_key', 'c.decided_by_key', 'c.decided_at'])
    .where('a.account_id', '=', scope.accountId)
    .where('a.livemode', '=', scope.livemode)
    .where('a.object_id', 'in', objects)
    .where((eb) => eb.or([eb('a.approved_by_key', 'is not', null), eb('c.decided_by_key', 'is not', null)]))
    .execute();
  const byObject = new Map(
    rows.map((r) => [r.object_id!, { keyId: (r.decided_by_key ?? r.approved_by_key)!, at: r.decided_at }]),
  );
  const approvals = new Map<string, PayoutApproval>();
  for (const p of payouts) {
    const approval = byObject.get(p.id) ?? (p.revenue_share_id ? byObject.get(p.revenue_share_id) : undefined);
    if (approval) approvals.set(p.id, approval);
  }
  return approvals;
}

/**
 * Which of `addresses` (lower case) the caller has paid before, by a payout that did not fail:
 * each once, in lower case. Only those are read, never the account's whole payout history.
 */
export async function listPaidRecipients(db: Db, scope: ModeScope, addresses: readonly string[]): Promise<string[]> {
  const rows = await db
    .selectFrom('payouts')
    .select((eb) => eb.fn('lower', ['to_address']).as('address'))
    .distinct()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('status', '!=', 'failed')
    .where((eb) => eb(eb.fn('lower', ['to_address']), 'in', addresses))
    .execute();
  return rows.map((r) => String(r.address));
}

/** The legs (payouts) of these revenue shares, oldest first: one read for a page of shares. */
export async function listRevenueShareLegs(db: Db, revenueShareIds: readonly string[]): Promise<PayoutRow[]> {
  if (revenueShareIds.length === 0) return [];
  return db
    .selectFrom('payouts')
    .selectAll()
    .where('revenue_share_id', 'in', revenueShareIds)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/**
 * The account's direct payout (not a revenue share's leg, which carries the share's reference)
 * with this reference, the first made: what a retry of create_payout with that reference finds.
 */
export async function findDirectPayoutByReference(
  db: Db,
  scope: ModeScope,
  reference: string,
): Promise<PayoutRow | undefined> {
  return (
    db
      .selectFrom('payouts')
      .selectAll()
      .where('account_id', '=', scope.accountId)
      .where('livemode', '=', scope.livemode)
      .where('reference', '=', reference)
      // A revenue share's legs carry the share's reference; a reference names one direct payout.
      .where('revenue_share_id', 'is', null)
      .orderBy('created_at')
      .executeTakeFirst()
  );
}

/** The legs (payouts) of one revenue share, oldest first. */
export async function listLegsOfRevenueShare(db: Db, revenueShareId: string): Promise<PayoutRow[]> {
  return db
    .selectFrom('payouts')
    .selectAll()
    .where('revenue_share_id', '=', revenueShareId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** What an account's queued payouts (one mode) take out of its balance, in minor units. */
export async function sumQueuedPayouts(db: Db, scope: ModeScope): Promise<bigint> {
  const pending = await db
    .selectFrom('payouts')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<string>('amount_minor'), eb.val('0')).as('total'))
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('status', '=', 'queued')
    .executeTakeFirstOrThrow();
  return BigInt(pending.total);
}
