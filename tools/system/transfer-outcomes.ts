// What happens to the object behind a transfer when the transfer ends. One handler per transfer kind,
// listed in one map (no registration at a distance). Each runs inside the system tool that records
// the outcome (confirm_settlement_batch, fail_settlement_batch, revert_settlement_batch), after the
// transfer row and the ledger have been updated, so the object's state change and its outbox event
// commit together with them or not at all.

import type { Config } from '../../src/config/config.ts';
import type { Logger } from '../../src/core/logger.ts';
import type { Db } from '../../src/db/database.ts';
import type { TransferKind, TransferRow } from '../../src/db/tables/settlement.ts';
import { paymentSettlementHandler } from './payment-settlement-outcomes.ts';
import { payoutTransferHandler } from './payout-outcomes.ts';

export interface TransferOutcomeContext {
  config: Config;
  logger: Logger;
  /** Business time of the outcome (the runtime's clock). */
  now: Date;
}

export interface ConfirmedTransfer {
  /** The transfer, already `confirmed`. Its money moved in-flight → treasury in the same transaction. */
  transfer: TransferRow;
  batchId: string;
  chainId: number;
  txHash: `0x${string}`;
  blockNumber: bigint;
  /** This transfer's share of the batch's gas (the batch's gasUsed split evenly over its transfers). */
  gasUsed: bigint;
  /** gasUsed × the transaction's effective gas price: what the service paid for this transfer. */
  gasCostWei: bigint;
  confirmations: number;
}

export interface FailedTransfer {
  /** The transfer, already `failed`. Its money moved in-flight → transfer.from_ledger_account. */
  transfer: TransferRow;
  reason: string;
}

export interface RevertedTransfer {
  /** The transfer, `sent` again. Its money moved treasury → in-flight in the same transaction. */
  transfer: TransferRow;
  batchId: string;
  chainId: number;
  /** The transaction that had confirmed it and is no longer on the chain (at depth). */
  txHash: `0x${string}`;
  blockNumber: bigint | null;
  reason: string;
}

export interface TransferHandler {
  onConfirmed(db: Db, items: readonly ConfirmedTransfer[], ctx: TransferOutcomeContext): Promise<void>;
  onFailed(db: Db, items: readonly FailedTransfer[], ctx: TransferOutcomeContext): Promise<void>;
  /**
   * A reorg took the confirming transaction off the chain: the object goes back to its in-flight
   * status, and if its settlement was announced, a correcting event says so. onConfirmed runs
   * again when the batch lands again.
   */
  onReverted(db: Db, items: readonly RevertedTransfer[], ctx: TransferOutcomeContext): Promise<void>;
}

export type TransferHandlers = Readonly<Record<TransferKind, TransferHandler>>;

/**
 * For kinds whose owning feature has no object to move on chain outcomes (refunds are paid back on
 * the payer's rail today): the transfer row and the ledger already record the outcome; this logs it.
 */
function recordOnly(kind: TransferKind): TransferHandler {
  return {
    async onConfirmed(_db, items, ctx) {
      ctx.logger.info({ kind, transfers: items.map((i) => i.transfer.id) }, 'transfers confirmed');
    },
    async onFailed(_db, items, ctx) {
      ctx.logger.warn({ kind, transfers: items.map((i) => i.transfer.id) }, 'transfers failed');
    },
    async onReverted(_db, items, ctx) {
      ctx.logger.warn({ kind, transfers: items.map((i) => i.transfer.id) }, 'transfer confirmations undone by a reorg');
    },
  };
}

export const TRANSFER_HANDLERS: TransferHandlers = {
  payment_settlement: paymentSettlementHandler,
  // A revenue-share leg is a payout row too (src/payouts): one handler for both.
  payout: payoutTransferHandler,
  split_leg: payoutTransferHandler,
  refund: recordOnly('refund'),
};
