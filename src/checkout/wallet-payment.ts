// "Pay with USDC" on the hosted page: the page's script has the payer's browser wallet sign one
// EIP-3009 TransferWithAuthorization and submits it as a form of the page (POST /pay/:id, rail=usdc,
// checked as every form of the page is). The authorization becomes the x402 payload an agent would
// send, and is paid the same way (usdc-pay.ts). As for the other rails, the answer is the page
// again: the attempt it made, or the page with the refusal in plain words (the x402 reason stays on
// the log line and in the record, for support).

import type { ChainConnection } from '../chain/chain.ts';
import { AppError } from '../core/errors.ts';
import type { ToolEnvironment } from '../core/tool.ts';
import type { PaymentRow } from '../db/database.ts';
import { findX402AuthorizationAttemptId } from '../db/repositories/x402-authorizations.ts';
import { formatAmount, SETTLEMENT_CURRENCY } from '../domain/money.ts';
import { checkoutUrl } from '../domain/present-payment.ts';
import { X402_REASONS, X402_VERSION, type X402Reason } from '../x402/messages.ts';
import { paySessionByAuthorization } from './usdc-pay.ts';
import { sessionRequirements } from './usdc-session.ts';

/** The form's fields: the authorization as the wallet signed it, and the signature. */
const FIELDS = ['from', 'to', 'value', 'valid_after', 'valid_before', 'nonce', 'signature'] as const;

const NOTHING_TAKEN = 'Nothing was taken from your wallet.';

/** What the payer is told when their authorization is refused, by the x402 reason. */
function refusalWords(reason: X402Reason, usdc: string): string {
  switch (reason) {
    case X402_REASONS.insufficientFunds:
      return `Your wallet does not hold enough USDC: this payment needs ${usdc}. ${NOTHING_TAKEN}`;
    case X402_REASONS.validBefore:
    case X402_REASONS.validAfter:
      return `The approval in your wallet expired before it could be used (or your phone's clock is off). ${NOTHING_TAKEN} Please try again.`;
    case X402_REASONS.nonceUsed:
      return `This approval was already used. ${NOTHING_TAKEN} Please try again.`;
    case X402_REASONS.signature:
    case X402_REASONS.recipientMismatch:
    case X402_REASONS.value:
    case X402_REASONS.requirements:
    case X402_REASONS.network:
      return `Your wallet approved a different payment than this checkout asks for. ${NOTHING_TAKEN} Please try again.`;
    default:
      return `The payment could not be completed. ${NOTHING_TAKEN} Please try again.`;
  }
}

/** The x402 PaymentPayload the page's form stands for, or a 400 naming the missing field. */
function payloadOfForm(form: URLSearchParams, accepted: unknown, resourceUrl: string): unknown {
  const value = (field: (typeof FIELDS)[number]): string => {
    const v = form.get(field);
    if (v === null || v === '') {
      throw new AppError('invalid_request', `The field '${field}' is required.`, { param: field });
    }
    return v;
  };
  return {
    x402Version: X402_VERSION,
    resource: { url: resourceUrl },
    accepted,
    payload: {
      signature: value('signature'),
      authorization: {
        from: value('from'),
        to: value('to'),
        value: value('value'),
        validAfter: value('valid_after'),
        validBefore: value('valid_before'),
        nonce: value('nonce'),
      },
    },
  };
}

/**
 * What the page does after the post: show the attempt the authorization made (paid, or still
 * confirming), show the session as it now is (paid, expired, in progress: nothing was taken), or
 * show the page again with why the payment was refused.
 */
export type WalletPaymentAnswer =
  | { show: 'attempt'; attemptId: string }
  | { show: 'session' }
  | { show: 'refusal'; message: string; reason: X402Reason };

export async function payFromWallet(
  deps: ToolEnvironment,
  conn: ChainConnection,
  row: PaymentRow,
  form: URLSearchParams,
): Promise<WalletPaymentAnswer> {
  const requirements = await sessionRequirements(conn, row);
  const payload = payloadOfForm(form, requirements, checkoutUrl(deps.config, row.id));
  const { payment } = await paySessionByAuthorization(deps, conn, row, payload);
  switch (payment.kind) {
    case 'settled':
    case 'pending': {
      const attemptId = await findX402AuthorizationAttemptId(
        deps.db,
        row.id,
        (form.get('from') ?? '').toLowerCase(),
        (form.get('nonce') ?? '').toLowerCase(),
      );
      return attemptId ? { show: 'attempt', attemptId } : { show: 'session' };
    }
    case 'refused': {
      const usdc = formatAmount(row.gross_settlement_minor, SETTLEMENT_CURRENCY);
      return { show: 'refusal', reason: payment.reason, message: refusalWords(payment.reason, usdc) };
    }
    case 'not_payable':
      return { show: 'session' };
  }
}
