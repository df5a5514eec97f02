import { AppError } from '../../src/core/errors.ts';
import type { Actor } from '../../src/core/tool.ts';
import type { Db, PaymentRow } from '../../src/db/database.ts';
import { lockScopedPayment } from '../../src/db/repositories/payments.ts';
import type { PaymentStatus } from '../../src/domain/payment-status.ts';

/**
 * The payment under a row lock, as the system actor's account and mode see it. FOR UPDATE: a
 * concurrent attempt or outcome on the same payment waits, then sees what the first one did.
 */
export async function lockOwnedPayment(db: Db, actor: Actor, id: string): Promise<PaymentRow> {
  const row = await lockScopedPayment(db, actor, id);
  if (!row) throw new AppError('not_found', `No payment with id '${id}'.`, { param: 'payment_id' });
  return row;
}

/** Why a payer cannot pay now, in words for the payer's page and the test helper's caller. */
export function notPayable(status: PaymentStatus | 'changed'): AppError {
  const why: Record<string, string> = {
    expired: 'This checkout session has expired.',
    paid: 'This payment has already been paid.',
    settling: 'This payment has already been paid.',
    settled: 'This payment has already been paid and settled.',
    refunded: 'This payment has been refunded.',
    partially_refunded: 'This payment has been paid.',
    processing: 'A payment attempt is already in progress.',
    changed: 'The payment changed while paying; reload it.',
  };
  return new AppError('conflict', why[status] ?? `The payment cannot be paid in status ${status}.`);
}
