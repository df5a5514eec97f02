// A settlement batch's own rows through its life: planned, sent, its block recorded again after a
// reorg, final, re-planned when its chain is gone, and how it ends (paid, undone, failed), as the
// system tools write them in their runs (tools/system/): the batch and its signed transactions,
// next to the money they move. Only tools/ imports this (test/architecture.test.ts).

import { sql } from 'kysely';
import type { BatchFailure, BatchReceipt } from '../../domain/batch-receipts.ts';
import type { Db } from '../database.ts';

/** A batch's netted line: one recipient, paid once, the amount as decimal digits. */
export interface StoredBatchLine {
  recipient: string;
  amount: string;
}

/**
 * A new batch, `planned`, and which transfers it carries (in the planner's transaction, which holds
 * them locked). Its batch key, the id the contract pays once, is the caller's.
 */
export async function recordBatchPlanned(
  trx: Db,
  batch: {
    id: string;
    batchKey: string;
    asset: string;
    lines: readonly StoredBatchLine[];
    transferIds: readonly string[];
  },
): Promise<void> {
  await trx
    .insertInto('settlement_batches')
    .values({
      id: batch.id,
      batch_key: batch.batchKey,
      asset: batch.asset,
      status: 'planned',
      chain_key: null,
      lines: JSON.stringify(batch.lines),
      total_minor: batch.lines.reduce((sum, l) => sum + BigInt(l.amount), 0n),
      transfer_count: batch.transferIds.length,
    })
    .execute();
  await trx
    .insertInto('settlement_batch_transfers')
    .values(batch.transferIds.map((transferId) => ({ batch_id: batch.id, transfer_id: transferId })))
    .execute();
}

/**
 * The batch signed for this chain and its signed transaction stored (in the relayer's transaction
 * that stored it, before its first broadcast): `sent` from here on.
 */
export async function recordBatchSent(trx: Db, batchId: string, chainKey: string): Promise<void> {
  await trx
    .updateTable('settlement_batches')
    .set({
      status: 'sent',
      chain_key: chainKey,
      sent_at: sql`now()`,
      nonce_used_at: null,
      updated_at: sql`now()`,
    })
    .where('id', '=', batchId)
    .execute();
}

/**
 * Whether a sent batch's nonce is used on chain with no successful receipt of its own (since now),
 * or free again (a reorg took away what used it). The stuck-batch alarm waits longer for the first.
 */
export async function recordBatchNonceUsed(db: Db, batchId: string, used: boolean): Promise<void> {
  await db
    .updateTable('settlement_batches')
    .set({ nonce_used_at: used ? sql`now()` : null })
    .where('id', '=', batchId)
    .where('status', '=', 'sent')
    .execute();
}

/**
 * A confirmed batch's own transaction mined again, deep enough, in another block after a reorg: the
 * batch and its transaction record the new block together; the settlement stands.
 */
export async function recordBatchMinedAgain(
  trx: Db,
  mined: { batchId: string; chainKey: string; txHash: string; blockNumber: bigint; blockHash: string },
): Promise<void> {
  await trx
    .updateTable('settlement_batches')
    .set({ block_number: mined.blockNumber, block_hash: mined.blockHash, updated_at: sql`now()` })
    .where('id', '=', mined.batchId)
    .where('status', '=', 'confirmed')
    .where('tx_hash', '=', mined.txHash)
    .execute();
  await trx
    .updateTable('chain_transactions')
    .set({ block_number: mined.blockNumber, block_hash: mined.blockHash })
    .where('chain_key', '=', mined.chainKey)
    .where('hash', '=', mined.txHash)
    .execute();
}

/**
 * Confirmed batches of a chain that no reorg will undo any more: those named, or, without names,
 * every one of that chain (a chain settlement no longer follows). The reorg watch stops there.
 */
export async function recordBatchesFinal(db: Db, chainKey: string, batchIds?: readonly string[]): Promise<void> {
  let update = db
    .updateTable('settlement_batches')
    .set({ finalized_at: sql`now()`, updated_at: sql`now()` })
    .where('status', '=', 'confirmed')
    .where('chain_key', '=', chainKey)
    .where('finalized_at', 'is', null);
  if (batchIds) update = update.where('id', 'in', batchIds);
  await update.execute();
}

/**
 * Confirmed batches of an in-process devnet that is gone (ephemeral, not the current chain, no live
 * lease on it): a chain that no longer exists can reorganise nothing, so they are final.
 */
export async function recordGoneDevnetBatchesFinal(db: Db, currentChainKey: string): Promise<void> {
  await sql`
    update settlement_batches b set finalized_at = now(), updated_at = now()
     where b.status = 'confirmed' and b.finalized_at is null and b.chain_key <> ${currentChainKey}
       and exists (select 1 from chains c where c.chain_key = b.chain_key and c.ephemeral)
       and not exists (select 1 from relayer_leases l where l.chain_key = b.chain_key and l.expires_at > now())`.execute(
    db,
  );
}

/**
 * Sent batches whose chain is gone for good, back to `planned` with the same batch id, to be signed
 * on the current chain; their unmined transactions are dropped with the reason. (Their transfers go
 * back to `batched` with them: rebatchSentTransfers.)
 */
export async function recordBatchesReplanned(trx: Db, batchIds: readonly string[], reason: string): Promise<void> {
  await trx
    .updateTable('settlement_batches')
    .set({ status: 'planned', chain_key: null, sent_at: null, updated_at: sql`now()` })
    .where('id', 'in', batchIds)
    .execute();
  await trx
    .updateTable('chain_transactions')
    .set({ status: 'dropped', last_error: reason })
    .where('batch_id', 'in', batchIds)
    .where('status', 'in', ['signed', 'broadcast'])
    .execute();
}

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
