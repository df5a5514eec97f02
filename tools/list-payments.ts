import { z } from 'zod';
import { defineTool } from '../src/core/tool.ts';
import { createdRange, pageParams } from '../src/db/pagination.ts';
import { listPaymentsPage } from '../src/db/repositories/payments.ts';
import { PAYMENT_STATUSES } from '../src/domain/payment-status.ts';
import { presentPayment } from '../src/domain/present-payment.ts';
import { paymentOutput } from './payment-output.ts';

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
  async handler(input, { config, db, actor }) {
    const page = await listPaymentsPage(db, actor, input, input);
    return {
      object: 'list' as const,
      data: page.data.map((row) => presentPayment(config, row)),
      has_more: page.has_more,
    };
  },
});
