import { CompiledQuery, sql } from 'kysely';
import { isPaidStatus, PAYMENT_STATUSES, type PaymentStatus } from '../../domain/payment-status.ts';
import { PUBLIC_PAYMENT_COLUMNS, type PublicPaymentColumn } from '../../domain/present-payment.ts';
import type { Db, ModeScope, PaymentRow, SettlementSchedule } from '../database.ts';
import { PREPARED } from '../prepared-statements.ts';
import {
  type CreatedRange,
  FIRST_PAGE,
  fromCursor,
  type Keyset,
  keysetIn,
  type Page,
  type PageRequest,
  readPage,
} from '../pagination.ts';
import type { CollectionOwner } from '../tables/rails.ts';
import { findScoped, inScopes } from './scoped.ts';

/**
 * What a new payment takes from its account at creation: the fee for its quote and the settlement
 * schedule of its mode (null when the account has none: instant).
 */
export interface CreationSettings {
  feeBps: number;
  schedule: SettlementSchedule | null;
  thresholdMinor: bigint | null;
}

export async function findCreationSettings(
  db: Db,
  scope: { accountId: string; livemode: boolean },
): Promise<CreationSettings | undefined> {
  const row = await db
    .selectFrom('accounts as a')
    .leftJoin('settlement_schedules as s', (join) =>
      join.onRef('s.account_id', '=', 'a.id').on('s.livemode', '=', scope.livemode),
    )
    .select(['a.fee_bps', 's.schedule', 's.threshold_minor'])
    .where('a.id', '=', scope.accountId)
    .executeTakeFirst();
  return row && { feeBps: row.fee_bps, schedule: row.schedule, thresholdMinor: row.threshold_minor };
}

/** A payment as its owner sees it: account and mode must match, else it does not exist. */
export async function findPayment(
  db: Db,
  scope: { accountId: string; livemode: boolean },
  id: string,
): Promise<PaymentRow | undefined> {
  return findScoped(db, 'payments', scope, id);
}

/** Public read by id alone (the id is unguessable): the checkout page and status polling. */
export async function findPaymentById(db: Db, id: string): Promise<PaymentRow | undefined> {
  return db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * A hot path (pollers, bench/checkout.ts): one prepared statement (prepared-statements.ts), its
 * text built once and run as it is (no query builder per request), reading only the columns the
 * public view shows, and metadata as its stored text rather than parsed and written back through
 * the app's serializer.
 */
const SELECT_PUBLIC_PAYMENT = `${PREPARED}select ${PUBLIC_PAYMENT_COLUMNS.map((column) =>
  column === 'metadata' ? 'metadata::text as metadata' : column,
).join(', ')} from payments where id = $1`;

/** The columns of a payment its public view shows, metadata as its stored json text. */
export type PublicPaymentRow = Omit<Pick<PaymentRow, PublicPaymentColumn>, 'metadata'> & { metadata: string | null };

/** The public status read by id alone (GET /checkout/:id): what presentPublicPayment shows, and nothing else. */
export async function findPublicPayment(db: Db, id: string): Promise<PublicPaymentRow | undefined> {
  const { rows } = await db.executeQuery<PublicPaymentRow>(CompiledQuery.raw(SELECT_PUBLIC_PAYMENT, [id]));
  return rows[0];
}

export async function findPaymentByReference(
  db: Db,
  scope: { accountId: string; livemode: boolean },
  reference: string,
): Promise<PaymentRow | undefined> {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('reference', '=', reference)
    .executeTakeFirst();
}

export interface PaymentFilter extends CreatedRange {
  status?: PaymentStatus | undefined;
  reference?: string | undefined;
}

function paymentsOf(db: Db, scope: { accountId: string; livemode: boolean }, f: PaymentFilter) {
  let query = db
    .selectFrom('payments')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode);
  if (f.status) query = query.where('status', '=', f.status);
  if (f.reference) query = query.where('reference', '=', f.reference);
  if (f.created_gte) query = query.where('created_at', '>=', f.created_gte);
  if (f.created_lte) query = query.where('created_at', '<=', f.created_lte);
  return query;
}

