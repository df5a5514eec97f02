import { z } from 'zod';
import { AppError } from '../src/core/errors.ts';
import { writtenWholeNumber } from '../src/core/validation.ts';
import { defineTool, type ToolContext } from '../src/core/tool.ts';
import { findPayment } from '../src/db/repositories/payments.ts';
import type { RevenueShareRow } from '../src/db/tables/money.ts';
import { newId } from '../src/domain/ids.ts';
import { formatDisplay, SETTLEMENT_CURRENCY } from '../src/domain/money.ts';
import { assertModeMayPayOut, assertSafeRecipient } from '../src/payouts/payouts.ts';
import { createPayoutRecord } from '../src/db/money-writes/payouts.ts';
import { presentRevenueShare, revenueShareOutput } from '../src/payouts/present.ts';
import { evmAddress, optionalText, paymentId, settlementAmount, settlementAsset, settlementMinor } from './schemas.ts';
import { insertRevenueShare } from '../src/db/money-writes/revenue-shares.ts';
import { listLegsOfRevenueShare } from '../src/db/repositories/payouts.ts';
import { findRevenueShareByReference } from '../src/db/repositories/revenue-shares.ts';

const MAX_LEGS = 20;
/** Parts per leg: enough for any ratio a person writes, small enough that total × parts stays exact. */
const MAX_PARTS = 1_000_000;

const input = z
  .strictObject({
    payment_id: paymentId
      .optional()
      .describe(
        "Share a settled payment's proceeds (its settlement amount, credited to the balance). Give this or amount.",
      ),
    amount: settlementAmount('amount')
      .optional()
      .describe('Or share this amount of the balance (major units). Give this or payment_id.'),
    asset: settlementAsset,
    splits: z
      .array(
        z.strictObject({
          to_address: evmAddress('to_address').describe('A recipient 0x EVM address.'),
          share_bps: writtenWholeNumber(
            z
              .number({ error: 'share_bps must be a number of basis points' })
              .int('share_bps must be a whole number of basis points')
              .min(1, 'share_bps must be between 1 and 10000')
              .max(10_000, 'share_bps must be between 1 and 10000'),
            'share_bps must be a whole number of basis points',
          )
            .optional()
            .describe('Share in basis points (7000 = 70%). Give this or share_parts, the same on every leg.'),
          share_parts: writtenWholeNumber(
            z
              .number({ error: 'share_parts must be a whole number of parts' })
              .int('share_parts must be a whole number of parts')
              .min(1, `share_parts must be between 1 and ${MAX_PARTS}`)
              .max(MAX_PARTS, `share_parts must be between 1 and ${MAX_PARTS}`),
            'share_parts must be a whole number of parts',
          )
            .optional()
            .describe(
              "Or this leg's parts of the total, for shares basis points cannot state exactly: 1 on every leg is an equal split (a third each), 2 and 1 two thirds and a third. Each leg gets total × parts ÷ all parts, rounded down to the smallest unit; the units left over go one each to the first legs, in order.",
            ),
        }),
        { error: 'splits must be a list of { to_address, share_bps } or { to_address, share_parts }' },
      )
      .min(1, 'splits must have at least one recipient')
      .max(MAX_LEGS, `splits must have at most ${MAX_LEGS} recipients`)
      .describe(
        'Recipients and their shares: share_bps on every leg, adding up to 10000 (100%), or share_parts on every leg.',
      ),
    reference: optionalText('reference', 64).describe('Your own id for this revenue share.'),
  })
  .superRefine((value, ctx) => {
    if ((value.payment_id === undefined) === (value.amount === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['payment_id'], message: 'payment_id or amount: give exactly one of them' });
    }
    const byBps = value.splits.filter((s) => s.share_bps !== undefined).length;
    const byParts = value.splits.filter((s) => s.share_parts !== undefined).length;
    if (value.splits.some((s) => (s.share_bps === undefined) === (s.share_parts === undefined))) {
      ctx.addIssue({
        code: 'custom',
        path: ['splits'],
        message: 'each split needs exactly one of share_bps or share_parts',
      });
    } else if (byBps > 0 && byParts > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['splits'],
        message: 'splits must all give share_bps or all give share_parts, not a mix',
      });
    } else if (byBps > 0) {
      const total = value.splits.reduce((sum, s) => sum + (s.share_bps ?? 0), 0);
      if (total !== 10_000) {
        ctx.addIssue({
          code: 'custom',
          path: ['splits'],
          message: `splits shares must add up to 10000 basis points (100%); they add up to ${total}`,
        });
      }
    }
    const seen = new Set<string>();
    for (const [i, split] of value.splits.entries()) {
      const address = split.to_address.toLowerCase();
      if (seen.has(address)) {
        ctx.addIssue({
          code: 'custom',
          path: ['splits', i, 'to_address'],
          message: 'to_address appears twice in splits',
        });
      }
      seen.add(address);
    }
  });

