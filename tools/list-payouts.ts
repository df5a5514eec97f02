import { z } from 'zod';
import { AppError } from '../src/core/errors.ts';
import { defineTool } from '../src/core/tool.ts';
import { createdRange, pageParams } from '../src/db/pagination.ts';
import { listPayoutsPage } from '../src/db/repositories/payouts.ts';
import { isScopedRow } from '../src/db/repositories/scoped.ts';
import { PAYOUT_STATUSES, payoutOutput, presentPayout } from '../src/payouts/present.ts';

export const listPayouts = defineTool({
  name: 'list_payouts',
  title: 'List payouts',
  description:
    "Lists this account's payouts (revenue-share legs included), newest first, with optional filters (status, reference, revenue share, creation time range). Page with starting_after = the last id while has_more is true.",
  input: z.strictObject({
    status: z
      .enum(PAYOUT_STATUSES, { error: `status must be one of ${PAYOUT_STATUSES.join(', ')}` })
      .optional()
      .describe('Only payouts in this status.'),
    reference: z
      .string()
      .max(64, 'reference must be at most 64 characters')
      .optional()
      .describe('Only payouts with this reference.'),
    revenue_share: z
      .string()
      .max(100, 'revenue_share must be at most 100 characters')
      .optional()
      .describe('Only the legs of this revenue share (split_…).'),
    ...createdRange('payout'),
    ...pageParams('payout', 'po_…'),
  }),
  output: z.object({
    object: z.literal('list'),
    data: z.array(payoutOutput),
    has_more: z.boolean().describe('True when more payouts follow in the direction you paged.'),
  }),
  effect: 'read',
  scope: 'payments:read',
  http: { method: 'GET', path: '/v1/payouts' },
  errors: ['not_found'],
  async handler(input, { db, actor }) {
    // An id the caller names must be theirs: another account's share is the same 404 as an unknown one.
    if (input.revenue_share !== undefined) {
      if (!(await isScopedRow(db, 'revenue_shares', actor, input.revenue_share))) {
        throw new AppError('not_found', `No such revenue share: '${input.revenue_share}'.`, { param: 'revenue_share' });
      }
    }
    const page = await listPayoutsPage(db, actor, { ...input, revenueShareId: input.revenue_share }, input);
    return { object: 'list' as const, data: page.data.map(presentPayout), has_more: page.has_more };
  },
});
