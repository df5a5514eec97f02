// A settlement batch's own rows once it ends: the batch and its signed transactions, as the system
// tools that record the outcome write them in their run (tools/system/settlement-batches.ts), next
// to the money they move. Only tools/ imports this (test/architecture.test.ts).

import { sql } from 'kysely';
import type { BatchFailure, BatchReceipt } from '../../domain/batch-receipts.ts';
import type { Db } from '../database.ts';

/** What a receipt says about the mined transaction, as the batch row records it. */
function batchReceiptColumns(receipt: BatchReceipt) {
  return {
    tx_hash: receipt.hash,
    block_number: receipt.blockNumber,
    block_hash: receipt.blockHash,
    gas_used: receipt.gasUsed,
    effective_gas_price: receipt.effectiveGasPrice,
    gas_cost_wei: (receipt.gasUsed * receipt.effectiveGasPrice).toString(),
  };
}

/** Marks the mined transaction of a receipt (mined, or mined and reverted) on its chain_transactions row. */
async function recordMinedTransaction(trx: Db, receipt: BatchReceipt, status: 'mined' | 'reverted'): Promise<void> {
  await trx
    .updateTable('chain_transactions')
    .set({
      status,
      block_number: receipt.blockNumber,
      block_hash: receipt.blockHash,
      gas_used: receipt.gasUsed,
      effective_gas_price: receipt.effectiveGasPrice,
    })
    .where('chain_key', '=', receipt.chainKey)
    .where('hash', '=', receipt.hash)
    .execute();
}

/**
 * The batch row and its transactions once the batch is paid on chain (in confirm_settlement_batch's
 * run): confirmed with the receipt's facts, the mined transaction marked, its unmined siblings
 * (same nonce, other fees) replaced.
 */
export async function recordBatchPaid(
  trx: Db,
  batchId: string,
  receipt: BatchReceipt,
  ephemeral: boolean,
): Promise<void> {
  await trx
    .updateTable('settlement_batches')
    .set({
      status: 'confirmed',
      ...batchReceiptColumns(receipt),
      finished_at: sql`now()`,
      // The in-process devnet does not reorganise (and makes no blocks when quiet, so a finality
      // depth would never be reached): final at once, nothing for the reorg watch.
      finalized_at: ephemeral ? sql`now()` : null,
      nonce_used_at: null,
      updated_at: sql`now()`,
    })
    .where('id', '=', batchId)
    .execute();
  await recordMinedTransaction(trx, receipt, 'mined');
  await trx
    .updateTable('chain_transactions')
    .set({ status: 'replaced' })
    .where('batch_id', '=', batchId)
    .where('hash', '!=', receipt.hash)
    .where('status', 'in', ['signed', 'broadcast'])
    .execute();
}

/**
 * The batch row and its transactions once a reorg undid its confirmation (in
 * revert_settlement_batch's run): `sent` again, and every signed transaction of it live again (same
 * nonce, same calldata; siblings differ only in fees; none is re-signed). Returns those transactions.
 */
export async function recordBatchUnpaid(
  trx: Db,
  batchId: string,
  chainKey: string,
  reason: string,
): Promise<{ chain_key: string; hash: string }[]> {
  await trx
    .updateTable('settlement_batches')
    .set((eb) => ({
      status: 'sent',
      tx_hash: null,
      block_number: null,
      block_hash: null,
      gas_used: null,
      effective_gas_price: null,
      gas_cost_wei: null,
      finished_at: null,
      // In flight again from now: the stuck-batch alarm counts from here.
      sent_at: sql`now()`,
      nonce_used_at: null,
      reorg_count: eb('reorg_count', '+', 1),
      updated_at: sql`now()`,
    }))
    .where('id', '=', batchId)
    .execute();
  return trx
    .updateTable('chain_transactions')
    .set({
      status: 'broadcast',
      block_number: null,
      block_hash: null,
      gas_used: null,
      effective_gas_price: null,
      last_error: reason.slice(0, 500),
    })
    .where('batch_id', '=', batchId)
    .where('chain_key', '=', chainKey)
    .where('status', 'in', ['mined', 'replaced'])
    .returning(['chain_key', 'hash'])
    .execute();
}

/**
 * The batch row and its transactions once it can never pay (in fail_settlement_batch's run):
 * failed with the reason (and the reverted receipt's facts), unmined transactions dropped.
 */
export async function recordBatchFailed(trx: Db, batchId: string, failure: BatchFailure): Promise<void> {
  const { reverted } = failure;
  await trx
    .updateTable('settlement_batches')
    .set({
      status: 'failed',
      failure_reason: failure.reason,
      finished_at: sql`now()`,
      updated_at: sql`now()`,
      ...(reverted ? batchReceiptColumns(reverted) : {}),
    })
    .where('id', '=', batchId)
    .execute();
  if (reverted) await recordMinedTransaction(trx, reverted, 'reverted');
  await trx
    .updateTable('chain_transactions')
    .set({ status: 'dropped', last_error: failure.reason })
    .where('batch_id', '=', batchId)
    .where('status', 'in', ['signed', 'broadcast'])
    .execute();
}