type SplitInput = z.output<typeof input>;
type Leg = SplitInput['splits'][number];

/**
 * Legs by share, rounded down to the smallest unit, the leftover units handed out one by one from
 * the first leg: legs add up to the total exactly, and equal parts differ by at most one unit
 * (100 USDC in three: 33.333334, 33.333333, 33.333333). Shares are basis points of 10000, or parts
 * of their sum.
 */
export function splitAmounts(total: bigint, legs: readonly Leg[]): bigint[] {
  const weights = legs.map((leg) => BigInt(leg.share_parts ?? leg.share_bps ?? 0));
  const whole = legs.some((leg) => leg.share_parts !== undefined) ? weights.reduce((a, b) => a + b, 0n) : 10_000n;
  const amounts = weights.map((weight) => (total * weight) / whole);
  let left = total - amounts.reduce((a, b) => a + b, 0n);
  for (let i = 0; left > 0n; i = (i + 1) % amounts.length, left--) amounts[i]! += 1n;
  return amounts;
}

/** A leg's share in words: "70%", or "1 of 3 parts". */
export function describeShare(leg: Leg, legs: readonly Leg[]): string {
  if (leg.share_parts === undefined) return `${(leg.share_bps ?? 0) / 100}%`;
  const whole = legs.reduce((sum, other) => sum + (other.share_parts ?? 0), 0);
  return `${leg.share_parts} of ${whole} parts`;
}

async function totalToShare(value: SplitInput, ctx: ToolContext): Promise<{ total: bigint; paymentId: string | null }> {
  if (value.amount !== undefined) return { total: settlementMinor(value.amount), paymentId: null };
  const payment = await findPayment(ctx.db, ctx.actor, value.payment_id!);
  if (!payment) throw new AppError('not_found', `No such payment: '${value.payment_id}'.`, { param: 'payment_id' });
  if (payment.status !== 'settled' || payment.settlement_destination !== 'balance') {
    throw new AppError(
      'conflict',
      `Payment ${payment.id} has no proceeds in the balance to share: it must be settled into the custodial balance (it is ${payment.status}${payment.settlement_destination === 'address' ? ', paid out to its payout address' : ''}).`,
      { param: 'payment_id' },
    );
  }
  return { total: payment.settlement_minor, paymentId: payment.id };
}

