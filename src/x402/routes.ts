// plainpay as an x402 v2 facilitator for a merchant's own resources: the merchant's middleware
// (@x402/express, @x402/hono, ...) is pointed at {base_url}/x402 and sends its API key as the bearer
// (HTTPFacilitatorClient's createAuthHeaders). The interface is the specification's (x402 v2, 7.1
// /verify, 7.3 /supported); a refused payment is a 200 with isValid false and the spec's reason, as
// the reference facilitator answers, so the middleware tells the payer why. plainpay's own errors
// (no key, a body that is not JSON) keep plainpay's error object.
//
// POST /x402/settle is not served yet: settling moves money, and its path (authorization recorded
// before submission, the relayer, a system tool crediting the merchant) is the next step (docs/x402.md).

import type { FastifyPluginAsync } from 'fastify';
import { testMoneyMayMoveOn } from '../chain/test-networks.ts';
import type { ApiOperation } from '../http/openapi.ts';
import { requestAuth } from '../http/plugins/auth.ts';
import type { Runtime } from '../runtime.ts';
import {
  facilitatorRequest,
  type SupportedResponse,
  supportedResponse,
  type VerifyResponse,
  verifyResponse,
  X402_REASONS,
  X402_VERSION,
} from './messages.ts';
import { type ExactVerification, verifyExactPayment, x402Target } from './verify-exact.ts';

export const x402Operations: ApiOperation[] = [
  {
    method: 'GET',
    path: '/x402/supported',
    operationId: 'x402_supported',
    summary: 'x402: what plainpay verifies and settles',
    description:
      "The x402 v2 facilitator's GET /supported. The kind's extra names what a merchant's payment requirements must carry to be paid through plainpay: the asset (USDC), payTo (plainpay's treasury, which credits the merchant's balance) and the token's EIP-712 name and version.",
    tag: 'x402',
    scope: 'payments:read',
    response: supportedResponse,
  },
  {
    method: 'POST',
    path: '/x402/verify',
    operationId: 'x402_verify',
    summary: 'x402: verify a payment',
    description:
      "The x402 v2 facilitator's POST /verify: checks an exact-scheme EIP-3009 authorization against the payment requirements and the chain (signature, recipient, time window, amount, nonce, balance, a simulated transfer). Moves nothing. A refusal is a 200 with isValid false and the specification's reason.",
    tag: 'x402',
    scope: 'payments:read',
    body: facilitatorRequest,
    response: verifyResponse,
  },
];

export function x402Routes(runtime: Runtime): FastifyPluginAsync {
  return async (app) => {
    app.get(
      '/x402/supported',
      { config: { auth: { scope: 'payments:read' } } },
      async (): Promise<SupportedResponse> => {
        const target = await x402Target(await runtime.chain());
        return {
          kinds: [
            {
              x402Version: X402_VERSION,
              scheme: 'exact',
              network: target.network,
              extra: {
                asset: target.asset,
                payTo: target.payTo,
                name: target.name,
                version: target.version,
                decimals: target.decimals,
              },
            },
          ],
          extensions: [],
          signers: { 'eip155:*': [target.relayer] },
        };
      },
    );

    app.post(
      '/x402/verify',
      { config: { auth: { scope: 'payments:read' } } },
      async (request): Promise<VerifyResponse> => {
        const auth = requestAuth(request);
        const verified = await verifyForMode(runtime, auth.livemode, request.body);
        return verifyAnswer(verified);
      },
    );
  };
}

/**
 * Verification for a key of this mode. A key's mode and the network's money must agree: a test-mode
 * key is only answered on a test network, and a live key never on one, since test tokens there can
 * be minted by anyone who holds the (often public) deployer key, and a live merchant would ship
 * goods for them.
 */
export async function verifyForMode(runtime: Runtime, livemode: boolean, body: unknown): Promise<ExactVerification> {
  const parsed = facilitatorRequest.safeParse(body ?? {});
  if (!parsed.success) {
    return {
      ok: false,
      reason: X402_REASONS.payload,
      message: 'the body must be { paymentPayload, paymentRequirements }',
    };
  }
  const conn = await runtime.chain();
  if (!livemode && !testMoneyMayMoveOn(conn)) {
    return {
      ok: false,
      reason: X402_REASONS.network,
      message: `a test-mode key takes payments only on a test network, and chain ${conn.chainId} is not one: use a live key`,
    };
  }
  if (livemode && testMoneyMayMoveOn(conn)) {
    return {
      ok: false,
      reason: X402_REASONS.network,
      message: `a live key takes payments only on a live network, and chain ${conn.chainId} is a test network whose tokens are not money: use a test-mode key`,
    };
  }
  return await verifyExactPayment(conn, parsed.data, runtime.clock.now());
}

export function verifyAnswer(verified: ExactVerification): VerifyResponse {
  if (verified.ok) return { isValid: true, payer: verified.payer };
  return {
    isValid: false,
    invalidReason: verified.reason,
    invalidMessage: verified.message,
    ...(verified.payer ? { payer: verified.payer } : {}),
  };
}
