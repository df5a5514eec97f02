import type { AttemptOutcome, PaymentRow } from '../db/database.ts';
import type { ProviderRail } from '../db/tables/rails.ts';
import { formatDisplay } from '../domain/money.ts';
import type { PaymentStatus } from '../domain/payment-status.ts';
import { currencyOf } from '../domain/present-payment.ts';
import { returnUrl } from './return-url.ts';

/**
 * What the payer's page shows, derived from the payment row and the time. One place decides the
 * page state so that the HTML page, the JSON status read and the polling script agree.
 *
 * - payable: pending, open, and a rail to pay with: the sandbox (test mode) and the connected provider rails
 * - unavailable: pending, open, live mode, and no provider rail connected that takes this payment
 * - processing: a rail attempt is in flight (the payer is on Paystack's page, or answering M-Pesa's prompt)
 * - confirming: a rail attempt is in flight whose provider answer is unknown (lost, timed out, a 5xx):
 *   the provider may have acted, so the page waits for its answer and offers no second try
 * - received: paid or settling (money received, settlement under way)
 * - settled, refunded: done
 * - expired: expired, or still pending past expires_at (the expiry worker has not run yet)
 */
export type CheckoutState =
  | 'payable'
  | 'unavailable'
  | 'processing'
  | 'confirming'
  | 'received'
  | 'settled'
  | 'refunded'
  | 'expired';

export interface CheckoutView {
  id: string;
  state: CheckoutState;
  /** The status the payer and the merchant are told: `expired` once the ttl has lapsed. */
  status: PaymentStatus;
  livemode: boolean;
  merchantName: string;
  description: string | null;
  amount: string;
  currencyCode: string;
  currencyName: string;
  secondsLeft: number;
  txHash: string | null;
  chainId: number | null;
  /** The merchant's reference for the payment (their order number, say), for the payer's receipt. */
  reference: string | null;
  /** When it was paid, for the receipt; null until it is. */
  paidAt: Date | null;
  /** redirect_url with payment_id and status, once the payer is done here; else undefined. */
  returnUrl: string | undefined;
  /** The provider rails offered on this page (connected for the account and mode, able to take it). */
  rails: readonly ProviderRail[];
  /** The sandbox rail's buttons: test mode only. */
  sandbox: boolean;
}

/**
 * `openAttempt`: the outcome of the attempt in flight on a processing payment (pending, or unknown
 * when the provider's answer was lost).
 */
export function checkoutView(
  row: PaymentRow,
  accountName: string | undefined,
  now: Date,
  rails: readonly ProviderRail[] = [],
  openAttempt?: AttemptOutcome,
): CheckoutView {
  const currency = currencyOf(row);
  const lapsed = row.expires_at.getTime() <= now.getTime();
  const status: PaymentStatus = row.status === 'pending' && lapsed ? 'expired' : row.status;
  const state = stateOf(status, !row.livemode || rails.length > 0, openAttempt === 'unknown');
  const done = state === 'received' || state === 'settled' || state === 'refunded' || state === 'expired';
  return {
    id: row.id,
    state,
    status,
    livemode: row.livemode,
    merchantName: row.merchant_name ?? accountName ?? 'the merchant',
    description: row.description,
    amount: formatDisplay(row.amount_minor, currency),
    currencyCode: currency.code,
    currencyName: currency.name,
    secondsLeft: status === 'pending' ? Math.max(0, Math.floor((row.expires_at.getTime() - now.getTime()) / 1000)) : 0,
    txHash: row.settlement_tx_hash,
    chainId: row.settlement_chain_id,
    reference: row.reference,
    paidAt: row.paid_at,
    returnUrl: done ? returnUrl(row.redirect_url, row.id, status) : undefined,
    rails,
    sandbox: !row.livemode,
  };
}

function stateOf(status: PaymentStatus, canPay: boolean, answerUnknown: boolean): CheckoutState {
  switch (status) {
    case 'pending':
      return canPay ? 'payable' : 'unavailable';
    case 'processing':
      return answerUnknown ? 'confirming' : 'processing';
    case 'paid':
    case 'settling':
      return 'received';
    case 'settled':
      return 'settled';
    case 'refunded':
    case 'partially_refunded':
      return 'refunded';
    case 'expired':
      return 'expired';
  }
}

/** The JSON the polling script reads (GET /pay/:id/status). Nothing about the account. */
export function presentCheckoutStatus(view: CheckoutView) {
  return {
    id: view.id,
    object: 'checkout_status' as const,
    status: view.status,
    state: view.state,
    expires_in_seconds: view.secondsLeft,
    settlement: view.txHash === null ? null : { tx_hash: view.txHash, chain_id: view.chainId },
    return_url: view.returnUrl ?? null,
  };
}

export type CheckoutStatusBody = ReturnType<typeof presentCheckoutStatus>;

/** The page's path on the checkout host (checkoutUrl in present.ts is the absolute form). */
export function payPath(id: string): string {
  return `/pay/${id}`;
}
