import { z } from 'zod';
import type { RefundRow } from '../db/tables/money.ts';
import type { PaymentRow } from '../db/database.ts';
import { minorToNumber, SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { credit, debit, type LedgerPosting, ledgerAccount } from '../ledger/ledger.ts';
import { currencyOf } from '../domain/present-payment.ts';

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
    provider_status: z
      .string()
      .nullable()
      .describe(
        "Where the rail's provider says the refund stands (Paystack: pending, processing, needs-attention, processed, failed); null before the provider has it, and on the sandbox.",
      ),
    action_required: z
      .string()
      .nullable()
      .describe(
        "What must be done for a refund the provider will not pay by itself (Paystack's needs-attention: it needs the payer's bank account), and how; null otherwise.",
      ),
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
    provider_status: row.provider_status,
    action_required: refundActionRequired(row),
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

/**
 * What finance must do about a pending refund the provider will not pay by itself, in words; null
 * when there is nothing to do. Paystack's needs-attention: it cannot send the refund back to the
 * payment instrument, and pays it once retried with the payer's bank account (Retry Refund,
 * https://paystack.com/docs/api/refund/#retry). The integration is the operator's, so the operator
 * retries it with the details the merchant collects.
 */
export function refundActionRequired(
  row: Pick<RefundRow, 'status' | 'rail' | 'provider_status' | 'provider_reference'>,
): string | null {
  if (row.status !== 'pending' || row.rail !== 'paystack' || row.provider_status !== 'needs-attention') return null;
  return `Paystack cannot send this refund back to the payer's card or account: it needs the payer's bank account. Ask the payer for their account number and bank, and give them to the operator of this plainpay instance with Paystack refund ${row.provider_reference}. The operator retries it on Paystack with those details (POST /refund/retry_with_customer_details/${row.provider_reference}, refund_account_details: currency, account_number, bank_id). Until Paystack pays it the refund stays pending and its amount stays taken from the balance.`;
}
