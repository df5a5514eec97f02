import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import type { Config } from '../config/config.ts';
import { PAYMENT_STATUSES } from '../domain/payment-status.ts';
import type { ApiOperation } from '../http/openapi.ts';
import { AppError } from '../core/errors.ts';
import type { ToolEnvironment } from '../core/tool.ts';
import { parseStoredJson, stringifyJson } from '../core/json-text.ts';
import { findPublicPayment, type PublicPaymentRow } from '../db/repositories/payments.ts';
import { presentPublicPayment } from '../domain/present-payment.ts';

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

export function checkoutStatusRoutes(deps: Pick<ToolEnvironment, 'db' | 'config'>): FastifyPluginAsync {
  return async (app) => {
    /**
     * The seed's public status read, for polling. No key: the unguessable id (≥128 bits) is the
     * capability, and the view carries nothing about the account, its keys or its payout address.
     */
    app.get<{ Params: { id: string } }>('/checkout/:id', async (request, reply) => {
      // A hot path: one prepared statement (findPublicPayment), the body written from it directly.
      const row = await findPublicPayment(deps.db, request.params.id);
      if (!row) throw new AppError('not_found', `No such checkout session: '${request.params.id}'.`, { param: 'id' });
      // Status changes: a poller must never see a stale cached copy.
      return reply
        .header('Cache-Control', 'no-store')
        .type('application/json; charset=utf-8')
        .send(publicPaymentJson(deps.config, row));
    });
  };
}

/**
 * The response body: exactly what the app's serializer (stringifyJson) writes for
 * presentPublicPayment's view, without its per-key replacer, which only tagged metadata needs.
 */
export function publicPaymentJson(config: Config, row: PublicPaymentRow): string {
  const text = JSON.stringify(presentPublicPayment(config, { ...row, metadata: null }));
  if (row.metadata === null) return text;
  const metadata = storedJsonText(row.metadata);
  // The key's first occurrence: a string value before it cannot hold `"metadata":` (its quotes are escaped).
  return text.replace('"metadata":null', () => `"metadata":${metadata}`);
}

/**
 * What stringifyJson writes for the value parseStoredJson reads from a json column's text: the
 * text itself when JSON.stringify would write it so (all that the service stores), else rewritten.
 */
function storedJsonText(text: string): string {
  return JSON.stringify(JSON.parse(text)) === text ? text : stringifyJson(parseStoredJson(text));
}
