// Writes to a payment attempt's money fields (its outcome, a late success's refund), made only in a
// system tool's run. Only tools/ imports this (test/architecture.test.ts). The fields that move no
// money (a lease, a provider's reference) the rails set themselves.

import type { Insertable, Updateable } from 'kysely';
import type { Db, ModeScope, PaymentAttemptsTable } from '../database.ts';

/**
 * A late success's refund, sent to its provider, recorded: `due` → `refunded`, a compare-and-set,
 * so two workers cannot both record (or both ask for) it. Only an attempt of a payment of `scope`.
 * The attempt's own payment and rail when this call recorded it (what its rail event names, read
 * from the row, never from a caller); undefined when it did not.
 */
export async function markLateSuccessRefunded(
  db: Db,
  attemptId: string,
  scope: ModeScope,
): Promise<{ payment_id: string; rail: string } | undefined> {
  return db
    .updateTable('payment_attempts')
    .set({ refund_status: 'refunded' })
    .where('id', '=', attemptId)
    .where('refund_status', '=', 'due')
    .where('payment_id', 'in', (eb) =>
      eb
        .selectFrom('payments')
        .select('id')
        .where('account_id', '=', scope.accountId)
        .where('livemode', '=', scope.livemode),
    )
    .returning(['payment_id', 'rail'])
    .executeTakeFirst();
}

/** A new attempt (start_payment_attempt; the sandbox's, record_payment_attempt). */
export async function insertPaymentAttempt(db: Db, attempt: Insertable<PaymentAttemptsTable>): Promise<void> {
  await db.insertInto('payment_attempts').values(attempt).execute();
}

/** An attempt's outcome and what the provider confirmed with it (record_payment_attempt). */
export async function updatePaymentAttempt(
  db: Db,
  id: string,
  changes: Updateable<PaymentAttemptsTable>,
): Promise<void> {
  await db.updateTable('payment_attempts').set(changes).where('id', '=', id).execute();
}
