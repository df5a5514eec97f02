// Which keys may move money on which network, for /x402/verify, /x402/settle and /x402/supported:
// a key's mode and the network's money must agree.

import type { ChainConnection } from '../chain/chain.ts';
import { testMoneyMayMoveOn } from '../chain/test-networks.ts';
import type { ToolEnvironment } from '../core/tool.ts';
import { facilitatorRequest, X402_REASONS } from './messages.ts';
import { type ExactVerification, verifyExactPayment } from './verify-exact.ts';

/**
 * Why a key of this mode takes no payments on `conn`, or undefined when it does. A test-mode key
 * is only answered on a test network, and a live key never on one, since test tokens there can be
 * minted by anyone who holds the (often public) deployer key, and a live merchant would ship goods
 * for them.
 */
export function modeRefusal(livemode: boolean, conn: Pick<ChainConnection, 'chainId' | 'mine'>): string | undefined {
  if (!livemode && !testMoneyMayMoveOn(conn)) {
    return `a test-mode key takes payments only on a test network, and chain ${conn.chainId} is not one: use a live key`;
  }
  if (livemode && testMoneyMayMoveOn(conn)) {
    return `a live key takes payments only on a live network, and chain ${conn.chainId} is a test network whose tokens are not money: use a test-mode key`;
  }
  return undefined;
}

/** Verification for a key of this mode (modeRefusal), then of the payment itself. */
export async function verifyForMode(
  deps: Pick<ToolEnvironment, 'chain' | 'clock'>,
  livemode: boolean,
  body: unknown,
): Promise<ExactVerification> {
  const parsed = facilitatorRequest.safeParse(body ?? {});
  if (!parsed.success) {
    return {
      ok: false,
      reason: X402_REASONS.payload,
      message: 'the body must be { paymentPayload, paymentRequirements }',
    };
  }
  const conn = await deps.chain();
  const refusal = modeRefusal(livemode, conn);
  if (refusal) return { ok: false, reason: X402_REASONS.network, message: refusal };
  return await verifyExactPayment(conn, parsed.data, deps.clock.now());
}
