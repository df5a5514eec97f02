// Netting for the settlement batches (src/db/money-writes/transfers.ts queues transfers; the settlement
// worker batches, signs, broadcasts and follows them: docs/settlement.md).

import { type Address, getAddress } from 'viem';
import type { TransferRow } from '../db/tables/settlement.ts';

/** One line of a batch call: a recipient and the sum of its transfers in the batch. */
export interface BatchLine {
  recipient: Address;
  amount: bigint;
}

/**
 * Nets transfers to the same recipient into one line (addresses compared case-insensitively), in
 * ascending address order so that the same transfers always give the same calldata.
 */
export function netTransfers(transfers: readonly Pick<TransferRow, 'recipient' | 'amount_minor'>[]): BatchLine[] {
  const sums = new Map<string, bigint>();
  for (const t of transfers) {
    const key = getAddress(t.recipient);
    sums.set(key, (sums.get(key) ?? 0n) + t.amount_minor);
  }
  return [...sums.entries()]
    .sort(([a], [b]) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1))
    .map(([recipient, amount]) => ({ recipient: recipient as Address, amount }));
}
