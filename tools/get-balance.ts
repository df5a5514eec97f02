import { z } from 'zod';
import { defineTool } from '../src/core/tool.ts';
import { custodialBalance } from '../src/payouts/payouts.ts';
import { minorToNumber, SETTLEMENT_CURRENCY } from '../src/domain/money.ts';

export const getBalance = defineTool({
  name: 'get_balance',
  title: 'Get the balance',
  description:
    "Reads this account's custodial balance in the settlement asset: what is available for payouts, refunds and revenue shares, and what is on its way out in queued payouts.",
  input: z.strictObject({}),
  output: z.object({
    object: z.literal('balance'),
    livemode: z.boolean(),
    available: z.array(z.object({ asset: z.string(), amount: z.number() })).describe('Spendable now, per asset.'),
    pending_payouts: z
      .array(z.object({ asset: z.string(), amount: z.number() }))
      .describe('Queued payouts not yet settled on chain, per asset (already taken out of available).'),
  }),
  effect: 'read',
  scope: 'payments:read',
  http: { method: 'GET', path: '/v1/balance' },
  async handler(_input, { db, actor }) {
    const asset = SETTLEMENT_CURRENCY;
    const balance = await custodialBalance(db, actor);
    return {
      object: 'balance' as const,
      livemode: actor.livemode,
      available: [{ asset: asset.code, amount: minorToNumber(balance.availableMinor, asset) }],
      pending_payouts: [{ asset: asset.code, amount: minorToNumber(balance.pendingPayoutsMinor, asset) }],
    };
  },
});
