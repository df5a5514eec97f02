import { AppError } from '../core/errors.ts';
import type { Db, PaymentRow } from '../db/database.ts';
import { insertEvent } from '../db/repositories/events.ts';
import { transitionPayment } from '../db/repositories/payments.ts';
import { newId } from '../domain/ids.ts';
import type { PaymentStatus } from '../domain/payment-status.ts';
import type { Config } from '../config/config.ts';
import { presentPayment } from './present.ts';

export type SandboxOutcome = 'succeeded' | 'declined';

/**
 * The sandbox payer rail: the payer's "pay" on a test-mode checkout, and the test helper,
 * both land here. A success moves pending → paid and announces payment.paid; a decline is
 * recorded as a failed attempt and leaves the payment pending so the payer can retry.
 * A real local-currency rail would call the same function from its confirmation webhook.
 */
export async function recordSandboxPayment(
  db: Db,
  config: Config,
  paymentId: string,
  outcome: SandboxOutcome,
  now: Date,
): Promise<{ payment: PaymentRow; attemptId: string }> {
  const payment = await lockPayment(db, paymentId);
  if (!payment) throw new AppError('not_found', `No payment with id '${paymentId}'.`, { param: 'id' });
  if (payment.livemode) {
    throw new AppError('not_found', `No test-mode payment with id '${paymentId}'.`, { param: 'id' });
  }
  if (payment.status !== 'pending') throw notPayable(payment.status);
  if (payment.expires_at <= now) throw notPayable('expired');

  const attemptId = newId('att');
  await db
    .insertInto('payment_attempts')
    .values({
      id: attemptId,
      payment_id: payment.id,
      rail: 'sandbox',
      outcome,
      failure_reason: outcome === 'declined' ? 'sandbox_declined' : null,
      created_at: now,
    })
    .execute();
  if (outcome === 'declined') return { payment, attemptId };

  const paid = await transitionPayment(db, payment.id, 'pending', 'paid', { paid_at: now }, now);
  if (!paid) throw notPayable('changed');
  const view = presentPayment(config, paid);
  await insertEvent(db, {
    accountId: paid.account_id,
    livemode: paid.livemode,
    type: 'payment.paid',
    objectId: paid.id,
    data: { object: view, reference: view.reference, metadata: view.metadata },
    webhookUrl: paid.webhook_url,
    createdAt: now,
  });
  return { payment: paid, attemptId };
}

async function lockPayment(db: Db, id: string): Promise<PaymentRow | undefined> {
  // FOR UPDATE: a concurrent pay of the same session waits and then sees it is no longer pending.
  return db.selectFrom('payments').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

function notPayable(status: PaymentStatus | 'changed'): AppError {
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