/** One page of the caller's payments, newest first: GET /v1/payments and the dashboard's Payments screen. */
export async function listPaymentsPage(
  db: Db,
  scope: { accountId: string; livemode: boolean },
  filter: PaymentFilter,
  page: PageRequest,
): Promise<Page<PaymentRow>> {
  const keyset = await keysetIn(db, 'payments', scope, page, 'payment');
  return readPage(paymentsOf(db, scope, filter), keyset, page.limit);
}

export interface PaymentListFilter {
  accountId: string;
  livemode: boolean;
  status?: PaymentStatus | undefined;
  reference?: string | undefined;
  createdGte?: Date | undefined;
  createdLte?: Date | undefined;
  /** Where the page starts and which way it runs (db/pagination.ts); the first page by default. */
  keyset?: Keyset | undefined;
  limit: number;
}

/** `limit` of the caller's payments from the keyset's cursor, in keyset order (the MCP resource list). */
export async function listPayments(db: Db, f: PaymentListFilter): Promise<PaymentRow[]> {
  const query = paymentsOf(db, f, {
    status: f.status,
    reference: f.reference,
    created_gte: f.createdGte,
    created_lte: f.createdLte,
  });
  return fromCursor(query, f.keyset ?? FIRST_PAGE, f.limit).execute();
}

/** The currency of each of the caller's payments among `ids`; unknown ids are left out. */
export function listPaymentCurrencies(
  db: Db,
  scope: ModeScope,
  ids: readonly string[],
): Promise<Pick<PaymentRow, 'id' | 'currency'>[]> {
  return db
    .selectFrom('payments')
    .select(['id', 'currency'])
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('id', 'in', ids)
    .execute();
}

/** A payment booked to collection (payment_received), with the attempt whose success credited it. */
export interface PaymentBookedToCollection {
  id: string;
  account_id: string;
  livemode: boolean;
  currency: string;
  amount_minor: bigint;
  rail: string | null;
  collection_id: string | null;
  owner: CollectionOwner | null;
  provider_reference: string | null;
  provider_receipt: string | null;
}

/** Payments booked to collection that were paid in [from, to), by id (the daily reconciliation). */
export async function listPaymentsBookedToCollection(
  db: Db,
  window: { from: Date; to: Date },
): Promise<PaymentBookedToCollection[]> {
  const rows = await sql<PaymentBookedToCollection>`
    select p.id, p.account_id, p.livemode, p.currency, p.amount_minor,
           a.rail, a.collection_id, c.owner, a.provider_reference, a.provider_receipt
      from payments p
      join ledger_postings lp on lp.kind = 'payment_received' and lp.reference = p.id
      left join lateral (
        select a.rail, a.collection_id, a.provider_reference, a.provider_receipt from payment_attempts a
         where a.payment_id = p.id and a.outcome = 'succeeded' and not a.late
         order by a.completed_at desc limit 1) a on true
      left join collection_accounts c on c.id = a.collection_id
     where p.paid_at >= ${window.from} and p.paid_at < ${window.to}
     order by p.id`.execute(db);
  return rows.rows;
}

/** The caller's payments among `ids`, as a summary (state, amount, transaction); unknown ids are left out. */
export async function listPaymentSummaries(
  db: Db,
  scope: { accountId: string; livemode: boolean },
  ids: readonly string[],
): Promise<Pick<PaymentRow, 'id' | 'status' | 'amount_minor' | 'currency' | 'settlement_tx_hash'>[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('payments')
    .select(['id', 'status', 'amount_minor', 'currency', 'settlement_tx_hash'])
    .where('id', 'in', ids)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .execute();
}

/** A paid payment the settlement worker's intake offers: whether it wants a transfer on chain (an address and an amount). */
export interface PaidPaymentOffer {
  id: string;
  account_id: string;
  livemode: boolean;
  wants_chain: boolean;
}

