import type { Updateable } from 'kysely';
import type { Db } from '../../src/db/database.ts';
import { insertEvent } from '../../src/db/repositories/events.ts';
import type { PayoutsTable } from '../../src/db/tables/money.ts';
import { presentPayout } from '../../src/payouts/present.ts';
import type { EventType } from '../../src/webhooks/event-types.ts';
import type { TransferHandler } from './transfer-handler.ts';
import { movePayoutFrom } from '../../src/db/money-writes/payouts.ts';

/**
 * Finishes payouts (and revenue-share legs, which are payouts) when their transfer ends: settled
 * with the chain facts, or failed with the money already back in the balance, or back in flight
 * after a reorg. Runs inside the settlement worker's transaction, so the payout row, the ledger and
 * the event commit together. Payout events have no per-object webhook URL: they go to the
 * account's webhook endpoints that subscribe to them, and GET /v1/events lists them.
 */
export const payoutTransferHandler: TransferHandler = {
  async onConfirmed(db, items, ctx) {
    for (const item of items) {
      await movePayout(db, item.transfer.source_id, 'queued', {
        set: {
          status: 'settled',
          chain_id: item.chainId,
          tx_hash: item.txHash,
          gas_used: item.gasUsed,
          gas_cost_wei: item.gasCostWei.toString(),
          settled_at: ctx.now,
        },
        event: 'payout.settled',
        now: ctx.now,
      });
    }
  },

  /**
   * A reorg took the payout's transaction off the chain: settled → queued (in flight) with the chain
   * facts cleared, and payout.settlement_reverted; payout.settled goes out again when it lands.
   */
  async onReverted(db, items, ctx) {
    for (const item of items) {
      await movePayout(db, item.transfer.source_id, 'settled', {
        set: { status: 'queued', chain_id: null, tx_hash: null, gas_used: null, gas_cost_wei: null, settled_at: null },
        event: 'payout.settlement_reverted',
        data: {
          reverted_settlement: {
            chain_id: item.chainId,
            tx_hash: item.txHash,
            block_number: item.blockNumber === null ? null : Number(item.blockNumber),
            reason: item.reason,
          },
        },
        now: ctx.now,
      });
    }
  },

  async onFailed(db, items, ctx) {
    for (const item of items) {
      await movePayout(db, item.transfer.source_id, 'queued', {
        set: { status: 'failed', failure_reason: item.reason, failed_at: ctx.now },
        event: 'payout.failed',
        data: { reason: item.reason },
        now: ctx.now,
      });
    }
  },
};

/**
 * The one way a payout's status changes here: compare-and-set from `from` (a payout already moved
 * on is left alone, so a repeated outcome announces nothing twice), then the event announcing it.
 */
async function movePayout(
  db: Db,
  payoutId: string,
  from: 'queued' | 'settled',
  change: { set: Updateable<PayoutsTable>; event: EventType; data?: Record<string, unknown>; now: Date },
): Promise<void> {
  const row = await movePayoutFrom(db, payoutId, from, change.set);
  if (!row) return;
  await insertEvent(db, {
    accountId: row.account_id,
    livemode: row.livemode,
    type: change.event,
    objectId: row.id,
    data: { object: presentPayout(row), reference: row.reference, ...change.data },
    webhookUrl: null,
    createdAt: change.now,
  });
}
