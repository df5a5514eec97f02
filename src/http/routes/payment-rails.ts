import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { AppError } from '../../core/errors.ts';
import { RAIL_NAMES } from '../../db/tables/rails.ts';
import { SUPPORTED_CURRENCY_CODES } from '../../domain/money.ts';
import { offeredRailsOf } from '../../payments/rails/attempts.ts';
import type { PaymentRailDeps } from '../../payments/deps.ts';
import type { ApiOperation } from '../openapi.ts';
import { requestAuth } from '../plugins/auth.ts';

const railView = z.object({
  id: z.enum(RAIL_NAMES).describe("The rail's id, its name: sandbox, paystack or mpesa (the same as rail)."),
  object: z.literal('payment_rail'),
  rail: z.enum(RAIL_NAMES),
  livemode: z.boolean(),
  currencies: z
    .array(z.string())
    .describe(
      "The currencies this mode's checkouts can be paid in on this rail (a payment must also fit the rail's limits).",
    ),
  collected_by: z
    .literal('operator')
    .describe("Who collects the payer's money: always the operator of this plainpay instance (docs/rails.md)."),
});

const railList = z.object({
  object: z.literal('list'),
  data: z.array(railView).describe('The rails checkouts of this mode offer, the sandbox first in test mode.'),
  has_more: z.literal(false).describe('Always false: every rail is on the one page.'),
});

export const paymentRailOperations: ApiOperation[] = [
  {
    method: 'GET',
    path: '/v1/payment_rails',
    operationId: 'list_payment_rails',
    summary: 'List the payer rails your checkouts offer',
    description:
      "Which rails payers can pay this mode's checkouts on, and in which currencies. The operator of this plainpay instance collects on every rail; rails are not connected with an API key.",
    tag: 'payment rails',
    scope: 'keys',
    response: railList,
  },
];

const OPERATOR_COLLECTS =
  'Payer rails are set by the operator of this plainpay instance, not with an API key: the operator collects every payer\'s money and credits you the stablecoin (docs/rails.md, "Who collects"). GET /v1/payment_rails shows what your checkouts offer.';

/**
 * What a merchant's checkouts offer (docs/rails.md): read-only. Collection credentials are the
 * operator's (`plainpay collection set`); the old connect and disconnect calls answer 403 saying so.
 */
export function paymentRailRoutes(deps: Pick<PaymentRailDeps, 'db'>): FastifyPluginAsync {
  return async (app) => {
    const access = { config: { auth: { scope: 'keys' as const } } };

    app.get('/v1/payment_rails', access, async (request) => {
      const auth = requestAuth(request);
      const provider = await offeredRailsOf(deps, auth);
      const data = [
        ...(auth.livemode ? [] : [{ rail: 'sandbox' as const, currencies: [...SUPPORTED_CURRENCY_CODES] }]),
        ...provider,
      ].map((r) => ({
        id: r.rail,
        object: 'payment_rail' as const,
        livemode: auth.livemode,
        collected_by: 'operator' as const,
        ...r,
      }));
      return { object: 'list', data, has_more: false };
    });

    const refuse = async (): Promise<never> => {
      throw new AppError('permission_denied', OPERATOR_COLLECTS);
    };
    app.put('/v1/payment_rails/:rail', access, refuse);
    app.delete('/v1/payment_rails/:rail', access, refuse);
  };
}
