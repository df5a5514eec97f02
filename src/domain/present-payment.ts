import type { Config } from '../config/config.ts';
import type { PaymentRow } from '../db/database.ts';
import { type Currency, getCurrency, minorToNumber, SETTLEMENT_CURRENCY } from './money.ts';
import { paymentSettlementDueAt } from './settlement-windows.ts';

/**
 * The API shapes of a payment. Amounts leave as JSON numbers in major units (the seed's form),
 * converted from bigint minor units through their decimal text.
 */

export function currencyOf(row: Pick<PaymentRow, 'currency'>): Currency {
  const currency = getCurrency(row.currency);
  if (!currency) throw new Error(`payment holds unsupported currency ${row.currency}`);
  return currency;
}

export function checkoutUrl(config: Config, paymentId: string): string {
  return `${config.checkoutBaseUrl}/pay/${paymentId}`;
}

function settlementView(row: PaymentRow) {
  const asset = SETTLEMENT_CURRENCY;
  return {
    asset: row.settlement_asset,
    amount: minorToNumber(row.settlement_minor, asset),
    destination: row.settlement_destination,
    address: row.settlement_address,
    chain_id: row.settlement_chain_id,
    tx_hash: row.settlement_tx_hash,
    gas_used: row.settlement_gas_used === null ? null : Number(row.settlement_gas_used),
    gas_cost_wei: row.settlement_gas_cost_wei,
    settled_at: row.settled_at?.toISOString() ?? null,
  };
}

/** The full record, for the owning account (GET /v1/payments/:id, tool results). */
export function presentPayment(config: Config, row: PaymentRow) {
  const currency = currencyOf(row);
  const asset = SETTLEMENT_CURRENCY;
  return {
    id: row.id,
    object: 'payment' as const,
    livemode: row.livemode,
    status: row.status,
    amount: minorToNumber(row.amount_minor, currency),
    currency: row.currency,
    amount_refunded: minorToNumber(row.refunded_minor, currency),
    checkout_url: checkoutUrl(config, row.id),
    redirect_url: row.redirect_url,
    reference: row.reference,
    merchant_name: row.merchant_name,
    description: row.description,
    webhook_url: row.webhook_url,
    payout_address: row.payout_address,
    metadata: row.metadata as Record<string, unknown> | null,
    quote: {
      source: row.quote_source,
      rate: row.quote_rate,
      fee_bps: row.fee_bps,
      settlement_asset: row.settlement_asset,
      gross_settlement_amount: minorToNumber(row.gross_settlement_minor, asset),
      fee_amount: minorToNumber(row.fee_minor, asset),
      settlement_amount: minorToNumber(row.settlement_minor, asset),
      expires_at: row.expires_at.toISOString(),
      valid_until: row.expires_at.toISOString(),
    },
    settlement: row.settled_at ? settlementView(row) : null,
    settlement_schedule: row.settlement_schedule,
    settlement_due_at: paymentSettlementDueAt(config, row)?.toISOString() ?? null,
    created: row.created_at.toISOString(),
    expires_at: row.expires_at.toISOString(),
    paid_at: row.paid_at?.toISOString() ?? null,
    settled_at: row.settled_at?.toISOString() ?? null,
    expired_at: row.expired_at?.toISOString() ?? null,
  };
}

export type PaymentView = ReturnType<typeof presentPayment>;

/** The columns presentPublicPayment reads, all it may read: GET /checkout/:id selects only these. */
export const PUBLIC_PAYMENT_COLUMNS = [
  'id',
  'livemode',
  'status',
  'amount_minor',
  'currency',
  'merchant_name',
  'description',
  'metadata',
  'redirect_url',
  'expires_at',
  'paid_at',
  'settled_at',
  'settlement_chain_id',
  'settlement_tx_hash',
] as const satisfies ReadonlyArray<keyof PaymentRow>;
export type PublicPaymentColumn = (typeof PUBLIC_PAYMENT_COLUMNS)[number];

/**
 * The public status read (GET /checkout/:id): the payer's view. What the checkout page and a
 * polling merchant need, and nothing from which the merchant's economics can be worked out (no
 * settlement amount, fee, rate or gas: the payer knows the amount they pay, so any of those would
 * give away the rest), nor the account, its keys, its webhook or its payout address. Once settled,
 * the transaction hash: anyone can see it on the chain, and it proves the settlement happened.
 */
export function presentPublicPayment(config: Config, row: Pick<PaymentRow, PublicPaymentColumn>) {
  const currency = currencyOf(row);
  return {
    id: row.id,
    object: 'checkout' as const,
    livemode: row.livemode,
    status: row.status,
    amount: minorToNumber(row.amount_minor, currency),
    currency: row.currency,
    merchant_name: row.merchant_name,
    description: row.description,
    metadata: row.metadata as Record<string, unknown> | null,
    checkout_url: checkoutUrl(config, row.id),
    redirect_url: row.redirect_url,
    expires_at: row.expires_at.toISOString(),
    paid_at: row.paid_at?.toISOString() ?? null,
    settlement: row.settled_at
      ? {
          chain_id: row.settlement_chain_id,
          tx_hash: row.settlement_tx_hash,
          settled_at: row.settled_at.toISOString(),
        }
      : null,
  };
}
