import { z } from 'zod';
import { AppError } from '../src/core/errors.ts';
import { defineTool } from '../src/core/tool.ts';
import { findPayment, listAccountPaymentsIn } from '../src/db/repositories/payments.ts';
import { createdRange, pageParams } from '../src/db/pagination.ts';
import { listRefundsPage } from '../src/db/repositories/refunds.ts';
import { presentRefund, REFUND_STATUSES, refundOutput } from '../src/refunds/refunds.ts';

export const listRefunds = defineTool({
  name: 'list_refunds',
  title: 'List refunds',
  description:
    "Lists this account's refunds, newest first, with optional filters (payment, status, creation time range). Page with starting_after = the last id while has_more is true.",
  input: z.strictObject({
    payment_id: z
      .string()
      .max(100, 'payment_id must be at most 100 characters')
      .optional()
      .describe('Only the refunds of this payment.'),
    status: z
      .enum(REFUND_STATUSES, { error: `status must be one of ${REFUND_STATUSES.join(', ')}` })
      .optional()
      .describe('Only refunds in this status.'),
    ...createdRange('refund'),
    ...pageParams('refund', 'rf_…'),
  }),
  output: z.object({
    object: z.literal('list'),
    data: z.array(refundOutput),
    has_more: z.boolean().describe('True when more refunds follow in the direction you paged.'),
  }),
  effect: 'read',
  scope: 'payments:read',
  http: { method: 'GET', path: '/v1/refunds' },
  async handler(input, { db, actor }) {
    // Like every id a tool takes: another account's payment is the same 404 as an unknown one.
    if (input.payment_id !== undefined && !(await findPayment(db, actor, input.payment_id))) {
      throw new AppError('not_found', `No such payment: '${input.payment_id}'.`, { param: 'payment_id' });
    }
    const page = await listRefundsPage(db, actor, { ...input, paymentId: input.payment_id }, input);
    // A refund shows its payment's state: one query for the payments of the whole page.
    const paymentIds = [...new Set(page.data.map((row) => row.payment_id))];
    const payments = await listAccountPaymentsIn(db, actor.accountId, paymentIds);
    const paymentOf = new Map(payments.map((p) => [p.id, p]));
    return {
      object: 'list' as const,
      data: page.data.map((row) => presentRefund(row, paymentOf.get(row.payment_id)!)),
      has_more: page.has_more,
    };
  },
});
