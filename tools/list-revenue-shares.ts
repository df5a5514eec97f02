import { z } from 'zod';
import { AppError } from '../src/core/errors.ts';
import { defineTool } from '../src/core/tool.ts';
import { findPayment } from '../src/db/repositories/payments.ts';
import { listRevenueShareLegs } from '../src/db/repositories/payouts.ts';
import { createdRange, pageParams } from '../src/db/pagination.ts';
import { listRevenueSharesPage } from '../src/db/repositories/revenue-shares.ts';
import type { PayoutRow } from '../src/db/tables/money.ts';
import { presentRevenueShare, revenueShareOutput } from '../src/payouts/present.ts';

export const listRevenueShares = defineTool({
  name: 'list_revenue_shares',
  title: 'List revenue shares',
  description:
    "Lists this account's revenue shares with their legs (one payout per recipient), newest first, with optional filters (payment, reference, creation time range). Page with starting_after = the last id while has_more is true.",
  input: z.strictObject({
    payment_id: z
      .string()
      .max(100, 'payment_id must be at most 100 characters')
      .optional()
      .describe('Only the share of this payment’s proceeds.'),
    reference: z
      .string()
      .max(64, 'reference must be at most 64 characters')
      .optional()
      .describe('Only the share with this reference.'),
    ...createdRange('revenue share'),
    ...pageParams('revenue share', 'split_…'),
  }),
  output: z.object({
    object: z.literal('list'),
    data: z.array(revenueShareOutput),
    has_more: z.boolean().describe('True when more revenue shares follow in the direction you paged.'),
  }),
  effect: 'read',
  scope: 'payments:read',
  http: { method: 'GET', path: '/v1/revenue_shares' },
  async handler(input, { db, actor }) {
    // Like every id a tool takes: another account's payment is the same 404 as an unknown one.
    if (input.payment_id !== undefined && !(await findPayment(db, actor, input.payment_id))) {
      throw new AppError('not_found', `No such payment: '${input.payment_id}'.`, { param: 'payment_id' });
    }
    const page = await listRevenueSharesPage(db, actor, { ...input, paymentId: input.payment_id }, input);
    // One query for the legs of the whole page.
    const legs = await listRevenueShareLegs(
      db,
      page.data.map((row) => row.id),
    );
    const legsOf = new Map<string, PayoutRow[]>();
    for (const leg of legs) legsOf.set(leg.revenue_share_id!, [...(legsOf.get(leg.revenue_share_id!) ?? []), leg]);
    return {
      object: 'list' as const,
      data: page.data.map((row) => presentRevenueShare(row, legsOf.get(row.id) ?? [])),
      has_more: page.has_more,
    };
  },
});
