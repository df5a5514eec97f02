import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { AppError } from '../../core/errors.ts';
import { parseInput } from '../../core/validation.ts';
import { findPayment } from '../../db/repositories/payments.ts';
import { paySandbox } from '../../payments/sandbox-rail.ts';
import type { ToolEnvironment } from '../../core/tool.ts';
import { runSystemTool } from '../../pipeline/system-runs.ts';
import { minorToNumber, SETTLEMENT_CURRENCY } from '../../domain/money.ts';
import { testMoneyMayMoveOn, testMoneyRefusal } from '../../chain/test-networks.ts';
import { openChainSession } from '../../settlement/chain-session.ts';
import { settlementAmount, settlementAsset, settlementMinor } from '../../../tools/schemas.ts';
import { paymentOutput } from '../../../tools/payment-output.ts';
import { fundTestBalance } from '../../../tools/system/fund-test-balance.ts';
import type { ApiOperation } from '../openapi.ts';
import { requestAuth } from '../plugins/auth.ts';

const payBody = z.strictObject({
  outcome: z
    .enum(['succeeded', 'declined'], { error: "outcome must be 'succeeded' or 'declined'" })
    .default('succeeded')
    .describe('What the sandbox rail answers.'),
});

const fundBody = z.strictObject({
  amount: settlementAmount('amount').describe('How much test USDC to add to the balance (major units).'),
  asset: settlementAsset,
});

const balanceResponse = z.object({
  object: z.literal('balance_funding'),
  id: z.string(),
  amount: z.number(),
  asset: z.string(),
  available: z.number().describe('The test balance after funding.'),
});

export const testHelperOperations: ApiOperation[] = [
  {
    method: 'POST',
    path: '/v1/test_helpers/payments/:id/pay',
    operationId: 'test_helper_pay_payment',
    summary: 'Pay a test-mode payment on the sandbox rail',
    description: 'Test-mode keys only (404 with a live key). Does exactly what the payer does on the checkout page.',
    tag: 'test helpers',
    scope: 'payments:write',
    body: payBody,
    response: paymentOutput.extend({
      attempt: z.object({
        id: z.string().describe("The sandbox rail's attempt (att_…)."),
        object: z.literal('payment_attempt'),
        outcome: z.enum(['succeeded', 'declined']),
      }),
    }),
    // A payment that cannot be paid now (already paid, expired) is a 409, as on the checkout page.
    errors: ['conflict'],
  },
  {
    method: 'POST',
    path: '/v1/test_helpers/balance/fund',
    operationId: 'test_helper_fund_balance',
    summary: 'Add test USDC to the custodial balance',
    description:
      'Test-mode keys only (404 with a live key). Moves devnet treasury funds to the test balance, for trying payouts.',
    tag: 'test helpers',
    scope: 'payouts:write',
    body: fundBody,
    response: balanceResponse,
    // A live key: 404, as if it did not exist. A treasury too small for the amount: 402.
    errors: ['not_found', 'insufficient_funds'],
  },
];

/**
 * Test helpers drive the sandbox rail exactly as a payer on the checkout page does. They exist
 * for test-mode keys only: with a live key they are 404, as if they did not exist.
 */
export function testHelperRoutes(services: ToolEnvironment): FastifyPluginAsync {
  return async (app) => {
    app.post<{ Params: { id: string } }>(
      '/v1/test_helpers/payments/:id/pay',
      { config: { auth: { scope: 'payments:write' } } },
      async (request) => {
        const auth = requestAuth(request);
        if (auth.livemode)
          throw new AppError('not_found', 'Test helpers are only available with test-mode keys (sk_test_…).');
        const { outcome } = parseInput(payBody, request.body);
        const owned = await findPayment(services.db, auth, request.params.id);
        if (!owned) throw new AppError('not_found', `No such payment: '${request.params.id}'.`, { param: 'id' });
        const result = await paySandbox(services, auth, owned.id, outcome);
        return { ...result.payment, attempt: { id: result.attempt_id, object: 'payment_attempt' as const, outcome } };
      },
    );

    app.post('/v1/test_helpers/balance/fund', { config: { auth: { scope: 'payouts:write' } } }, async (request) => {
      const auth = requestAuth(request);
      if (auth.livemode)
        throw new AppError('not_found', 'Test helpers are only available with test-mode keys (sk_test_…).');
      const body = parseInput(fundBody, request.body);
      const amount = settlementMinor(body.amount);
      // The money is real on the test chain: it comes out of what the treasury was funded with.
      const chain = await services.chain();
      // Test funding hands out the treasury's tokens: play money only where the chain's tokens are.
      if (!testMoneyMayMoveOn(chain))
        throw new AppError('invalid_request', `Test funding is not available: ${testMoneyRefusal(chain)}.`);
      const session = await openChainSession(services, chain);
      const funded = await runSystemTool(
        services,
        fundTestBalance,
        { amount_minor: amount.toString(), chain_key: session.key },
        { accountId: auth.accountId, livemode: false },
      );
      return {
        object: 'balance_funding',
        id: funded.id,
        amount: body.amount,
        asset: SETTLEMENT_CURRENCY.code,
        available: minorToNumber(BigInt(funded.available_minor), SETTLEMENT_CURRENCY),
      };
    });
  };
}
