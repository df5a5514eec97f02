// Paying a checkout session with an EIP-3009 authorization, for both USDC payers: an agent's x402
// PAYMENT-SIGNATURE on GET /pay/:id and the page's wallet signature (POST /pay/:id, rail=usdc). The
// authorization is checked against the session's own requirements, never the client's, and the
// money moves only through settleAuthorization (src/x402/settle.ts), which verifies and records it
// before submitting and pays the session's payment through the system tools.

import type { ChainConnection } from '../chain/chain.ts';
import type { ToolEnvironment } from '../core/tool.ts';
import type { PaymentRow } from '../db/database.ts';
import { type PaymentRequirements, paymentPayload, X402_REASONS, type X402Reason } from '../x402/messages.ts';
import { settleAuthorization } from '../x402/settle.ts';
import { sessionRequirements, type UsdcStanding, usdcStanding } from './usdc-session.ts';

/**
 * How long a payer's request waits for the transfer to be confirmed before it answers "still
 * confirming" (the page and the agent then follow the status; a retry of the same authorization
 * answers its result, never pays twice).
 */
const SETTLE_WAIT_MS = 30_000;

export type SessionPayment =
  | { kind: 'settled'; transaction: string; network: string; payer: string }
  | { kind: 'pending'; payer: string }
  /** Refused with the specification's reason; nothing moved. */
  | { kind: 'refused'; reason: X402Reason; message: string; payer?: string }
  /** The session cannot take a payment (paid, expired, in progress, the wrong network's mode); nothing moved. */
  | { kind: 'not_payable'; standing: Exclude<UsdcStanding, 'payable'> };

/**
 * Pays `row` with `payload` (an x402 PaymentPayload, as the client sent it) through
 * settleAuthorization, whatever the session's state: that answers a request it has seen before from
 * its record (an agent's retry after a lost answer learns its payment's outcome, and pays nothing
 * more), verifies anything else, and records it only for a payable session, under the payment's
 * row lock. A refusal of a session that is not payable is reported as the session's state, the
 * reason the payer can act on.
 *
 * Throws when the outcome is unknown (settleAuthorization failed): the caller says so, never "not paid".
 */
export async function paySessionByAuthorization(
  deps: ToolEnvironment,
  conn: ChainConnection,
  row: PaymentRow,
  payload: unknown,
): Promise<{ requirements: PaymentRequirements; payment: SessionPayment }> {
  const requirements = await sessionRequirements(conn, row);
  const parsed = paymentPayload.safeParse(payload);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const message = `paymentPayload.${issue?.path.map(String).join('.') ?? ''}: ${issue?.message ?? 'invalid'}`;
    return { requirements, payment: { kind: 'refused', reason: X402_REASONS.payload, message } };
  }
  const outcome = await settleAuthorization(
    deps,
    { accountId: row.account_id, livemode: row.livemode, paymentId: row.id, payload: parsed.data, requirements },
    { waitMs: SETTLE_WAIT_MS },
  );
  switch (outcome.status) {
    case 'settled': {
      const { transaction, network, payer } = outcome;
      return { requirements, payment: { kind: 'settled', transaction, network, payer } };
    }
    case 'pending':
      return { requirements, payment: { kind: 'pending', payer: outcome.payer } };
    case 'refused': {
      const standing = usdcStanding(row, conn, deps.clock.now());
      if (standing !== 'payable') return { requirements, payment: { kind: 'not_payable', standing } };
      const { reason, message, payer } = outcome;
      return { requirements, payment: { kind: 'refused', reason, message, ...(payer ? { payer } : {}) } };
    }
  }
}
