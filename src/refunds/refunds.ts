import { z } from 'zod';
import type { RefundRow } from '../db/tables/money.ts';
import type { PaymentRow } from '../db/database.ts';
import { minorToNumber, SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { credit, debit, type LedgerPosting, ledgerAccount } from '../ledger/ledger.ts';
import { currencyOf } from '../payments/present.ts';

/**
 * A refund reverses its share of the payment at the payment's locked quote: refunding a fraction
 * f of the local amount takes f of what the merchant was credited (settlement) from its balance
 * and returns f of the service's fee, so the payer's local amount is covered exactly by the
 * gross USDC the payment brought in. Shares are cumulative and rounded down, so refunds that add
 * up to the whole payment take exactly what the payment credited: never a unit more or less.
 */
export function refundShares(
  payment: Pick<PaymentRow, 'amount_minor' | 'settlement_minor' | 'fee_minor'>,
  refundedBefore: bigint,
  refundMinor: bigint,
  /**
   * What the payment's standing refunds took so far. Cumulative shares are taken from it, not
   * recomputed from refundedBefore, because a failed rail refund is undone with exactly what it took
   * (record_refund_outcome): the totals then still never pass what the payment credited.
   */
  taken?: { merchantDebit: bigint; feeReturn: bigint },
): { merchantDebit: bigint; feeReturn: bigint } {
  const after = refundedBefore + refundMinor;
  const share = (total: bigint, refunded: bigint): bigint => (total * refunded) / payment.amount_minor;
  const before = taken ?? {
    merchantDebit: share(payment.settlement_minor, refundedBefore),
    feeReturn: share(payment.fee_minor, refundedBefore),
  };
  const positive = (n: bigint): bigint => (n > 0n ? n : 0n);
  return {
    merchantDebit: positive(share(payment.settlement_minor, after) - before.merchantDebit),
    feeReturn: positive(share(payment.fee_minor, after) - before.feeReturn),
  };
}

export function refundPosting(
  payment: PaymentRow,
  refundId: string,
  refundMinor: bigint,
  shares: { merchantDebit: bigint; feeReturn: bigint },
  at: Date,
): LedgerPosting {
  const mode = payment.livemode;
  const asset = payment.settlement_asset;
  return {
    kind: 'refund',
    reference: refundId,
    at,
    entries: [
      debit(ledgerAccount.merchant(payment.account_id, mode, asset), shares.merchantDebit),
      debit(ledgerAccount.fees(mode, asset), shares.feeReturn),
      credit(ledgerAccount.fx(mode, asset), shares.merchantDebit + shares.feeReturn),
      debit(ledgerAccount.fx(mode, payment.currency), refundMinor),
      credit(ledgerAccount.railClearing(mode, payment.currency), refundMinor),
    ],
  };
}

export const REFUND_STATUSES = ['pending', 'succeeded', 'failed'] as const;

export const refundOutput = z
  .object({
    id: z.string().describe('Refund id (rf_…).'),
    object: z.literal('refund'),
    livemode: z.boolean(),
    payment_id: z.string(),
    status: z
      .enum(REFUND_STATUSES)
      .describe(
        'succeeded: the payer has it (the sandbox refunds at once). pending: Paystack is paying it back. failed: Paystack refused; the refund was undone (failure_reason says why).',
      ),
    rail: z.string().describe('The rail the payment was paid on, which pays the refund: sandbox or paystack.'),
    failure_reason: z.string().nullable(),
    amount: z.number().describe("Refunded to the payer, in the payment's currency."),
    currency: z.string(),
    reason: z.string().nullable(),
    balance_debit: z
      .object({ asset: z.string(), amount: z.number() })
      .describe('Taken from the custodial balance: this share of what the payment credited.'),
    fee_returned: z
      .object({ asset: z.string(), amount: z.number() })
      .describe("The service's fee for this share, returned."),
    payment_status: z.string().describe('The payment after this refund: partially_refunded or refunded.'),
    payment_amount_refunded: z.number().describe('All refunds of the payment so far.'),
    created: z.string(),
  })
  .describe("A refund of a settled payment to the payer, in local currency, through the payment's rail.");

export function presentRefund(row: RefundRow, payment: PaymentRow): z.output<typeof refundOutput> {
  const currency = currencyOf(payment);
  return {
    id: row.id,
    object: 'refund',
    livemode: row.livemode,
    payment_id: row.payment_id,
    status: row.status,
    rail: row.rail,
    failure_reason: row.failure_reason,
    amount: minorToNumber(row.amount_minor, currency),
    currency: row.currency,
    reason: row.reason,
    balance_debit: {
      asset: SETTLEMENT_CURRENCY.code,
      amount: minorToNumber(row.merchant_debit_minor, SETTLEMENT_CURRENCY),
    },
    fee_returned: { asset: SETTLEMENT_CURRENCY.code, amount: minorToNumber(row.fee_return_minor, SETTLEMENT_CURRENCY) },
    payment_status: payment.status,
    payment_amount_refunded: minorToNumber(payment.refunded_minor, currency),
    created: row.created_at.toISOString(),
  };
}
