import { insertEvent } from '../db/repositories/events.ts';
import type { TransferHandler } from '../settlement/handlers.ts';
import { presentPayout } from './present.ts';

/**
 * Finishes payouts (and revenue-share legs, which are payouts) when their transfer ends: settled
 * with the chain facts, or failed with the money already back in the balance. Runs inside the
 * settlement worker's transaction, so the payout row, the ledger and the event commit together.
 * Payout events have no per-object webhook URL: they go to the account's webhook endpoints that
 * subscribe to them, and GET /v1/events lists them.
 */
export const payoutTransferHandler: TransferHandler = {
  async onConfirmed(db, items, ctx) {
    for (const item of items) {
      const row = await db
        .updateTable('payouts')
        .set({
          status: 'settled',
          chain_id: item.chainId,
          tx_hash: item.txHash,
          gas_used: item.gasUsed,
          gas_cost_wei: item.gasCostWei.toString(),
          settled_at: ctx.now,
        })
        .where('id', '=', item.transfer.source_id)
        .where('status', '=', 'queued')
        .returningAll()
        .executeTakeFirst();
      if (!row) continue;
      await insertEvent(db, {
        accountId: row.account_id,
        livemode: row.livemode,
        type: 'payout.settled',
        objectId: row.id,
        data: { object: presentPayout(row), reference: row.reference },
        webhookUrl: null,
        createdAt: ctx.now,
      });
    }
  },

  /**
   * A reorg took the payout's transaction off the chain: settled → queued (in flight) with the chain
   * facts cleared, and payout.settlement_reverted; payout.settled goes out again when it lands.
   */
  async onReverted(db, items, ctx) {
    for (const item of items) {
      const row = await db
        .updateTable('payouts')
        .set({ status: 'queued', chain_id: null, tx_hash: null, gas_used: null, gas_cost_wei: null, settled_at: null })
        .where('id', '=', item.transfer.source_id)
        .where('status', '=', 'settled')
        .returningAll()
        .executeTakeFirst();
      if (!row) continue;
      await insertEvent(db, {
        accountId: row.account_id,
        livemode: row.livemode,
        type: 'payout.settlement_reverted',
        objectId: row.id,
        data: {
          object: presentPayout(row),
          reference: row.reference,
          reverted_settlement: {
            chain_id: item.chainId,
            tx_hash: item.txHash,
            block_number: item.blockNumber === null ? null : Number(item.blockNumber),
            reason: item.reason,
          },
        },
        webhookUrl: null,
        createdAt: ctx.now,
      });
    }
  },

  async onFailed(db, items, ctx) {
    for (const item of items) {
      const row = await db
        .updateTable('payouts')
        .set({ status: 'failed', failure_reason: item.reason, failed_at: ctx.now })
        .where('id', '=', item.transfer.source_id)
        .where('status', '=', 'queued')
        .returningAll()
        .executeTakeFirst();
      if (!row) continue;
      await insertEvent(db, {
        accountId: row.account_id,
        livemode: row.livemode,
        type: 'payout.failed',
        objectId: row.id,
        data: { object: presentPayout(row), reference: row.reference, reason: item.reason },
        webhookUrl: null,
        createdAt: ctx.now,
      });
    }
  },
};
