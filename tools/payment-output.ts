import { z } from 'zod';
import { PAYMENT_STATUSES } from '../src/domain/payment-status.ts';
import { SETTLEMENT_SCHEDULES } from '../src/domain/settlement-windows.ts';

/** The payment record as tools and GET /v1/payments/:id return it (see src/domain/present-payment.ts). */
export const paymentOutput = z
  .object({
    id: z.string().describe('Payment id (pay_…), unguessable.'),
    object: z.literal('payment'),
    livemode: z.boolean().describe('True for a live-mode payment, false for test mode.'),
    status: z
      .enum(PAYMENT_STATUSES)
      .describe('pending → paid → settling → settled; or expired; refunds make it partially_refunded / refunded.'),
    amount: z.number().describe('Amount in major units of currency, as created.'),
    currency: z.string().describe('Currency code, upper-case.'),
    amount_refunded: z.number().describe('Amount refunded so far, in major units of currency.'),
    checkout_url: z.string().describe('Hosted checkout page to send the payer to.'),
    redirect_url: z.string().describe('Where the payer is sent when finished.'),
    reference: z.string().nullable().describe("The caller's own id, unique per account and mode."),
    merchant_name: z.string().nullable().describe('Shown on the checkout page.'),
    description: z.string().nullable().describe('What is paid for.'),
    webhook_url: z.string().nullable().describe("URL that receives this payment's events."),
    payout_address: z.string().nullable().describe('EVM address this payment settles to, if given.'),
    metadata: z.record(z.string(), z.unknown()).nullable().describe('As given at creation, unchanged.'),
    quote: z
      .object({
        source: z.string().describe("Where the rate came from: 'sandbox' (fixed illustrative rates) or 'file'."),
        rate: z.string().describe('Units of currency per 1 unit of the settlement asset, as a decimal string.'),
        fee_bps: z.number().describe('Service fee in basis points of the gross settlement amount.'),
        settlement_asset: z.string().describe('The stablecoin the merchant is settled in.'),
        gross_settlement_amount: z.number().describe('amount converted at rate, rounded down.'),
        fee_amount: z.number().describe('The fee, rounded up.'),
        settlement_amount: z.number().describe('What the merchant receives: gross minus fee.'),
        expires_at: z.string().describe('The quote is locked until the session expires (ISO 8601).'),
        valid_until: z.string().describe('Deprecated: expires_at. Removed in the next release.'),
      })
      .describe('The FX quote locked at creation.'),
    settlement: z
      .object({
        asset: z.string(),
        amount: z.number(),
        destination: z
          .enum(['address', 'balance'])
          .nullable()
          .describe('Paid on-chain to an address, or credited to the custodial balance.'),
        address: z.string().nullable(),
        chain_id: z.number().nullable(),
        tx_hash: z.string().nullable(),
        gas_used: z.number().nullable().describe("Gas the service paid for this payment's share of the batch."),
        gas_cost_wei: z.string().nullable(),
        settled_at: z.string().nullable(),
      })
      .nullable()
      .describe('Filled once the payment has settled.'),
    settlement_schedule: z
      .enum(SETTLEMENT_SCHEDULES)
      .describe(
        "When its on-chain transfer goes out: instant, hourly, daily or threshold (given at creation, else the account's then).",
      ),
    settlement_due_at: z
      .string()
      .nullable()
      .describe(
        'When the settlement is due (ISO 8601), from the moment it is paid: at once for instant, the end of its window for hourly and daily; for threshold the latest moment (the next UTC midnight) until the threshold is reached. null while unpaid.',
      ),
    created: z.string().describe('Creation time (ISO 8601).'),
    expires_at: z.string().describe('When the session expires if unpaid (ISO 8601).'),
    paid_at: z.string().nullable(),
    settled_at: z.string().nullable(),
    expired_at: z.string().nullable(),
  })
  .describe('A payment (hosted checkout session).');
