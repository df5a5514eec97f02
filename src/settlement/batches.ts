// Settlement batches: planning (queued transfers → one netted BatchPayout call), and the ways a
// batch ends, each one run of a system tool (tools/system/settlement-batches.ts), which makes the
// money moves: confirmed (transfers confirmed, ledger in-flight → treasury, per-kind outcomes:
// payment settled + event), failed (transfers released for a new attempt, or failed for good with
// their money returned) or undone by a reorg. This file chooses what to batch and when; each step of
// a batch's rows is a system tool's run too (plan_settlement_batch, replan_settlement_batches), and
// every write is in src/db/money-writes/settlement-batches.ts.

import type { Transaction } from 'kysely';
import { getAddress, type Hex } from 'viem';
import { encodeBatchPayout } from '../chain/chain.ts';
import { runSystemTool, runSystemToolIn } from '../pipeline/system-runs.ts';
import type { Database, Db } from '../db/database.ts';
import type { SettlementBatchRow, TransferRow } from '../db/tables/settlement.ts';
import { sentBatchesOnGoneDevnets } from '../db/repositories/settlement-batches.ts';
import { lockDueTransfers, queuedTransferWindow } from '../db/repositories/transfers.ts';
import { testMoneyMayMoveOn, testMoneyRefusal } from '../chain/test-networks.ts';
import type { ChainSession } from './chain-session.ts';
import type { SettlementContext } from './context.ts';
import { isServiceContract } from '../domain/recipients.ts';
import { type BatchLine, netTransfers } from './transfers.ts';
import { type BatchFailure, type BatchReceipt, receiptInput } from '../domain/batch-receipts.ts';
import {
  type BatchChainFacts,
  confirmSettlementBatch,
  failQueuedTransfers,
  failSettlementBatch,
  revertSettlementBatch,
} from '../../tools/system/settlement-batches.ts';
import { planSettlementBatch } from '../../tools/system/plan-settlement-batch.ts';
import { finalizeGoneDevnetBatches, replanSettlementBatches } from '../../tools/system/replan-settlement-batches.ts';

/**
 * The longest reason a batch's outcome records (a node's error text can be long; a reason the
 * outcome tool refuses would keep the batch from ever ending).
 */
const MAX_REASON_LENGTH = 2000;

interface StoredLine {
  recipient: string;
  amount: string;
}

export function batchLines(batch: Pick<SettlementBatchRow, 'lines'>): BatchLine[] {
  return (batch.lines as StoredLine[]).map((l) => ({ recipient: getAddress(l.recipient), amount: BigInt(l.amount) }));
}

/** The batch's calldata: a pure function of its lines and batch key, the same on every attempt. */
export function batchCalldata(session: ChainSession, batch: Pick<SettlementBatchRow, 'lines' | 'batch_key'>): Hex {
  const lines = batchLines(batch);
  return encodeBatchPayout({
    token: session.conn.tokenAddress,
    recipients: lines.map((l) => l.recipient),
    amounts: lines.map((l) => l.amount),
    batchId: batch.batch_key as Hex,
  });
}

/**
 * Groups due transfers into planned batches, each one call that pays every recipient once (netted).
 * A transfer is due when its schedule says so (due_at passed; schedules.ts) or, for instant
 * transfers (no due_at), when the adaptive window closes (instantBatchDue). Transfers are taken
 * FOR UPDATE SKIP LOCKED and moved queued → batched by compare-and-set, so two planners never put
 * one transfer in two batches. Returns the number of batches planned.
 */
export async function planBatches(ctx: SettlementContext, session: ChainSession): Promise<number> {
  let planned = 0;
  while (planned < ctx.options.maxBatchesPerTurn) {
    const made = await ctx.db.transaction().execute((trx) => planOneBatch(trx, ctx, session));
    if (made === false) break;
    if (made !== true) {
      // Transfers that must never be signed fail for good, in their own run (money back, objects
      // told). They are unlocked in between; every planner refuses the same transfers, and the run
      // fails only those still queued, so a second planner or a crash here only repeats the refusal.
      await runSystemTool(ctx.toolEnvironment, failQueuedTransfers, {
        transfer_ids: made.refuse,
        reason: made.reason.slice(0, MAX_REASON_LENGTH),
      });
    }
    planned += 1;
  }
  return planned;
}

