import { z } from 'zod';
import { AppError } from '../src/core/errors.ts';
import { defineTool } from '../src/core/tool.ts';
import { findPayment, listPayments as listPaymentRows } from '../src/db/repositories/payments.ts';
import { PAYMENT_STATUSES } from '../src/domain/payment-status.ts';
import { presentPayment } from '../src/payments/present.ts';
import { paymentOutput } from './payment-output.ts';

// Date.parse also takes "10081" (the year 10081) or negative years, which the database cannot
// compare against: the range keeps such a filter a 400 instead of a 500 (test/fuzz.api.test.ts).
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

const isoTime = (field: string) =>
  z
    .string({ error: `${field} must be an ISO 8601 date-time` })
    .refine((v) => {
      const at = Date.parse(v);
      return at >= EARLIEST && at <= LATEST;
    }, `${field} must be an ISO 8601 date-time between the years 0001 and 9999, e.g. 2026-11-22T00:00:00Z`)
    .transform((v) => new Date(v));

export const listPayments = defineTool({
  name: 'list_payments',
  title: 'List payments',
  description:
    "Lists this account's payments, newest first, with optional filters (status, reference, creation time range). Page with starting_after = the last id of the previous page while has_more is true.",
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
    created_gte: isoTime('created_gte').optional().describe('Only payments created at or after this time (ISO 8601).'),
    created_lte: isoTime('created_lte').optional().describe('Only payments created at or before this time (ISO 8601).'),
    limit: z.coerce
      .number({ error: 'limit must be a number' })
      .int('limit must be an integer')
      .min(1, 'limit must be between 1 and 100')
      .max(100, 'limit must be between 1 and 100')
      .default(20)
      .describe('Page size, 1 to 100 (default 20).'),
    starting_after: z
      .string()
      .max(100)
      .optional()
      .describe('A payment id: return the payments after it in this order (the next page).'),
  }),
  output: z.object({
    object: z.literal('list'),
    data: z.array(paymentOutput),
    has_more: z.boolean().describe('True when more payments follow; pass the last id as starting_after.'),
  }),
  effect: 'read',
  scope: 'payments:read',
  http: { method: 'GET', path: '/v1/payments' },
  async handler(input, { runtime, db, actor }) {
    let after: { createdAt: Date; id: string } | undefined;
    if (input.starting_after) {
      const cursor = await findPayment(db, actor, input.starting_after);
      if (!cursor)
        throw new AppError('invalid_request', `starting_after: no such payment '${input.starting_after}'.`, {
          param: 'starting_after',
        });
      after = { createdAt: cursor.created_at, id: cursor.id };
    }
    const rows = await listPaymentRows(db, {
      accountId: actor.accountId,
      livemode: actor.livemode,
      status: input.status,
      reference: input.reference,
      createdGte: input.created_gte,
      createdLte: input.created_lte,
      after,
      limit: input.limit + 1,
    });
    return {
      object: 'list' as const,
      data: rows.slice(0, input.limit).map((row) => presentPayment(runtime.config, row)),
      has_more: rows.length > input.limit,
    };
  },
});