/** The oldest paid payments, up to `limit`, read without a lock: what the settlement intake offers its run. */
export async function oldestPaidPayments(db: Db, limit: number): Promise<PaidPaymentOffer[]> {
  return await db
    .selectFrom('payments as p')
    .innerJoin('accounts as a', 'a.id', 'p.account_id')
    .select([
      'p.id',
      'p.account_id',
      'p.livemode',
      sql<boolean>`coalesce(p.payout_address, a.default_payout_address) is not null and p.settlement_minor > 0`.as(
        'wants_chain',
      ),
    ])
    .where('p.status', '=', 'paid')
    .orderBy('p.paid_at')
    .orderBy('p.id')
    .limit(limit)
    .execute();
}

/** The pending payments whose ttl lapsed at `now`, soonest lapsed first: what the expiry job offers. */
export async function findLapsedPendingPayments(
  db: Db,
  now: Date,
  limit: number,
): Promise<Pick<PaymentRow, 'id' | 'account_id'>[]> {
  return db
    .selectFrom('payments')
    .select(['id', 'account_id'])
    .where('status', '=', 'pending')
    .where('expires_at', '<=', now)
    .orderBy('expires_at')
    .limit(limit)
    .execute();
}

/** When the next pending payment lapses: its expires_at, or undefined when none is pending. */
export async function findNextPaymentLapse(db: Db): Promise<{ expires_at: Date } | undefined> {
  return db
    .selectFrom('payments')
    .select('expires_at')
    .where('status', '=', 'pending')
    .orderBy('expires_at')
    .limit(1)
    .executeTakeFirst();
}