/**
 * Whether a batch should go out now. Yes when a scheduled transfer is due (it has waited its window
 * already), or when the instant transfers fill a batch (batchMax recipients or batchMaxTransfers
 * transfers), or when the instant window closes. The window adapts to load: it closes once no
 * transfer has arrived for batchWindowMs (a quiet queue: at a trickle nothing is gained by waiting),
 * and while transfers keep arriving it stays open to net them, up to batchMaxWaitMs after the oldest
 * (the bound that keeps paid → settled within seconds). Instant ages are measured on the database's
 * clock, where created_at is written; due_at on the runtime clock, which computed it.
 */
async function batchIsDue(trx: Db, ctx: SettlementContext, now: Date): Promise<boolean> {
  const { batchMax, batchMaxTransfers, batchWindowMs, batchMaxWaitMs } = ctx.options;
  const row = await queuedTransferWindow(trx, now, { batchWindowMs, batchMaxWaitMs });
  if (!row) return false;
  if (row.scheduled) return true;
  if (row.n === 0) return false;
  return row.n >= batchMaxTransfers || row.recipients >= batchMax || row.overdue || row.quiet;
}

/** Queued transfers the planner found it must never sign, and why (failed by fail_queued_transfers). */
interface Refusal {
  refuse: string[];
  reason: string;
}

async function planOneBatch(
  trx: Transaction<Database>,
  ctx: SettlementContext,
  session: ChainSession,
): Promise<boolean | Refusal> {
  const { batchMax, batchMaxTransfers, isolateAfterAttempts } = ctx.options;
  const now = ctx.clock.now();
  if (!(await batchIsDue(trx, ctx, now))) return false;

  // Every due transfer, oldest first: instant ones (the window closed) and scheduled ones.
  const candidates = await lockDueTransfers(trx, now, batchMaxTransfers);
  if (candidates.length === 0) return false;

  // Guardrail at the side effect: tokens sent to the token or batch contract would be lost or land
  // back in the treasury behind the ledger's back. Such a transfer fails for good, before any signing.
  const refused = candidates.filter((t) => isServiceContract(t.recipient, session.conn));
  if (refused.length > 0) {
    return {
      refuse: refused.map((t) => t.id),
      reason: 'recipient is a contract of the settlement service (token or batch contract)',
    };
  }
  // And test-mode money never becomes tokens off a test network, whatever queued it (the tools
  // refuse it first; this is the last place before signing).
  if (!testMoneyMayMoveOn(session.conn)) {
    const testMoney = candidates.filter((t) => !t.livemode);
    if (testMoney.length > 0) return { refuse: testMoney.map((t) => t.id), reason: testMoneyRefusal(session.conn) };
  }

  // A transfer that already sank batches goes alone, so that one bad recipient cannot keep failing
  // everyone else's transfers.
  const retried = candidates.find((t) => t.attempts >= isolateAfterAttempts);
  const chosen = retried
    ? [retried]
    : firstRecipients(
        candidates.filter((t) => t.asset === session.asset),
        batchMax,
      );
  if (chosen.length === 0) return false;

  const lines = netTransfers(chosen);
  const total = lines.reduce((sum, l) => sum + l.amount, 0n);
  const { batch_id: id } = await runSystemToolIn(trx, ctx.toolEnvironment, planSettlementBatch, {
    asset: session.asset,
    transfer_ids: chosen.map((t) => t.id),
    lines: lines.map((l) => ({ recipient: l.recipient, amount: l.amount.toString() })),
  });
  ctx.logger.debug({ batch: id, transfers: chosen.length, recipients: lines.length, total }, 'batch planned');
  return true;
}

/** The chain facts a settlement batch's outcome tools need (tools/system/transfer-outcomes.ts). */
export function chainFacts(session: ChainSession): BatchChainFacts {
  return {
    key: session.key,
    chain_id: session.chainId,
    ephemeral: session.ephemeral,
    confirmations: session.conn.confirmations,
    batch_address: session.conn.batchAddress,
    asset: session.asset,
    relayer: session.relayer,
  };
}

/**
 * The batch's transaction is mined, succeeded and has the configured confirmations: one run of
 * confirm_settlement_batch records everything (tools/system/). A batch no longer `sent` (another
 * worker did it) is left alone. Returns whether this call confirmed it.
 */
export async function confirmBatch(
  ctx: SettlementContext,
  session: ChainSession,
  batchId: string,
  receipt: BatchReceipt,
): Promise<boolean> {
  const result = await runSystemTool(ctx.toolEnvironment, confirmSettlementBatch, {
    batch_id: batchId,
    chain: chainFacts(session),
    receipt: receiptInput(receipt),
  });
  if (result.confirmed) {
    ctx.logger.info(
      { batch: batchId, tx: receipt.hash, transfers: result.transfers.length, gasUsed: receipt.gasUsed },
      'settlement batch confirmed',
    );
  }
  return result.confirmed;
}

