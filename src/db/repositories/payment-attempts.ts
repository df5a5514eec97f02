import type { Selectable } from 'kysely';
import type { Db } from '../database.ts';
import type { PaymentAttemptsTable } from '../database.ts';
import type { RailEventsTable } from '../tables/rails.ts';

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
