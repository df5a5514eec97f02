import { z } from 'zod';
import { AppError } from '../src/core/errors.ts';
import { defineTool } from '../src/core/tool.ts';
import { findPayout } from '../src/db/repositories/payouts.ts';
import { payoutOutput, presentPayout } from '../src/payouts/present.ts';

export const getPayout = defineTool({
  name: 'get_payout',
  title: 'Get a payout',
  description:
    'Reads one payout of this account by id: status, amount, recipient and, once settled, the transaction hash.',
  input: z.strictObject({
    payout_id: z.string({ error: 'payout_id must be a string' }).min(1).max(100).describe('The payout id (po_…).'),
  }),
  output: payoutOutput,
  effect: 'read',
  scope: 'payments:read',
  http: { method: 'GET', path: '/v1/payouts/:payout_id' },
  async handler({ payout_id }, { db, actor }) {
    const row = await findPayout(db, actor, payout_id);
    if (!row) throw new AppError('not_found', `No such payout: '${payout_id}'.`, { param: 'payout_id' });
    return presentPayout(row);
  },
});
