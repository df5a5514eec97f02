import type { Db } from '../database.ts';

/** Of these payments, those paid by an x402 authorization confirmed on chain (one statement: keep the list short). */
export async function listPaymentsWithConfirmedAuthorization(
  db: Db,
  paymentIds: readonly string[],
): Promise<{ payment_id: string }[]> {
  return db
    .selectFrom('x402_authorizations')
    .select('payment_id')
    .where('payment_id', 'in', paymentIds)
    .where('status', '=', 'confirmed')
    .execute();
}