/** Whose a payment is (its account and mode) and when it lapses; it exists (an attempt names it). */
export async function findPaymentOwnerAndExpiry(
  db: Db,
  id: string,
): Promise<Pick<PaymentRow, 'account_id' | 'livemode' | 'expires_at'>> {
  return db
    .selectFrom('payments')
    .select(['account_id', 'livemode', 'expires_at'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

/** Whose a payment is: its account and mode; it exists (an attempt names it). */
export async function findPaymentOwner(db: Db, id: string): Promise<Pick<PaymentRow, 'account_id' | 'livemode'>> {
  return db.selectFrom('payments').select(['account_id', 'livemode']).where('id', '=', id).executeTakeFirstOrThrow();
}

/** The account's payments among `ids`, in either mode (the ids were read from its own rows); unknown ids are left out. */
export async function listAccountPaymentsIn(db: Db, accountId: string, ids: readonly string[]): Promise<PaymentRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('payments').selectAll().where('account_id', '=', accountId).where('id', 'in', ids).execute();
}

// get_revenue's reads: what the account was paid within a range.

/** Statuses a payment can only be in once the payer has paid (paid_at is set on the way in). */
const PAID_STATUSES = PAYMENT_STATUSES.filter(isPaidStatus);

export interface RevenueFilter extends ModeScope {
  from: Date;
  to: Date;
  currency?: string | undefined;
}

export interface CurrencyRevenue {
  currency: string;
  count: number;
  amountMinor: bigint;
  refundedMinor: bigint;
  /** Settlement credited minus what refunds took back, in the settlement asset's minor units. */
  settlementMinor: bigint;
}

/**
 * The account's payments of one mode that the payer paid within [from, to). paid_at is set once,
 * when the payment becomes paid, and kept through settlement and refunds. The range is an index
 * range scan on payments_paid_range (migrations/009).
 */
function paidWithin(db: Db, f: RevenueFilter) {
  let query = db
    .selectFrom('payments')
    .where('payments.account_id', '=', f.accountId)
    .where('payments.livemode', '=', f.livemode)
    .where('payments.status', 'in', PAID_STATUSES)
    .where('payments.paid_at', '>=', f.from)
    .where('payments.paid_at', '<', f.to);
  if (f.currency !== undefined) query = query.where('payments.currency', '=', f.currency);
  return query;
}

/**
 * Sums per currency, in SQL, over every payment in the range. Sums of int8 are numeric in
 * Postgres: they leave as text and become bigint here, never a float. What refunds took back in
 * USDC is read from the refunds themselves (merchant_debit_minor), one index probe per payment.
 */
export async function revenueByCurrency(db: Db, f: RevenueFilter): Promise<CurrencyRevenue[]> {
  const rows = await paidWithin(db, f)
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('refunds')
          .select(sql<string>`sum(refunds.merchant_debit_minor)`.as('debit_minor'))
          .whereRef('refunds.payment_id', '=', 'payments.id')
          // A failed refund was undone: its share is back in the balance.
          .where('refunds.status', '<>', 'failed')
          .as('refund_totals'),
      (join) => join.onTrue(),
    )
    .select([
      'payments.currency',
      sql<string>`count(*)::text`.as('count'),
      sql<string>`sum(payments.amount_minor)::text`.as('amount_minor'),
      sql<string>`sum(payments.refunded_minor)::text`.as('refunded_minor'),
      sql<string>`sum(payments.settlement_minor)::text`.as('settlement_minor'),
      sql<string>`coalesce(sum(refund_totals.debit_minor), 0)::text`.as('refund_debit_minor'),
    ])
    .groupBy('payments.currency')
    .orderBy('payments.currency')
    .execute();
  return rows.map((row) => ({
    currency: row.currency,
    count: Number(row.count),
    amountMinor: BigInt(row.amount_minor),
    refundedMinor: BigInt(row.refunded_minor),
    settlementMinor: BigInt(row.settlement_minor) - BigInt(row.refund_debit_minor),
  }));
}

/** The account's payments paid within the range, newest paid first, at most `limit`: get_revenue's list. */
export async function paidPaymentsWithin(db: Db, f: RevenueFilter, limit: number) {
  return paidWithin(db, f)
    .select(['id', 'amount_minor', 'currency', 'status', 'reference', 'paid_at'])
    .orderBy('paid_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

// Payment locks a system tool takes in its own transaction to serialise a money decision: a
// concurrent run on the same payment waits, then sees what the first one did.

/** The caller's payment `id` under a row lock (FOR UPDATE); another account's or mode's is not there. */
export async function lockScopedPayment(db: Db, scope: ModeScope, id: string): Promise<PaymentRow | undefined> {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .forUpdate()
    .executeTakeFirst();
}

/** A payment under a row lock (FOR UPDATE); it exists (a row the caller holds names it). */
export async function lockPaymentById(db: Db, id: string): Promise<PaymentRow> {
  return db.selectFrom('payments').selectAll().where('id', '=', id).forUpdate().executeTakeFirstOrThrow();
}

/** A payment by id, unlocked; it exists (a row the caller holds names it). */
export async function findKnownPayment(db: Db, id: string): Promise<PaymentRow> {
  return db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

// Payment runs' locks (start_payment_settlements, expire_payments): the offered payments that are
// still what the worker saw, locked for the run (SKIP LOCKED: rows another run holds are left to
// it; rows this run locked already are its own), and, once the run's action-log locks are taken,
// only of the accounts whose locks it holds (`scopes`).

/** The offered payments still paid, oldest paid first, up to `limit`, locked for the run. */
export function lockOfferedPaidPayments(
  db: Db,
  offer: { payment_ids: readonly string[]; limit: number },
  scopes?: readonly ModeScope[],
): Promise<PaymentRow[]> {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('id', 'in', offer.payment_ids)
    .where('status', '=', 'paid')
    .$if(scopes !== undefined, (q) => q.where(inScopes(scopes!)))
    .orderBy('paid_at')
    .orderBy('id')
    .limit(offer.limit)
    .forUpdate()
    .skipLocked()
    .execute();
}

/** The offered sessions still pending and lapsed at `now`, up to `limit`, locked for the run. */
export function lockOfferedLapsedSessions(
  db: Db,
  offer: { payment_ids: readonly string[]; limit: number },
  now: Date,
  scopes?: readonly ModeScope[],
): Promise<Pick<PaymentRow, 'id' | 'account_id' | 'livemode'>[]> {
  return db
    .selectFrom('payments')
    .select(['id', 'account_id', 'livemode'])
    .where('id', 'in', offer.payment_ids)
    .where('status', '=', 'pending')
    .where('expires_at', '<=', now)
    .$if(scopes !== undefined, (q) => q.where(inScopes(scopes!)))
    .orderBy('expires_at')
    .limit(offer.limit)
    .forUpdate()
    .skipLocked()
    .execute();
}
