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
