// The reorg watch. A batch is confirmed at the configured depth from its receipt; it is final only
// while the block it was mined in is still the chain's at that height. Confirmed batches are
// re-checked until they are `finalityDepth` blocks deep (ChainConnection.finalityDepth, per chain:
// src/chain/chain.ts chainSafetyDepths); one whose block was replaced and whose transaction is not
// mined deep enough elsewhere goes back in flight (revertConfirmedBatch), and the tracker sends
// its stored signed bytes again.
//
// Cost: a quiet turn (same head as last time, last pass complete) reads nothing. Blocks form a hash
// chain, so a matching higher block vouches for lower ones for detection, and a new head reads
// about one block; a batch is only declared final from a read of its own block, once per batch.

import { BlockNotFoundError, type Hex } from 'viem';
import type { ChainConnection } from '../chain/chain.ts';
import { recordSettlementReorg } from '../metrics/metrics.ts';
import { revertConfirmedBatch } from './batches.ts';
import type { ChainSession } from './chain-session.ts';
import type { SettlementContext } from './context.ts';
import { errorMessage, receiptOf } from './relayer.ts';
import { runSystemTool } from '../pipeline/system-runs.ts';
import { confirmedBatchesNotFinal } from '../db/repositories/settlement-batches.ts';
import {
  finalizeSettlementBatches,
  recordSettlementBatchBlock,
} from '../../tools/system/confirmed-settlement-batches.ts';

export interface ChainHead {
  number: bigint;
  hash: Hex;
}

/** The chain's newest block. */
export async function readHead(conn: ChainConnection): Promise<ChainHead> {
  const block = await conn.publicClient.getBlock({ blockTag: 'latest' });
  if (block.number === null || block.hash === null) throw new Error('the node returned a pending block as latest');
  return { number: block.number, hash: block.hash };
}

export interface WatchResult {
  /** Batches that went back in flight. */
  reverted: number;
  /**
   * Every batch at or below the head was looked at and answered. When false (a block or receipt the
   * node did not return, a check that threw), the caller must look again at this head.
   */
  complete: boolean;
}

/**
 * Re-checks the confirmed, not yet final batches of this chain against the chain's blocks.
 *
 * Finality is only ever granted from the batch's own block: its stored (block_number, block_hash)
 * must be the chain's now (one read per height, cached). The hash-chain shortcut (a matching higher
 * block vouches for lower ones) only skips detection work for batches not yet deep enough: stored
 * hashes need not all lie on one chain (the tracker can confirm on a new branch right after a pass).
 * A block the node does not return (a lagging node behind a load balancer) is not a replacement:
 * only a different hash at that height is.
 */
export async function watchConfirmedBatches(
  ctx: SettlementContext,
  session: ChainSession,
  head: ChainHead,
): Promise<WatchResult> {
  // The oldest first (they reach finality first); walked from the highest for the shortcut.
  const watched = (await confirmedBatchesNotFinal(ctx.db, session.key)).reverse();
  if (watched.length === 0) return { reverted: 0, complete: true };
  const { confirmations, finalityDepth } = session.conn;
  const need = BigInt(Math.max(finalityDepth, confirmations));
  const client = session.conn.publicClient;
  const canonical = new Map<bigint, Hex | null>();
  const hashAt = async (height: bigint): Promise<Hex | null> => {
    if (!canonical.has(height)) {
      try {
        canonical.set(height, (await client.getBlock({ blockNumber: height })).hash);
      } catch (error) {
        if (!(error instanceof BlockNotFoundError)) throw error;
        canonical.set(height, null);
      }
    }
    return canonical.get(height) ?? null;
  };

  let reverted = 0;
  let complete = true;
  let verifiedUpTo = -1n;
  const final: string[] = [];
  for (const batch of watched) {
    const height = batch.block_number;
    if (height === null || batch.block_hash === null || batch.tx_hash === null) {
      // Confirmed without a recorded block (cannot happen from this code on): nothing to compare.
      final.push(batch.id);
      continue;
    }
    // A node behind us (or a chain that is momentarily shorter) says nothing about the block yet.
    if (height > head.number) {
      complete = false;
      continue;
    }
    const deep = head.number - height + 1n >= need;
    if (!deep && height <= verifiedUpTo) continue;
    try {
      const hash = await hashAt(height);
      if (hash === null) {
        // Not found is not replaced: look again later.
        complete = false;
        continue;
      }
      if (hash.toLowerCase() === batch.block_hash.toLowerCase()) {
        if (height > verifiedUpTo) verifiedUpTo = height;
        if (deep) final.push(batch.id);
        continue;
      }
      const outcome = await handleReplacedBlock(ctx, session, head, batch as WatchedBatch, hash);
      if (outcome === 'reverted') {
        reverted += 1;
        recordSettlementReorg();
      } else if (outcome === 'later') {
        complete = false;
      }
    } catch (error) {
      complete = false;
      ctx.logger.warn({ batch: batch.id, err: errorMessage(error) }, 'could not re-check a confirmed batch this turn');
    }
  }
  if (final.length > 0) await markFinal(ctx, session, final);
  return { reverted, complete };
}

