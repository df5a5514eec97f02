import { z } from 'zod';
import { AppError } from '../src/core/errors.ts';
import { defineTool } from '../src/core/tool.ts';
import { formatDisplay, SETTLEMENT_CURRENCY } from '../src/domain/money.ts';
import { assertModeMayPayOut, assertSafeRecipient } from '../src/payouts/payouts.ts';
import { createPayoutRecord } from '../src/db/money-writes/payouts.ts';
import { findDirectPayoutByReference } from '../src/db/repositories/payouts.ts';
import { payoutOutput, presentPayout } from '../src/payouts/present.ts';
import { evmAddress, optionalText, settlementAmount, settlementAsset, settlementMinor } from './schemas.ts';

export const createPayout = defineTool({
  name: 'create_payout',
  title: 'Pay out to an address',
  description:
    'Pays an amount of the settlement stablecoin from the custodial balance to an EVM address, on-chain; the service pays the gas. Subject to the account policy (it may be held for a human to approve). Returns the payout, status queued until the transfer is confirmed.',
  input: z.strictObject({
    amount: settlementAmount('amount').describe('Amount of the asset to pay, in major units (USDC: up to 6 decimals).'),
    asset: settlementAsset,
    to_address: evmAddress('to_address').describe('The recipient 0x EVM address.'),
    reference: optionalText('reference', 64).describe(
      'Your own id for this payout, at most 64 characters. It names one payout for good: the same reference again returns that payout (409 if the amount, recipient or memo differ), so a retry never pays twice.',
    ),
    memo: optionalText('memo', 300).describe('A note kept with the payout, at most 300 characters.'),
  }),
  output: payoutOutput,
  effect: 'money',
  scope: 'payouts:write',
  http: { method: 'POST', path: '/v1/payouts' },
  async precheck(input, ctx) {
    await assertModeMayPayOut(ctx, ctx.actor.livemode);
    await assertSafeRecipient(ctx, input.to_address, 'to_address');
  },
  async policy(input) {
    const amount = settlementMinor(input.amount);
    return {
      amountSettlementMinor: amount,
      recipients: [input.to_address],
      summary: `Pay out ${formatDisplay(amount, SETTLEMENT_CURRENCY)} to ${input.to_address}`,
    };
  },
  async existing(input, { db, actor }) {
    if (input.reference === undefined) return undefined;
    const row = await findDirectPayoutByReference(db, actor, input.reference);
    if (!row) return undefined;
    const same =
      row.amount_minor === settlementMinor(input.amount) &&
      row.asset === input.asset &&
      row.to_address.toLowerCase() === input.to_address.toLowerCase() &&
      row.memo === (input.memo ?? null);
    if (!same) {
      throw new AppError(
        'conflict',
        `reference '${input.reference}' already names payout ${row.id} (${formatDisplay(row.amount_minor, SETTLEMENT_CURRENCY)} to ${row.to_address}), with other parameters. A reference names one payout for good: use a new one for a new payout.`,
        { param: 'reference' },
      );
    }
    return presentPayout(row);
  },
  async handler(input, { db, actor, now }) {
    const row = await createPayoutRecord(db, {
      accountId: actor.accountId,
      livemode: actor.livemode,
      amountMinor: settlementMinor(input.amount),
      toAddress: input.to_address,
      reference: input.reference,
      memo: input.memo,
      channel: actor.channel,
      at: now,
    });
    return presentPayout(row);
  },
});