/**
 * A confirmed batch whose transaction a reorg took off the chain (its block is no longer the
 * chain's, and its transaction is not mined deep enough anywhere else): back in flight, in one run
 * of revert_settlement_batch (tools/system/). The batch is `sent` again with its stored signed
 * transactions live again (the tracker re-broadcasts the same bytes; the contract pays a batch id
 * once, so whichever lands pays once). Returns whether this call reverted it.
 */
export async function revertConfirmedBatch(
  ctx: SettlementContext,
  session: ChainSession,
  batchId: string,
  reason: string,
): Promise<boolean> {
  const result = await runSystemTool(ctx.toolEnvironment, revertSettlementBatch, {
    batch_id: batchId,
    chain: chainFacts(session),
    holder: ctx.holder,
    reason: reason.slice(0, MAX_REASON_LENGTH),
  });
  if (!result.reverted) return false;
  // Broadcast again at once, not after rebroadcastAfterMs: this process's memory of having sent
  // them is about a chain that no longer has them.
  for (const tx of result.live) ctx.broadcastHere.delete(`${tx.chain_key}/${tx.hash}`);
  ctx.logger.error(
    {
      batch: batchId,
      tx: result.tx_hash,
      block: result.block_number,
      blockHash: result.block_hash,
      transfers: result.transfers.length,
      reason,
    },
    'reorg: a confirmed settlement batch is back in flight; its signed transaction will be broadcast again',
  );
  return true;
}

/**
 * The batch can never pay: its transaction reverted, or its nonce was used by a transaction that is
 * not one of its own, or it would revert before anything was signed. `expected` is the status the
 * caller saw (planned or sent). One run of fail_settlement_batch (tools/system/) puts its transfers
 * back in the queue for a new batch (a new batch id), or fails them for good after
 * maxTransferAttempts. Returns whether this call recorded the failure.
 */
export async function failBatch(
  ctx: SettlementContext,
  batchId: string,
  expected: 'planned' | 'sent',
  failure: BatchFailure,
): Promise<boolean> {
  const result = await runSystemTool(ctx.toolEnvironment, failSettlementBatch, {
    batch_id: batchId,
    expected,
    reason: failure.reason.slice(0, MAX_REASON_LENGTH),
    ...(failure.reverted ? { reverted: receiptInput(failure.reverted) } : {}),
    max_transfer_attempts: ctx.options.maxTransferAttempts,
  });
  if (result.failed) {
    ctx.logger.warn(
      { batch: batchId, reason: failure.reason, released: result.released.length, failed: result.transfers.length },
      'settlement batch failed',
    );
  }
  return result.failed;
}

/**
 * Batches sent on an in-process devnet that no longer exists (its process ended: no live lease on
 * that chain) go back to `planned` with the same batch id, to be signed again on the current chain.
 * That is safe because the old chain, with any transaction that was on it, is gone; on the new chain
 * the contract has never seen the batch id. Chains reached over RPC are never treated this way.
 */
export async function replanBatchesFromGoneChains(ctx: SettlementContext, session: ChainSession): Promise<number> {
  const orphans = await sentBatchesOnGoneDevnets(ctx.db, session.key);
  let moved = 0;
  for (const orphan of orphans) {
    const { replanned } = await runSystemTool(ctx.toolEnvironment, replanSettlementBatches, {
      batch_ids: [orphan.id],
      chain_key: orphan.chain_key,
      reason: 'the in-process devnet this was signed for is gone',
    });
    moved += replanned.length;
  }
  if (moved > 0) ctx.logger.warn({ batches: moved }, 'batches from a devnet that is gone will be sent again here');
  // A gone devnet can no longer reorganise anything: its confirmed batches are as final as they get.
  await runSystemTool(ctx.toolEnvironment, finalizeGoneDevnetBatches, { current_chain_key: session.key });
  return moved;
}

/**
 * The transfers to the first `max` recipients, in queue order: a batch pays each recipient one
 * line (everything due to an address nets into one), and its gas grows with lines, not transfers.
 */
function firstRecipients(transfers: readonly TransferRow[], max: number): TransferRow[] {
  const recipients = new Set<string>();
  return transfers.filter((t) => {
    const key = t.recipient.toLowerCase();
    if (recipients.has(key)) return true;
    if (recipients.size >= max) return false;
    recipients.add(key);
    return true;
  });
}