interface WatchedBatch {
  id: string;
  tx_hash: string;
  block_number: bigint;
  block_hash: string;
}

/**
 * The batch's block is no longer the chain's (`seen` is the chain's hash at that height). If the
 * batch's own transaction is mined at the configured depth in another block of the chain, the
 * settlement stands and only its block is updated. Anything else goes back in flight, including a
 * fee-bumped sibling mined in its place: the settlement's recorded facts (transaction hash, gas,
 * events) name the transaction that is gone, so the tracker re-confirms from the sibling's receipt.
 * 'later' when the node gave an answer that does not add up (look again next time).
 */
async function handleReplacedBlock(
  ctx: SettlementContext,
  session: ChainSession,
  head: ChainHead,
  batch: WatchedBatch,
  seen: Hex,
): Promise<'stays' | 'reverted' | 'later'> {
  const receipt = await receiptOf(session, batch.tx_hash as Hex);
  // The node still places it in the replaced block: its answers disagree (a lagging backend).
  if (receipt && receipt.blockHash.toLowerCase() === batch.block_hash.toLowerCase()) return 'later';
  if (receipt?.status === 'success') {
    let block: Hex | null;
    try {
      block = (await session.conn.publicClient.getBlock({ blockNumber: receipt.blockNumber })).hash;
    } catch (error) {
      if (!(error instanceof BlockNotFoundError)) throw error;
      return 'later';
    }
    if (block === null || block.toLowerCase() !== receipt.blockHash.toLowerCase()) return 'later';
    if (head.number - receipt.blockNumber + 1n >= BigInt(session.conn.confirmations)) {
      await runSystemTool(ctx.toolEnvironment, recordSettlementBatchBlock, {
        batch_id: batch.id,
        chain_key: session.key,
        tx_hash: batch.tx_hash,
        block_number: receipt.blockNumber.toString(),
        block_hash: receipt.blockHash,
      });
      ctx.logger.warn(
        { batch: batch.id, from: batch.block_hash, to: receipt.blockHash, block: receipt.blockNumber },
        'reorg: a confirmed batch was mined again in another block, deep enough; it stays confirmed',
      );
      return 'stays';
    }
  }
  const reverted = await revertConfirmedBatch(
    ctx,
    session,
    batch.id,
    `reorg: block ${batch.block_number} (${batch.block_hash}) is no longer the chain's (now ${seen}) and transaction ${batch.tx_hash} is not mined ${session.conn.confirmations} deep in another block`,
  );
  return reverted ? 'reverted' : 'later';
}

async function markFinal(ctx: SettlementContext, session: ChainSession, ids: readonly string[]): Promise<void> {
  await runSystemTool(ctx.toolEnvironment, finalizeSettlementBatches, { chain_key: session.key, batch_ids: ids });
}
