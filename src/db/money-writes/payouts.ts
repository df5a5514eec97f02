// A payout's row, written in the paying tools' runs (create_payout, split_revenue's legs) with its
// queued transfer. Only tools/ imports this (test/architecture.test.ts).

import type { Channel } from '../../core/tool.ts';
import type { Db } from '../database.ts';
import type { Updateable } from 'kysely';
import type { PayoutRow, PayoutsTable } from '../tables/money.ts';
import { newId } from '../../domain/ids.ts';
import { SETTLEMENT_CURRENCY } from '../../domain/money.ts';
import { moneyError } from '../../ledger/ledger.ts';
import { enqueueTransfer } from './transfers.ts';

export interface NewPayout {
  accountId: string;
  livemode: boolean;
  amountMinor: bigint;
  toAddress: string;
  reference?: string | null;
  memo?: string | null;
  revenueShareId?: string | null;
  channel: Channel;
  at: Date;
}

/**
 * Records a payout and queues its on-chain transfer, in the caller's transaction: the money moves
 * from the custodial balance to in-flight now, and the settlement worker (the one path that sends
 * tokens) pays it. A balance too small is insufficient_funds and nothing is written.
 */
export async function createPayoutRecord(db: Db, payout: NewPayout): Promise<PayoutRow> {
  const id = newId('po');
  await db
    .insertInto('payouts')
    .values({
      id,
      account_id: payout.accountId,
      livemode: payout.livemode,
      revenue_share_id: payout.revenueShareId ?? null,
      amount_minor: payout.amountMinor,
      asset: SETTLEMENT_CURRENCY.code,
      to_address: payout.toAddress,
      reference: payout.reference ?? null,
      memo: payout.memo ?? null,
      status: 'queued',
      transfer_id: null,
      channel: payout.channel,
      created_at: payout.at,
    })
    .execute();
  let transferId: string;
  try {
    const transfer = await enqueueTransfer(db, {
      kind: payout.revenueShareId ? 'split_leg' : 'payout',
      sourceId: id,
      accountId: payout.accountId,
      livemode: payout.livemode,
      recipient: payout.toAddress,
      amountMinor: payout.amountMinor,
      at: payout.at,
    });
    transferId = transfer.id;
  } catch (error) {
    throw moneyError(error, 'to_address');
  }
  return db
    .updateTable('payouts')
    .set({ transfer_id: transferId })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * A payout's status moved on by its transfer's outcome (payout-outcomes.ts): a compare-and-set from
 * `from`, so a repeated outcome changes nothing. The payout as it is now, or undefined.
 */
export async function movePayoutFrom(
  db: Db,
  id: string,
  from: 'queued' | 'settled',
  changes: Updateable<PayoutsTable>,
): Promise<PayoutRow | undefined> {
  return db
    .updateTable('payouts')
    .set(changes)
    .where('id', '=', id)
    .where('status', '=', from)
    .returningAll()
    .executeTakeFirst();
}
