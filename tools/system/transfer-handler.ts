// What a transfer handler is given and must do when a transfer ends: the shape each kind's handler
// (payment-settlement-outcomes.ts, payout-outcomes.ts) implements and transfer-outcomes.ts lists.
// Apart from that list, so that the handlers and the list do not import each other.

import type { Config } from '../../src/config/config.ts';
import type { Logger } from '../../src/core/logger.ts';
import type { Db } from '../../src/db/database.ts';
import type { TransferKind, TransferRow } from '../../src/db/tables/settlement.ts';

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
