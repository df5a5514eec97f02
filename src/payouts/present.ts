import { z } from 'zod';
import type { PayoutRow, RevenueShareRow } from '../db/tables/money.ts';
import { minorToNumber, SETTLEMENT_CURRENCY } from '../domain/money.ts';

export const PAYOUT_STATUSES = ['queued', 'settled', 'failed'] as const;

export const payoutOutput = z
  .object({
    id: z.string().describe('Payout id (po_…).'),
    object: z.literal('payout'),
    livemode: z.boolean(),
    status: z
      .enum(PAYOUT_STATUSES)
      .describe('queued → settled on chain, or failed (the money returned to the balance).'),
    amount: z.number().describe('Amount in the asset, major units.'),
    asset: z.string(),
    to_address: z.string().describe('The recipient EVM address.'),
    reference: z.string().nullable(),
    memo: z.string().nullable(),
    revenue_share: z.string().nullable().describe('The revenue share this payout is a leg of, if any.'),
    chain_id: z.number().nullable(),
    tx_hash: z.string().nullable().describe('The settlement transaction, once settled.'),
    gas_used: z.number().nullable().describe("Gas the service paid for this payout's share of its batch."),
    failure_reason: z.string().nullable(),
    created: z.string(),
    settled_at: z.string().nullable(),
    failed_at: z.string().nullable(),
  })
  .describe('A payout from the custodial balance to an address, paid on-chain with gas sponsored by the service.');

export type PayoutView = z.output<typeof payoutOutput>;

export function presentPayout(row: PayoutRow): PayoutView {
  return {
    id: row.id,
    object: 'payout',
    livemode: row.livemode,
    status: row.status,
    amount: minorToNumber(row.amount_minor, SETTLEMENT_CURRENCY),
    asset: row.asset,
    to_address: row.to_address,
    reference: row.reference,
    memo: row.memo,
    revenue_share: row.revenue_share_id,
    chain_id: row.chain_id,
    tx_hash: row.tx_hash,
    gas_used: row.gas_used === null ? null : Number(row.gas_used),
    failure_reason: row.failure_reason,
    created: row.created_at.toISOString(),
    settled_at: row.settled_at?.toISOString() ?? null,
    failed_at: row.failed_at?.toISOString() ?? null,
  };
}

export const revenueShareOutput = z
  .object({
    id: z.string().describe('Revenue share id (split_…).'),
    object: z.literal('revenue_share'),
    livemode: z.boolean(),
    payment_id: z
      .string()
      .nullable()
      .describe('The payment whose proceeds were shared, or null for an amount of the balance.'),
    amount: z.number().describe('The total shared.'),
    asset: z.string(),
    reference: z.string().nullable(),
    legs: z.array(payoutOutput).describe('One payout per recipient.'),
    created: z.string(),
  })
  .describe('A split of revenue between recipients: one payout per recipient, each settled on chain.');

export function presentRevenueShare(
  row: RevenueShareRow,
  legs: readonly PayoutRow[],
): z.output<typeof revenueShareOutput> {
  return {
    id: row.id,
    object: 'revenue_share',
    livemode: row.livemode,
    payment_id: row.payment_id,
    amount: minorToNumber(row.amount_minor, SETTLEMENT_CURRENCY),
    asset: row.asset,
    reference: row.reference,
    legs: legs.map(presentPayout),
    created: row.created_at.toISOString(),
  };
}
