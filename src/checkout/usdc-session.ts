// A checkout session paid in USDC: what it asks for (x402 v2 PaymentRequirements of the `exact`
// scheme) and whether it can be paid so now. One place decides both for the agent's x402 answer on
// GET /pay/:id and for the page's "Pay with USDC" (docs/x402.md, "Checkout sessions paid in USDC").

import type { ChainConnection } from '../chain/chain.ts';
import type { Config } from '../config/config.ts';
import type { PaymentRow } from '../db/database.ts';
import { formatAmount, formatDisplay, SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { checkoutUrl, currencyOf } from '../domain/present-payment.ts';
import { type PaymentRequirements, X402_REASONS, X402_VERSION } from '../x402/messages.ts';
import { x402Target } from '../x402/verify-exact.ts';
import { modeRefusal } from '../x402/verify-for-mode.ts';

/**
 * How long an authorization may take to land, and so how long the @x402 clients make it valid
 * (validBefore = now + this). The reference middleware's default: long enough for a slow chain,
 * short enough that a signature left unused soon means nothing.
 */
const USDC_MAX_TIMEOUT_SECONDS = 300;

/** x402 v2 PaymentRequired (specification 5.1's envelope): what a 402 carries in PAYMENT-REQUIRED. */
export interface PaymentRequired {
  x402Version: typeof X402_VERSION;
  /** Why payment is (still) required: the specification's reason code after a refused payment. */
  error?: string;
  resource: { url: string; description: string; mimeType: string };
  accepts: PaymentRequirements[];
}

/**
 * Where a session stands for a USDC payer:
 * - payable: pending, open, and the chain serves the session's mode;
 * - wrong_network: pending and open, but its money cannot move on this chain (a test-mode session on
 *   a real network, or a live one on a test network, whose tokens anyone can mint);
 * - in_progress: a local-currency attempt is in flight and may still pay it: no second way is offered;
 * - paid: paid, settling, settled or refunded (nothing to pay);
 * - expired: its time ran out (also before the expiry worker has passed).
 */
export type UsdcStanding = 'payable' | 'wrong_network' | 'in_progress' | 'paid' | 'expired';

export function usdcStanding(
  row: PaymentRow,
  conn: Pick<ChainConnection, 'chainId' | 'mine'>,
  now: Date,
): UsdcStanding {
  switch (row.status) {
    case 'pending':
      if (row.expires_at.getTime() <= now.getTime()) return 'expired';
      return modeRefusal(row.livemode, conn) === undefined ? 'payable' : 'wrong_network';
    case 'processing':
      return 'in_progress';
    case 'expired':
      return 'expired';
    case 'paid':
    case 'settling':
    case 'settled':
    case 'refunded':
    case 'partially_refunded':
      return 'paid';
  }
}

/**
 * The session's one requirement: its locked gross amount (the quote fixed at creation, before the
 * fee) in atomic units of the token, paid to plainpay's treasury, which credits the merchant as for
 * any rail. Never what a client proposes: a payment is checked against this.
 */
export async function sessionRequirements(conn: ChainConnection, row: PaymentRow): Promise<PaymentRequirements> {
  const target = await x402Target(conn);
  if (target.decimals !== SETTLEMENT_CURRENCY.exponent) {
    // The quote is in the settlement currency's minor units; another token scale would misprice it.
    throw new Error(`the token has ${target.decimals} decimals; quotes are in ${SETTLEMENT_CURRENCY.exponent}`);
  }
  return {
    scheme: 'exact',
    network: target.network,
    amount: row.gross_settlement_minor.toString(),
    asset: target.asset,
    payTo: target.payTo,
    maxTimeoutSeconds: USDC_MAX_TIMEOUT_SECONDS,
    extra: { name: target.name, version: target.version },
  };
}

/** The PaymentRequired of a session: its requirement, or none with the reason when it cannot be paid so. */
export function sessionPaymentRequired(
  config: Config,
  row: PaymentRow,
  accepts: PaymentRequirements[],
  error: string,
): PaymentRequired {
  const gross = formatAmount(row.gross_settlement_minor, SETTLEMENT_CURRENCY);
  const local = formatDisplay(row.amount_minor, currencyOf(row));
  const to = row.merchant_name ?? 'the merchant';
  return {
    x402Version: X402_VERSION,
    error,
    resource: {
      url: checkoutUrl(config, row.id),
      description: `${gross} for ${local} to ${to}${row.description ? `: ${row.description}` : ''}`.slice(0, 1000),
      mimeType: 'application/json',
    },
    accepts,
  };
}

/** The `error` of a first 402: no payment was sent yet (the specification's example wording). */
export const SIGNATURE_REQUIRED = 'PAYMENT-SIGNATURE header is required';

/** The reason a session in the wrong network's mode names: the specification's code for it. */
export const WRONG_NETWORK_REASON = X402_REASONS.network;
