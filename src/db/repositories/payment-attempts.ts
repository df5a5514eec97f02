import { type Selectable, sql } from 'kysely';
import type { AttemptOutcome, Db } from '../database.ts';
import { OPEN_ATTEMPT_OUTCOMES, type PaymentAttemptsTable } from '../database.ts';
import { PROVIDER_RAIL_NAMES, type ProviderRail, type RailEventsTable } from '../tables/rails.ts';
import { leaseLapsed } from './rail-leases.ts';

export type PaymentAttemptRow = Selectable<PaymentAttemptsTable>;

// What finance reads about how a payer tried to pay: the attempts on the payer rails and every
// message the providers sent about them. The rails (src/payments/rails/) write both.

/** Every attempt to pay one payment, oldest first. */
export async function listPaymentAttempts(db: Db, paymentId: string): Promise<Selectable<PaymentAttemptsTable>[]> {
  return db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .orderBy('created_at')
    .execute();
}

/** Every provider message about one payment, oldest first. */
export async function listRailEvents(db: Db, paymentId: string): Promise<Selectable<RailEventsTable>[]> {
  return db
    .selectFrom('rail_events')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The Paystack attempt a provider event names by its transaction reference. */
export async function findPaystackAttemptByReference(
  db: Db,
  reference: string,
): Promise<Selectable<PaymentAttemptsTable> | undefined> {
  return db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('rail', '=', 'paystack')
    .where('provider_reference', '=', reference)
    .executeTakeFirst();
}

/** The M-Pesa attempt whose STK callback secret hashes to this (the secret is stored hashed). */
export async function findMpesaAttemptByCallbackHash(
  db: Db,
  tokenHash: string,
): Promise<Selectable<PaymentAttemptsTable> | undefined> {
  return db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('callback_token_hash', '=', tokenHash)
    .where('rail', '=', 'mpesa')
    .executeTakeFirst();
}

/** An M-Pesa attempt by its id. */
export async function findMpesaAttempt(
  db: Db,
  attemptId: string,
): Promise<Selectable<PaymentAttemptsTable> | undefined> {
  return db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('id', '=', attemptId)
    .where('rail', '=', 'mpesa')
    .executeTakeFirst();
}

/** Whether an M-Pesa attempt already holds this CheckoutRequestID. */
export async function mpesaReferenceTaken(db: Db, checkoutRequestId: string): Promise<boolean> {
  const row = await db
    .selectFrom('payment_attempts')
    .select('id')
    .where('rail', '=', 'mpesa')
    .where('provider_reference', '=', checkoutRequestId)
    .executeTakeFirst();
  return row !== undefined;
}

/** A provider attempt as the reconciliation matches a listing row to it, with its payment and whether it was booked. */
export interface CollectedAttempt {
  id: string;
  payment_id: string;
  outcome: AttemptOutcome;
  late: boolean;
  refund_status: string | null;
  failure_reason: string | null;
  provider_reference: string | null;
  provider_receipt: string | null;
  amount_minor: bigint | null;
  created_at: Date;
  completed_at: Date | null;
  account_id: string;
  livemode: boolean;
  booked: boolean;
}

const COLLECTED_ATTEMPT_COLUMNS = sql`
  a.id, a.payment_id, a.outcome, a.late, a.refund_status, a.failure_reason, a.provider_reference,
  a.provider_receipt, a.amount_minor, a.created_at, a.completed_at, p.account_id, p.livemode,
  exists (select 1 from ledger_postings lp where lp.kind = 'payment_received' and lp.reference = p.id) as booked`;

/** The attempts of a collection account whose provider reference or receipt is one of `handles`. */
export async function listCollectedAttemptsByHandle(
  db: Db,
  collectionId: string,
  handles: readonly string[],
): Promise<CollectedAttempt[]> {
  const found = await sql<CollectedAttempt>`
      select ${COLLECTED_ATTEMPT_COLUMNS} from payment_attempts a join payments p on p.id = a.payment_id
       where a.collection_id = ${collectionId}
         and (a.provider_reference in (${sql.join(handles)}) or a.provider_receipt in (${sql.join(handles)}))`.execute(
    db,
  );
  return found.rows;
}

/**
 * The attempts of a collection account with no receipt yet, asked one of `amounts`, created in
 * [since, until): those a listing row named by its receipt alone could be.
 */
export async function listCollectedAttemptsWithoutReceipt(
  db: Db,
  collectionId: string,
  amounts: readonly bigint[],
  since: Date,
  until: Date,
): Promise<CollectedAttempt[]> {
  const open = await sql<CollectedAttempt>`
    select ${COLLECTED_ATTEMPT_COLUMNS} from payment_attempts a join payments p on p.id = a.payment_id
     where a.collection_id = ${collectionId} and a.provider_receipt is null
       and a.amount_minor in (${sql.join(amounts)})
       and a.created_at >= ${since} and a.created_at < ${until}`.execute(db);
  return open.rows;
}

/**
 * Records the provider's reference on an attempt that has none yet (the push's answer was lost and
 * only the callback names it). A reference, not money: the attempt's outcome is not touched.
 */
export async function recordMissingProviderReference(db: Db, attemptId: string, reference: string): Promise<void> {
  await db
    .updateTable('payment_attempts')
    .set({ provider_reference: reference })
    .where('id', '=', attemptId)
    .where('provider_reference', 'is', null)
    .execute();
}

// The payer rails' own reads, and what they write of an attempt that moves no money: the
// provider's answer to a start, the lease (`checked_at`), a signed event kept until it is
// confirmed. Every outcome is a system tool's (src/db/money-writes/).

/** An attempt by its id (it exists: the caller was handed it). */
export async function findPaymentAttemptById(db: Db, id: string): Promise<PaymentAttemptRow> {
  return db.selectFrom('payment_attempts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** One attempt of one payment: the page after a form post names the attempt it made. */
export async function findPaymentAttempt(
  db: Db,
  paymentId: string,
  attemptId: string,
): Promise<PaymentAttemptRow | undefined> {
  return db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('id', '=', attemptId)
    .where('payment_id', '=', paymentId)
    .executeTakeFirst();
}

/** The attempt in flight on a processing payment (its outcome pending or unknown), if any (at most one: start_payment_attempt). */
export async function findOpenPaymentAttempt(db: Db, paymentId: string): Promise<PaymentAttemptRow | undefined> {
  return db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .where('outcome', 'in', OPEN_ATTEMPT_OUTCOMES)
    .orderBy('created_at', 'desc')
    .executeTakeFirst();
}

/** The success on this rail that paid the payment (not a late one): what a refund goes back through. */
export async function findPaidAttempt(
  db: Db,
  paymentId: string,
  rail: ProviderRail,
): Promise<PaymentAttemptRow | undefined> {
  return db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('payment_id', '=', paymentId)
    .where('rail', '=', rail)
    .where('outcome', '=', 'succeeded')
    .where('late', '=', false)
    .executeTakeFirst();
}

/** The provider started the attempt: its handle on it, and the page the payer continues on (null: none). */
export async function recordProviderStart(
  db: Db,
  attemptId: string,
  providerReference: string,
  payerUrl: string | null,
): Promise<void> {
  await db
    .updateTable('payment_attempts')
    .set({ provider_reference: providerReference, payer_url: payerUrl })
    .where('id', '=', attemptId)
    .execute();
}

/** The provider is being asked about the attempt now: the reconciler leaves it for a while. */
export async function markAttemptChecked(db: Db, attemptId: string, at: Date): Promise<void> {
  await db.updateTable('payment_attempts').set({ checked_at: at }).where('id', '=', attemptId).execute();
}

/**
 * A signed success event arrived for this attempt (Paystack's charge.success): kept, from its first
 * arrival, until a success is recorded (record_payment_attempt clears it). Until then the reconciler
 * re-verifies the attempt itself and may pay it, ended or not: an event that came while verify was
 * failing is paid once verify recovers, without Paystack sending it again.
 */
export async function keepSignedSuccess(db: Db, attemptId: string, at: Date): Promise<void> {
  await db
    .updateTable('payment_attempts')
    .set({ unconfirmed_event_at: at })
    .where('id', '=', attemptId)
    .where('unconfirmed_event_at', 'is', null)
    .where('outcome', 'not in', ['succeeded', 'flagged'])
    .execute();
}

/** A kept signed event verify never confirmed: no longer asked about. */
export async function forgetSignedSuccess(db: Db, attemptId: string): Promise<void> {
  await db.updateTable('payment_attempts').set({ unconfirmed_event_at: null }).where('id', '=', attemptId).execute();
}

/** A lease read: the row's id and its `checked_at`, to take it from (rail-leases.ts). */
export type AttemptLeaseRead = Pick<PaymentAttemptRow, 'id' | 'checked_at'>;

/** Open attempts on a provider rail started by `startedBy`, whose lease lapsed at `leaseCutoff`, oldest first. */
export async function findOpenAttemptsToCheck(
  db: Db,
  startedBy: Date,
  leaseCutoff: Date,
  limit: number,
): Promise<AttemptLeaseRead[]> {
  return db
    .selectFrom('payment_attempts')
    .select(['id', 'checked_at'])
    .where('outcome', 'in', OPEN_ATTEMPT_OUTCOMES)
    .where('rail', 'in', PROVIDER_RAIL_NAMES)
    .where('created_at', '<=', startedBy)
    .where(leaseLapsed(leaseCutoff))
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/** Ended attempts holding a signed success event not confirmed yet, whose lease lapsed, oldest event first. */
export async function findUnconfirmedEventAttempts(
  db: Db,
  leaseCutoff: Date,
  limit: number,
): Promise<AttemptLeaseRead[]> {
  return db
    .selectFrom('payment_attempts')
    .select(['id', 'checked_at'])
    .where('unconfirmed_event_at', 'is not', null)
    .where('outcome', 'not in', OPEN_ATTEMPT_OUTCOMES)
    .where(leaseLapsed(leaseCutoff))
    .orderBy('unconfirmed_event_at')
    .limit(limit)
    .execute();
}

/** Late successes due a refund, whose lease lapsed. */
export async function findLateSuccessesToRefund(db: Db, leaseCutoff: Date, limit: number): Promise<AttemptLeaseRead[]> {
  return db
    .selectFrom('payment_attempts')
    .select(['id', 'checked_at'])
    .where('refund_status', '=', 'due')
    .where(leaseLapsed(leaseCutoff))
    .limit(limit)
    .execute();
}

/** The rail of the success that paid the payment (not a late one), on whichever rail: none for the sandbox. */
export async function findPaidAttemptRail(
  db: Db,
  paymentId: string,
): Promise<Pick<PaymentAttemptRow, 'rail'> | undefined> {
  return db
    .selectFrom('payment_attempts')
    .select('rail')
    .where('payment_id', '=', paymentId)
    .where('outcome', '=', 'succeeded')
    .where('late', '=', false)
    .executeTakeFirst();
}

/** The payment's attempt `id` on this rail under a row lock (FOR UPDATE): its outcome is recorded once. */
export async function lockRailAttempt(
  db: Db,
  paymentId: string,
  attemptId: string,
  rail: PaymentAttemptRow['rail'],
): Promise<PaymentAttemptRow | undefined> {
  return db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('id', '=', attemptId)
    .where('payment_id', '=', paymentId)
    .where('rail', '=', rail)
    .forUpdate()
    .executeTakeFirst();
}
