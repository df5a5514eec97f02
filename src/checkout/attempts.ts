import { type Db, OPEN_ATTEMPT_OUTCOMES, type PaymentAttemptsTable } from '../db/database.ts';
import type { Selectable } from 'kysely';

export type PaymentAttemptRow = Selectable<PaymentAttemptsTable>;

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

/** The account's display name, shown when the payment has no merchant_name of its own. */
export async function findAccountName(db: Db, accountId: string): Promise<string | undefined> {
  const row = await db.selectFrom('accounts').select('name').where('id', '=', accountId).executeTakeFirst();
  return row?.name;
}
