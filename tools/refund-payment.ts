import { z } from 'zod';
import { AppError } from '../src/core/errors.ts';
import { defineTool, type ToolContext } from '../src/core/tool.ts';
import type { PaymentRow } from '../src/db/database.ts';
import { insertEvent } from '../src/db/repositories/events.ts';
import { findPaidAttemptRail } from '../src/db/repositories/payment-attempts.ts';
import { findPayment, lockScopedPayment } from '../src/db/repositories/payments.ts';
import { transitionPayment } from '../src/db/money-writes/payments.ts';
import { newId } from '../src/domain/ids.ts';
import { formatDisplay, parseMajorAmount } from '../src/domain/money.ts';
import { postLedger } from '../src/db/money-writes/ledger.ts';
import { currencyOf, presentPayment } from '../src/domain/present-payment.ts';
import { moneyError } from '../src/ledger/ledger.ts';
import { presentRefund, refundOutput, refundPosting, refundShares } from '../src/refunds/refunds.ts';
import { optionalText, paymentId, tooManyDecimalsForAnyCurrency, writtenAmount } from './schemas.ts';
import { insertRefund } from '../src/db/money-writes/refunds.ts';
import { sumStandingRefunds } from '../src/db/repositories/refunds.ts';

const input = z.strictObject({
  payment_id: paymentId,
  amount: writtenAmount(
    'amount',
    z
      .number({ error: 'amount must be a number' })
      .positive('amount must be positive')
      .max(1_000_000_000, 'amount must be at most 1,000,000,000'),
    tooManyDecimalsForAnyCurrency('amount'),
  )
    .optional()
    .describe("Amount to refund in the payment's currency (major units). Omit to refund everything not yet refunded."),
  reason: optionalText('reason', 300).describe('Why, kept with the refund (at most 300 characters).'),
});

/** The refund amount in the payment's minor units, checked against what remains refundable. */
function refundAmount(payment: PaymentRow, requested: number | undefined): bigint {
  const currency = currencyOf(payment);
  const remaining = payment.amount_minor - payment.refunded_minor;
  if (remaining <= 0n)
    throw new AppError('conflict', `Payment ${payment.id} is already fully refunded.`, { param: 'payment_id' });
  if (requested === undefined) return remaining;
  const parsed = parseMajorAmount(requested, currency);
  if (!parsed.ok) {
    throw new AppError(
      'invalid_request',
      `amount must have at most ${currency.exponent} decimal places for ${currency.code}.`,
      {
        param: 'amount',
      },
    );
  }
  if (parsed.minor > remaining) {
    throw new AppError(
      'invalid_request',
      `amount must be at most ${formatDisplay(remaining, currency)}, what remains refundable on ${payment.id}.`,
      { param: 'amount' },
    );
  }
  return parsed.minor;
}

async function loadRefundable(ctx: ToolContext, id: string, lock: boolean): Promise<PaymentRow> {
  const payment = lock ? await lockScopedPayment(ctx.db, ctx.actor, id) : await findPayment(ctx.db, ctx.actor, id);
  if (!payment) throw new AppError('not_found', `No such payment: '${id}'.`, { param: 'payment_id' });
  if (payment.status === 'paid' || payment.status === 'settling') {
    throw new AppError('conflict', `Payment ${id} is not settled yet; it can be refunded once it is settled.`, {
      param: 'payment_id',
    });
  }
  if (payment.status !== 'settled' && payment.status !== 'partially_refunded' && payment.status !== 'refunded') {
    throw new AppError('conflict', `Payment ${id} is ${payment.status}: only a settled payment can be refunded.`, {
      param: 'payment_id',
    });
  }
  return payment;
}

/**
 * The rail that pays a refund back: the one the payer paid on (docs/rails.md, "Refunds"). Paystack
 * refunds through its Refund API; M-Pesa offers plainpay no API to send money back to a phone, so
 * such a refund is refused here rather than recorded without the payer ever getting it.
 */
async function refundRail(ctx: ToolContext, payment: PaymentRow): Promise<'sandbox' | 'paystack'> {
  const paid = await findPaidAttemptRail(ctx.db, payment.id);
  const rail = paid?.rail ?? 'sandbox';
  if (rail === 'mpesa') {
    throw new AppError(
      'invalid_request',
      `Payment ${payment.id} was paid with M-Pesa, which plainpay cannot refund: reverse it in the M-Pesa business portal with its receipt number (on the payment's dashboard page).`,
      { param: 'payment_id' },
    );
  }
  return rail === 'paystack' ? 'paystack' : 'sandbox';
}

export const refundPayment = defineTool({
  name: 'refund_payment',
  title: 'Refund a payment',
  description:
    "Refunds a settled payment to the payer in local currency through the payment's rail, in full or in part (at most what was paid minus earlier refunds). The merchant's balance gives back its share of the settlement at the payment's locked rate. Subject to the account policy.",
  input,
  output: refundOutput,
  effect: 'money',
  scope: 'refunds:write',
  http: { method: 'POST', path: '/v1/payments/:payment_id/refunds' },
  async policy(value, ctx) {
    const payment = await loadRefundable(ctx, value.payment_id, false);
    await refundRail(ctx, payment);
    const amount = refundAmount(payment, value.amount);
    const shares = refundShares(payment, payment.refunded_minor, amount, await sumStandingRefunds(ctx.db, payment.id));
    return {
      amountSettlementMinor: shares.merchantDebit + shares.feeReturn,
      recipients: [],
      summary: `Refund ${formatDisplay(amount, currencyOf(payment))} of ${payment.id} to the payer`,
    };
  },
  async handler(value, ctx) {
    const { db, actor, now, config } = ctx;
    const payment = await loadRefundable(ctx, value.payment_id, true);
    const rail = await refundRail(ctx, payment);
    const amount = refundAmount(payment, value.amount);
    const shares = refundShares(payment, payment.refunded_minor, amount, await sumStandingRefunds(ctx.db, payment.id));
    const id = newId('rf');
    try {
      await postLedger(db, refundPosting(payment, id, amount, shares, now));
    } catch (error) {
      throw moneyError(error, 'payment_id');
    }
    const refund = await insertRefund(db, {
      id,
      account_id: actor.accountId,
      livemode: actor.livemode,
      payment_id: payment.id,
      amount_minor: amount,
      currency: payment.currency,
      merchant_debit_minor: shares.merchantDebit,
      fee_return_minor: shares.feeReturn,
      reason: value.reason ?? null,
      // The sandbox refunds at once; Paystack is asked after this commits (src/payments/rails/refunds.ts).
      rail,
      status: rail === 'sandbox' ? 'succeeded' : 'pending',
      completed_at: rail === 'sandbox' ? now : null,
      channel: actor.channel,
      created_at: now,
    });
    const refundedAfter = payment.refunded_minor + amount;
    const updated = await transitionPayment(
      db,
      payment.id,
      payment.status,
      refundedAfter === payment.amount_minor ? 'refunded' : 'partially_refunded',
      { refunded_minor: refundedAfter },
      now,
    );
    if (!updated) throw new AppError('conflict', `Payment ${payment.id} changed while refunding; retry.`);
    const view = presentPayment(config, updated);
    const output = presentRefund(refund, updated);
    await insertEvent(db, {
      accountId: updated.account_id,
      livemode: updated.livemode,
      type: 'payment.refunded',
      objectId: updated.id,
      data: { reference: view.reference, metadata: view.metadata, refund: output, object: view },
      webhookUrl: updated.webhook_url,
      createdAt: now,
    });
    return output;
  },
});
