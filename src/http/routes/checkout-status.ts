import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { PAYMENT_STATUSES } from '../../domain/payment-status.ts';
import type { ApiOperation } from '../openapi.ts';
import { AppError } from '../../core/errors.ts';
import { findPaymentById } from '../../db/repositories/payments.ts';
import { presentPublicPayment } from '../../payments/present.ts';
import type { Runtime } from '../../runtime.ts';

export const checkoutStatusOperations: ApiOperation[] = [
  {
    method: 'GET',
    path: '/checkout/:id',
    operationId: 'get_checkout_status',
    summary: 'Read the public status of a payment',
    description:
      "Public (no key): for polling and the checkout page. The payer's view: nothing about the account and no settlement amount, fee or rate.",
    tag: 'checkout',
    scope: null,
    response: z.object({
      id: z.string(),
      object: z.literal('checkout'),
      livemode: z.boolean(),
      status: z.enum(PAYMENT_STATUSES).describe('The payment status.'),
      amount: z.number(),
      currency: z.string(),
      merchant_name: z.string().nullable(),
      description: z.string().nullable(),
      metadata: z.record(z.string(), z.unknown()).nullable().describe('As given at creation, unchanged.'),
      checkout_url: z.string(),
      redirect_url: z.string(),
      expires_at: z.string(),
      paid_at: z.string().nullable(),
      settlement: z
        .object({
          chain_id: z.number().nullable(),
          tx_hash: z.string().nullable(),
          settled_at: z.string(),
        })
        .nullable()
        .describe('null until the payment is settled; then the chain and transaction that paid the merchant.'),
    }),
  },
];

export function checkoutStatusRoutes(runtime: Runtime): FastifyPluginAsync {
  return async (app) => {
    /**
     * The seed's public status read, for polling. No key: the unguessable id (≥128 bits) is the
     * capability, and the view carries nothing about the account, its keys or its payout address.
     */
    app.get<{ Params: { id: string } }>('/checkout/:id', async (request, reply) => {
      const row = await findPaymentById(runtime.db, request.params.id);
      if (!row) throw new AppError('not_found', `No such checkout session: '${request.params.id}'.`, { param: 'id' });
      // Status changes: a poller must never see a stale cached copy.
      reply.header('Cache-Control', 'no-store');
      return presentPublicPayment(runtime.config, row);
    });
  };
}
