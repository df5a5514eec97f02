// plainpay as an x402 v2 facilitator for a merchant's own resources: the merchant's middleware
// (@x402/express, @x402/hono, ...) is pointed at {base_url}/x402 and sends its API key as the bearer
// (HTTPFacilitatorClient's createAuthHeaders). The interface is the specification's (x402 v2, 7.1
// /verify, 7.2 /settle, 7.3 /supported); a refused payment is a 200 with isValid (success) false
// and the spec's reason, as the reference facilitator answers, so the middleware tells the payer
// why. plainpay's own errors (no key, a body that is not JSON) keep plainpay's error object.

import type { FastifyPluginAsync } from 'fastify';
import type { ApiOperation } from '../http/openapi.ts';
import { requestAuth } from '../http/plugins/auth.ts';
import type { ToolEnvironment } from '../core/tool.ts';
import {
  caip2,
  facilitatorRequest,
  paymentPayload,
  paymentRequirements,
  type SettleResponse,
  settleResponse,
  type SupportedResponse,
  supportedResponse,
  type VerifyResponse,
  verifyResponse,
  X402_REASONS,
  X402_VERSION,
} from './messages.ts';
import { settleAuthorization } from './settle.ts';
import type { ExactVerification } from './verify-exact.ts';
import { x402Target } from './verify-exact.ts';
import { modeRefusal, verifyForMode } from './verify-for-mode.ts';

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
  {
    method: 'POST',
    path: '/x402/settle',
    operationId: 'x402_settle',
    summary: 'x402: settle a payment',
    description:
      "The x402 v2 facilitator's POST /settle: verifies the payment again, records the authorization, submits it (plainpay pays the gas) and answers once the transfer is confirmed, as a payment of the merchant credited to its balance (payment.settled follows). The same request again answers the first result; the same authorization offered for anything else is refused. A refusal is a 200 with success false and the specification's reason; a transfer still in flight when the wait ends answers success false with unexpected_settle_error: settle the same payload again to learn its outcome.",
    tag: 'x402',
    scope: 'payments:write',
    body: facilitatorRequest,
    response: settleResponse,
  },
];

export function x402Routes(deps: ToolEnvironment): FastifyPluginAsync {
  return async (app) => {
    app.get(
      '/x402/supported',
      { config: { auth: { scope: 'payments:read' } } },
      async (request): Promise<SupportedResponse> => {
        const conn = await deps.chain();
        const target = await x402Target(conn);
        // As verify answers: a key whose mode this network's money cannot serve is offered no kind.
        const servable = modeRefusal(requestAuth(request).livemode, conn) === undefined;
        return {
          kinds: !servable
            ? []
            : [
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
        const verified = await verifyForMode(deps, auth.livemode, request.body);
        return verifyAnswer(verified);
      },
    );

    app.post(
      '/x402/settle',
      { config: { auth: { scope: 'payments:write' } } },
      async (request): Promise<SettleResponse> => {
        const auth = requestAuth(request);
        const network = caip2((await deps.chain()).chainId);
        const body = facilitatorRequest.safeParse(request.body ?? {});
        const payload = paymentPayload.safeParse(body.success ? body.data.paymentPayload : undefined);
        const requirements = paymentRequirements.safeParse(body.success ? body.data.paymentRequirements : undefined);
        if (!requirements.success || !payload.success) {
          // verifyForMode names the first problem with the spec's reason.
          const verified = await verifyForMode(deps, auth.livemode, request.body);
          const refusal = verified.ok ? { reason: X402_REASONS.payload, message: 'malformed' } : verified;
          return {
            success: false,
            errorReason: refusal.reason,
            errorMessage: refusal.message,
            transaction: '',
            network,
          };
        }
        const outcome = await settleAuthorization(deps, {
          accountId: auth.accountId,
          livemode: auth.livemode,
          payload: payload.data,
          requirements: requirements.data,
        });
        switch (outcome.status) {
          case 'settled':
            return { success: true, payer: outcome.payer, transaction: outcome.transaction, network: outcome.network };
          case 'refused':
            return {
              success: false,
              errorReason: outcome.reason,
              errorMessage: outcome.message,
              ...(outcome.payer ? { payer: outcome.payer } : {}),
              transaction: '',
              network,
            };
          case 'pending':
            return {
              success: false,
              errorReason: X402_REASONS.unexpectedSettle,
              errorMessage: `the transfer of payment ${outcome.paymentId} is still in flight (unknown, not failed): settle the same payload again to learn its outcome`,
              payer: outcome.payer,
              transaction: '',
              network,
            };
        }
      },
    );
  };
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