export const splitRevenue = defineTool({
  name: 'split_revenue',
  title: 'Split revenue between addresses',
  description:
    "Shares a settled payment's proceeds, or an amount of the balance, between several EVM addresses by basis points (adding up to 10000) or by parts (share_parts 1 on every leg is an exactly equal split). All legs are created together and paid on-chain together; gas is paid by the service. Subject to the account policy.",
  input,
  output: revenueShareOutput,
  effect: 'money',
  scope: 'payouts:write',
  http: { method: 'POST', path: '/v1/revenue_shares' },
  /** A reference names one revenue share for good, as a payment's and a payout's do. */
  async existing(value, { db, actor }) {
    if (value.reference === undefined) return undefined;
    const row = await findRevenueShareByReference(db, actor, value.reference);
    if (!row) return undefined;
    const legs = await listLegsOfRevenueShare(db, row.id);
    const sameTotal =
      row.asset === value.asset &&
      (value.payment_id !== undefined
        ? row.payment_id === value.payment_id
        : row.payment_id === null && row.amount_minor === settlementMinor(value.amount!));
    // Legs are compared as recipient → amount: a retry may list the splits in another order.
    const amounts = splitAmounts(row.amount_minor, value.splits);
    const asked = new Map(value.splits.map((s, i) => [s.to_address.toLowerCase(), amounts[i]]));
    const sameSplits =
      legs.length === asked.size && legs.every((leg) => asked.get(leg.to_address.toLowerCase()) === leg.amount_minor);
    if (!sameTotal || !sameSplits) {
      throw new AppError(
        'conflict',
        `reference '${value.reference}' already names revenue share ${row.id} (${formatDisplay(row.amount_minor, SETTLEMENT_CURRENCY)} between ${legs.length} recipients), with other parameters. A reference names one revenue share for good: use a new one for a new split.`,
        { param: 'reference' },
      );
    }
    return presentRevenueShare(row, legs);
  },
  async precheck(value, ctx) {
    const { actor } = ctx;
    await assertModeMayPayOut(ctx, actor.livemode);
    for (const [i, split] of value.splits.entries()) {
      await assertSafeRecipient(ctx, split.to_address, `splits[${i}].to_address`);
    }
  },
  async policy(value, ctx) {
    const { total } = await totalToShare(value, ctx);
    return {
      amountSettlementMinor: total,
      recipients: value.splits.map((s) => s.to_address),
      summary: `Split ${formatDisplay(total, SETTLEMENT_CURRENCY)} between ${value.splits.map((s) => `${s.to_address} (${describeShare(s, value.splits)})`).join(', ')}`,
    };
  },
  async handler(value, ctx) {
    const { db, actor, now } = ctx;
    const { total, paymentId: sharedPayment } = await totalToShare(value, ctx);
    const amounts = splitAmounts(total, value.splits);
    if (amounts.some((a) => a === 0n)) {
      throw new AppError(
        'invalid_request',
        'splits: a share this small of this amount would be zero; use fewer recipients or a larger amount.',
        {
          param: 'splits',
        },
      );
    }
    const id = newId('split');
    let share: RevenueShareRow;
    try {
      share = await insertRevenueShare(db, {
        id,
        account_id: actor.accountId,
        livemode: actor.livemode,
        payment_id: sharedPayment,
        amount_minor: total,
        asset: SETTLEMENT_CURRENCY.code,
        reference: value.reference ?? null,
        channel: actor.channel,
        created_at: now,
      });
    } catch (error) {
      if (String((error as Error).message).includes('revenue_shares_payment')) {
        throw new AppError('conflict', `The proceeds of ${sharedPayment} were already shared.`, {
          param: 'payment_id',
        });
      }
      throw error;
    }
    const legs = [];
    // Each leg is made a millisecond after the one before, so that (created_at, id), the order every
    // read of the legs uses, is the order the splits were given: the create, a replay and the list
    // show the legs alike (random ids alone would shuffle legs made in the same instant).
    for (const [i, split] of value.splits.entries()) {
      legs.push(
        await createPayoutRecord(db, {
          accountId: actor.accountId,
          livemode: actor.livemode,
          amountMinor: amounts[i]!,
          toAddress: split.to_address,
          reference: value.reference,
          revenueShareId: id,
          channel: actor.channel,
          at: new Date(now.getTime() + i),
        }),
      );
    }
    return presentRevenueShare(share, legs);
  },
});
