import { z } from 'zod';
import { defineTool } from '../src/core/tool.ts';
import { findPayment, listPayments as listPaymentRows } from '../src/db/repositories/payments.ts';
import { keysetOf, pageFrom, pageParams } from '../src/db/pagination.ts';
import { PAYMENT_STATUSES } from '../src/domain/payment-status.ts';
import { presentPayment } from '../src/payments/present.ts';
import { paymentOutput } from './payment-output.ts';
import { createdRange } from '../src/db/pagination.ts';

export const listPayments = defineTool({
  name: 'list_payments',
  title: 'List payments',
  description:
    "Lists this account's payments, newest first, with optional filters (status, reference, creation time range). Page with starting_after = the last id of the page while has_more is true (ending_before = the first id goes back).",
  input: z.strictObject({
    status: z
      .enum(PAYMENT_STATUSES, { error: `status must be one of ${PAYMENT_STATUSES.join(', ')}` })
      .optional()
      .describe('Only payments in this status.'),
    reference: z
      .string()
      .max(64, 'reference must be at most 64 characters')
      .optional()
      .describe('Only the payment with this reference.'),
    ...createdRange('payment'),
    ...pageParams('payment', 'pay_…'),
  }),
  output: z.object({
    object: z.literal('list'),
    data: z.array(paymentOutput),
    has_more: z.boolean().describe('True when more payments follow in the direction you paged.'),
  }),
  effect: 'read',
  scope: 'payments:read',
  http: { method: 'GET', path: '/v1/payments' },
  async handler(input, { runtime, db, actor }) {
    const keyset = await keysetOf(input, 'payment', (id) => findPayment(db, actor, id));
    const rows = await listPaymentRows(db, {
      accountId: actor.accountId,
      livemode: actor.livemode,
      status: input.status,
      reference: input.reference,
      createdGte: input.created_gte,
      createdLte: input.created_lte,
      keyset,
      limit: input.limit + 1,
    });
    const page = pageFrom(rows, input.limit, keyset);
    return {
      object: 'list' as const,
      data: page.data.map((row) => presentPayment(runtime.config, row)),
      has_more: page.has_more,
    };
  },
});
