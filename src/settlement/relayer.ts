// The relayer: the one place that signs and sends money on-chain (sendPlannedBatches → signAndStore).
//
// - One relayer key on one chain is driven by one lease holder at a time (relayer_leases). Nonces
//   come from that row, allocated in the same database transaction that stores the signed
//   transaction, and only while the lease is held (fencing: a holder whose lease lapsed allocates
//   nothing).
// - The raw signed transaction and its hash are stored before the first broadcast. After a restart
//   whatever is stored and unmined is broadcast again, byte for byte; nothing is re-signed.
// - A fee bump signs the same nonce and the same calldata with higher fees, stored as a sibling row.
// - A batch is confirmed from the receipt of whichever of its transactions succeeded, at the
//   configured depth, and watched for reorgs until the finality depth (reorgs.ts). It is declared
//   failed only when no transaction of it can ever land: its nonce is consumed by a block at the
//   finality depth (a reorg could undo anything shallower) and the contract says its batch id is
//   unpaid there. Only then are its transfers released into a new batch with a new batch id; the
//   contract refuses a paid batch id on any nonce, so no transaction of one batch pays twice.

import {
  type Address,
  BaseError,
  decodeErrorResult,
  type Hex,
  parseEventLogs,
  parseTransaction,
  TransactionReceiptNotFoundError,
  type TransactionReceipt,
} from 'viem';
import {
  BroadcastError,
  broadcastRawTransaction,
  estimateBatchGas,
  estimateFees,
  isBatchPaid,
  readTreasuryBalance,
  signRelayerTransaction,
} from '../chain/chain.ts';
import { batchPayoutAbi } from '../chain/contracts/abis.ts';
import type { Db } from '../db/database.ts';
import type { ChainTransactionRow, SettlementBatchRow } from '../db/tables/settlement.ts';
import type { BatchReceipt } from '../domain/batch-receipts.ts';
import { batchCalldata, confirmBatch, failBatch } from './batches.ts';
import { type ChainSession, leaseKey } from './chain-session.ts';
import type { SettlementContext } from './context.ts';
import {
  insertChainTransaction,
  recordBroadcast,
  recordBroadcastRefused,
  type TrackedTransaction,
  trackedBatchTransactions,
} from '../db/repositories/chain-transactions.ts';
import { holdsLease, lockRelayerLeaseNonce, setNextNonce } from '../db/repositories/relayer-leases.ts';
import { insertRelayerNonce, type NonceOwner } from '../db/repositories/relayer-nonces.ts';
import { lockBatchStatus, plannedBatches, sentBatchesToFollow } from '../db/repositories/settlement-batches.ts';
import { runSystemTool, runSystemToolIn } from '../pipeline/system-runs.ts';
import { recordSettlementBatchNonce, recordSettlementBatchSent } from '../../tools/system/send-settlement-batch.ts';

// ---------------------------------------------------------------------------------------------------
// Nonces

/**
 * Hands out the next nonce to `owner`, in the caller's transaction, only while this worker holds
 * the lease (checked under the row lock). Skips ahead when the chain shows the key used nonces we
 * did not hand out (another tool used the key). Undefined when the lease is not ours.
 */
export async function allocateNonce(
  trx: Db,
  ctx: SettlementContext,
  session: ChainSession,
  owner: NonceOwner,
  chainNonce: bigint,
): Promise<bigint | undefined> {
  const key = leaseKey(session);
  const lease = await lockRelayerLeaseNonce(trx, key, ctx.holder);
  if (!lease?.held) return undefined;
  const nonce = lease.next_nonce > chainNonce ? lease.next_nonce : chainNonce;
  await insertRelayerNonce(trx, key, nonce, owner);
  await setNextNonce(trx, key, nonce + 1n);
  return nonce;
}

// ---------------------------------------------------------------------------------------------------
// Signing and sending

interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

/** Signs locally and stores the raw transaction and hash, in the caller's transaction, before any broadcast. */
export async function signAndStore(
  trx: Db,
  session: ChainSession,
  owner: NonceOwner,
  tx: { nonce: bigint; data: Hex; gas: bigint; to?: Address } & Fees,
): Promise<ChainTransactionRow> {
  // A batch goes to the batch contract; an authorization to the token (transferWithAuthorization).
  const signed = await signRelayerTransaction(session.conn, {
    to: tx.to ?? session.conn.batchAddress,
    nonce: Number(tx.nonce),
    data: tx.data,
    gas: tx.gas,
    maxFeePerGas: tx.maxFeePerGas,
    maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
  });
  return await insertChainTransaction(trx, {
    hash: signed.hash,
    chain_key: session.key,
    relayer_address: session.relayer,
    nonce: tx.nonce,
    ...owner,
    raw_transaction: signed.rawTransaction,
    gas_limit: tx.gas,
    max_fee_per_gas: tx.maxFeePerGas,
    max_priority_fee_per_gas: tx.maxPriorityFeePerGas,
    status: 'signed',
    last_error: null,
    block_number: null,
    block_hash: null,
    gas_used: null,
    effective_gas_price: null,
  });
}

/**
 * Signs, stores and broadcasts every planned batch (oldest first). This is the only function that
 * puts a new payout on chain. Returns how many batches it sent.
 */
export async function sendPlannedBatches(ctx: SettlementContext, session: ChainSession): Promise<number> {
  const planned = await plannedBatches(ctx.db, ctx.options.maxBatchesPerTurn);
  let sent = 0;
  for (const batch of planned) {
    const data = batchCalldata(session, batch);
    const owner: NonceOwner = { batch_id: batch.id };
    let gas: bigint;
    try {
      gas = await estimateBatchGas(session.conn, data);
    } catch (error) {
      if (!isExecutionRevert(error)) throw error;
      await handleUnsendable(ctx, session, batch, error);
      continue;
    }
    const [fees, chainNonce] = await Promise.all([
      estimateFees(session.conn),
      session.conn.publicClient.getTransactionCount({ address: session.relayer, blockTag: 'pending' }),
    ]);
    const stored = await ctx.db.transaction().execute(async (trx) => {
      if ((await lockBatchStatus(trx, batch.id)) !== 'planned') return null;
      const nonce = await allocateNonce(trx, ctx, session, owner, BigInt(chainNonce));
      if (nonce === undefined) return 'lease_lost' as const;
      const row = await signAndStore(trx, session, owner, {
        nonce,
        data,
        gas,
        maxFeePerGas: fees.maxFeePerGas,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      });
      // "sent" from here on, with the stored bytes: a signed transaction exists and may land, so
      // these transfers stay with this batch until it is confirmed or provably dead.
      await runSystemToolIn(trx, ctx.toolEnvironment, recordSettlementBatchSent, {
        batch_id: batch.id,
        chain_key: session.key,
      });
      return row;
    });
    if (stored === 'lease_lost') break;
    if (stored === null) continue;
    sent += 1;
    // When the node did not take it, later nonces would only pile up behind the gap: stop here;
    // tracking re-sends the stored transactions in nonce order on the next turn.
    if ((await broadcastStored(ctx, session, stored)) !== 'ok') break;
  }
  return sent;
}

/** A planned batch whose gas estimate reverts: nothing was signed, so it is safe to drop it. */
async function handleUnsendable(
  ctx: SettlementContext,
  session: ChainSession,
  batch: SettlementBatchRow,
  error: unknown,
): Promise<void> {
  const reason = revertReason(error);
  if (await isBatchPaid(session.conn, batch.batch_key as Hex)) {
    // Only a transaction signed with our relayer key for this batch id could have paid it, and none
    // exists for a planned batch. Someone else holds the key: stop and let a person look.
    ctx.logger.error({ batch: batch.id }, 'planned batch is already paid on chain by a transaction we did not sign');
    return;
  }
  const treasury = await readTreasuryBalance(session.conn);
  if (treasury < batch.total_minor) {
    // Not the transfers' fault: keep the batch and try again once the treasury is topped up.
    ctx.logger.error(
      { batch: batch.id, needed: batch.total_minor.toString(), treasury: treasury.toString() },
      'treasury holds too little for the next settlement batch',
    );
    return;
  }
  await failBatch(ctx, batch.id, 'planned', { reason: `would revert: ${reason}` });
}

export type BroadcastOutcome = 'ok' | 'bump' | 'retry';

/** Broadcasts a stored transaction (again); records the outcome on its row. Never throws for node errors. */
export async function broadcastStored(
  ctx: SettlementContext,
  session: ChainSession,
  tx: Pick<ChainTransactionRow, 'chain_key' | 'hash' | 'raw_transaction'>,
): Promise<BroadcastOutcome> {
  try {
    const result = await broadcastRawTransaction(session.conn, tx.raw_transaction as Hex);
    ctx.broadcastHere.add(`${tx.chain_key}/${tx.hash}`);
    await recordBroadcast(ctx.db, tx, result.status === 'nonce_consumed' ? 'nonce used by another transaction' : null);
    return 'ok';
  } catch (error) {
    if (!(error instanceof BroadcastError)) throw error;
    await recordBroadcastRefused(ctx.db, tx, `${error.kind}: ${error.message}`.slice(0, 500));
    switch (error.kind) {
      case 'fee_too_low':
      case 'replacement_underpriced':
        return 'bump';
      case 'insufficient_funds':
        ctx.logger.error({ tx: tx.hash, relayer: session.relayer }, 'the relayer has too little ETH to pay gas');
        return 'retry';
      case 'unreachable':
        ctx.logger.warn({ tx: tx.hash }, 'node unreachable while broadcasting; will broadcast again');
        return 'retry';
      case 'nonce_too_high':
        // An earlier nonce is not on the node yet (its broadcast failed); tracking re-sends in nonce order.
        ctx.logger.debug({ tx: tx.hash }, 'broadcast waits for an earlier nonce');
        return 'retry';
      default:
        ctx.logger.warn({ tx: tx.hash, kind: error.kind, err: error.message }, 'broadcast refused');
        return 'retry';
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Tracking

/**
 * Follows every sent batch on this chain to its end: confirms it at depth, declares it failed when it
 * provably cannot land, and otherwise keeps its transaction moving (re-broadcast, fee bump).
 * Returns how many batches ended.
 */
export async function trackSentBatches(ctx: SettlementContext, session: ChainSession): Promise<number> {
  const batches = await sentBatchesToFollow(ctx.db, session.key);
  if (batches.length === 0) return 0;
  // Age for the fee bump: since the later of signing and the batch going (back) in flight, so
  // that after a reorg the same bytes are sent again first, not a bump at once.
  const txs = await trackedBatchTransactions(
    ctx.db,
    batches.map((b) => b.id),
  );
  const client = session.conn.publicClient;
  const [latestBlock, minedNonceNumber] = await Promise.all([
    client.getBlockNumber({ cacheTime: 0 }),
    client.getTransactionCount({ address: session.relayer, blockTag: 'latest' }),
  ]);
  const minedNonce = BigInt(minedNonceNumber);
  const depth = BigInt(session.conn.confirmations);
  // Declaring a batch failed releases its transfers into a new batch with a new batch id, so its
  // own transaction must never land afterwards: that is only certain once the block that consumed
  // its nonce is final. A reorg above that depth could bring back a reverted transaction (or drop
  // the one that took the nonce) and let it succeed, paying the transfers a second time. The
  // in-process devnet cannot reorganise (nothing but a test's evm_revert rewinds it) and makes no
  // blocks when quiet, so there the confirmation depth decides.
  const failureDepth = session.ephemeral ? depth : BigInt(session.conn.finalityDepth);
  let ended = 0;

  // Nonce order: a pending transaction must be on the node before the ones after it can be mined.
  const byBatch = new Map<string, typeof txs>();
  for (const tx of txs) {
    const list = byBatch.get(tx.batch_id!);
    if (list) list.push(tx);
    else byBatch.set(tx.batch_id!, [tx]);
  }
  const ordered = [...batches].sort((a, b) => {
    const na = byBatch.get(a.id)?.[0]?.nonce ?? 0n;
    const nb = byBatch.get(b.id)?.[0]?.nonce ?? 0n;
    return na < nb ? -1 : na > nb ? 1 : 0;
  });

  for (const batch of ordered) {
    const own = byBatch.get(batch.id) ?? [];
    if (own.length === 0) continue;
    const nonce = own[0]!.nonce;
    try {
      if (nonce >= minedNonce) {
        // The nonce is free again (a reorg took away what used it): no longer only waiting.
        if (batch.nonce_used_at !== null) await markNonceUsed(ctx, batch.id, false);
        await keepMoving(ctx, session, own);
        continue;
      }
      // Something with this nonce is mined: one of ours, or not.
      const receipts = await Promise.all(own.map((tx) => receiptOf(session, tx.hash as Hex)));
      const success = receipts.find((r) => r?.status === 'success');
      if (success) {
        if (latestBlock - success.blockNumber + 1n < depth) continue;
        const fresh = await receiptOf(session, success.transactionHash);
        if (fresh?.status !== 'success' || fresh.blockHash !== success.blockHash) continue; // reorg: look again
        checkPaidEvent(fresh, batch.batch_key as Hex);
        if (await confirmBatch(ctx, session, batch.id, toBatchReceipt(session, fresh))) ended += 1;
        continue;
      }
      const reverted = receipts.find((r) => r?.status === 'reverted');
      // From here on the batch only waits for depth; the stuck-batch alarm gives it longer.
      if (batch.nonce_used_at === null) await markNonceUsed(ctx, batch.id, true);
      const deepBlock = latestBlock - failureDepth + 1n;
      if (deepBlock < 0n) continue;
      if (reverted && reverted.blockNumber > deepBlock) continue;
      if (!reverted) {
        // Our transactions were not mined, yet the nonce is used: wait until that is deep as well.
        const deepNonce = await client.getTransactionCount({ address: session.relayer, blockNumber: deepBlock });
        if (BigInt(deepNonce) <= nonce) continue;
      }
      const paid = await client.readContract({
        address: session.conn.batchAddress,
        abi: batchPayoutAbi,
        functionName: 'paid',
        args: [batch.batch_key as Hex],
        blockNumber: deepBlock,
      });
      if (paid) {
        // Paid, though no receipt of ours said so (a lagging node): find the transaction by its event.
        const payer = await findPayingTransaction(session, batch.batch_key as Hex, deepBlock);
        if (payer && (await confirmBatch(ctx, session, batch.id, toBatchReceipt(session, payer)))) ended += 1;
        continue;
      }
      const failure = reverted
        ? { reason: `transaction ${reverted.transactionHash} reverted`, reverted: toBatchReceipt(session, reverted) }
        : { reason: `nonce ${nonce} was used by a transaction that is not this batch's` };
      if (await failBatch(ctx, batch.id, 'sent', failure)) ended += 1;
    } catch (error) {
      // One batch's trouble (a flaky node) must not stop the others; the next turn looks again.
      ctx.logger.warn({ batch: batch.id, err: errorMessage(error) }, 'could not follow settlement batch this turn');
    }
  }
  return ended;
}

async function markNonceUsed(ctx: SettlementContext, batchId: string, used: boolean): Promise<void> {
  await runSystemTool(ctx.toolEnvironment, recordSettlementBatchNonce, { batch_id: batchId, used });
}

/**
 * Whether a transaction's owner still wants it mined, checked under the owner's row lock in the
 * transaction that signs its fee bump. A batch's: still `sent`.
 */
export type StillInFlight = (trx: Db, tx: ChainTransactionRow) => Promise<boolean>;

const batchStillSent: StillInFlight = async (trx, tx) => (await lockBatchStatus(trx, tx.batch_id!)) === 'sent';

/**
 * An unmined batch (or authorization): make sure the node has its newest transaction (broadcast it
 * if this process never did, or again after rebroadcastAfterMs), and replace it with a higher fee
 * after feeBumpAfterMs.
 */
export async function keepMoving(
  ctx: SettlementContext,
  session: ChainSession,
  own: TrackedTransaction[],
  stillInFlight: StillInFlight = batchStillSent,
): Promise<void> {
  const newest = own[own.length - 1]!;
  const first = own[0]!;
  const stale = newest.since_broadcast_ms === null || newest.since_broadcast_ms >= ctx.options.rebroadcastAfterMs;
  let outcome: BroadcastOutcome = 'ok';
  if (!ctx.broadcastHere.has(`${newest.chain_key}/${newest.hash}`) || newest.status === 'signed' || stale) {
    outcome = await broadcastStored(ctx, session, newest);
  }
  const overdue = newest.age_ms >= ctx.options.feeBumpAfterMs;
  if (outcome === 'bump' || overdue) {
    const cap = first.max_fee_per_gas * ctx.options.maxFeeMultiplier;
    if (newest.max_fee_per_gas >= cap) {
      if (overdue)
        ctx.logger.error({ tx: newest.hash, cap: cap.toString() }, 'fee bump cap reached; transaction still unmined');
      return;
    }
    await bumpFee(ctx, session, newest, cap, stillInFlight);
  }
}

/** Replaces `tx` with the same nonce and calldata and higher fees (≥ +25%, at least the current estimate). */
async function bumpFee(
  ctx: SettlementContext,
  session: ChainSession,
  tx: ChainTransactionRow,
  cap: bigint,
  stillInFlight: StillInFlight,
): Promise<void> {
  const estimate = await estimateFees(session.conn);
  const raise = (value: bigint): bigint => (value * 125n + 99n) / 100n;
  let maxFeePerGas = max(raise(tx.max_fee_per_gas), estimate.maxFeePerGas);
  if (maxFeePerGas > cap) maxFeePerGas = cap;
  let maxPriorityFeePerGas = max(raise(tx.max_priority_fee_per_gas), estimate.maxPriorityFeePerGas);
  if (maxPriorityFeePerGas > maxFeePerGas) maxPriorityFeePerGas = maxFeePerGas;
  // The calldata comes from the stored transaction itself: a bump can never change what is paid.
  const original = parseTransaction(tx.raw_transaction as Hex);
  if (!original.data) throw new Error(`stored transaction ${tx.hash} has no calldata`);
  const data = original.data;
  const bumped = await ctx.db.transaction().execute(async (trx) => {
    if (!(await stillInFlight(trx, tx)) || !(await holdsLease(trx, ctx, session))) return null;
    const owner: NonceOwner = tx.batch_id ? { batch_id: tx.batch_id } : { authorization_id: tx.authorization_id! };
    return await signAndStore(trx, session, owner, {
      to: original.to ?? undefined,
      nonce: tx.nonce,
      data,
      gas: tx.gas_limit,
      maxFeePerGas,
      maxPriorityFeePerGas,
    });
  });
  if (!bumped) return;
  ctx.logger.info(
    {
      batch: tx.batch_id,
      authorization: tx.authorization_id,
      nonce: tx.nonce,
      replaces: tx.hash,
      tx: bumped.hash,
      maxFeePerGas,
    },
    'fee bump: same nonce, same calldata, higher fee',
  );
  await broadcastStored(ctx, session, bumped);
}

export async function receiptOf(session: ChainSession, hash: Hex): Promise<TransactionReceipt | null> {
  try {
    return await session.conn.publicClient.getTransactionReceipt({ hash });
  } catch (error) {
    if (error instanceof TransactionReceiptNotFoundError) return null;
    throw error;
  }
}

export function toBatchReceipt(session: ChainSession, receipt: TransactionReceipt): BatchReceipt {
  return {
    chainKey: session.key,
    hash: receipt.transactionHash,
    blockNumber: receipt.blockNumber,
    blockHash: receipt.blockHash,
    gasUsed: receipt.gasUsed,
    effectiveGasPrice: receipt.effectiveGasPrice,
  };
}

/** A successful payout transaction must carry BatchPaid for this batch id; anything else is a bug. */
function checkPaidEvent(receipt: TransactionReceipt, batchKey: Hex): void {
  const events = parseEventLogs({ abi: batchPayoutAbi, eventName: 'BatchPaid', logs: receipt.logs });
  if (!events.some((e) => e.args.batchId.toLowerCase() === batchKey.toLowerCase())) {
    throw new Error(`transaction ${receipt.transactionHash} succeeded without paying batch ${batchKey}`);
  }
}

async function findPayingTransaction(
  session: ChainSession,
  batchKey: Hex,
  toBlock: bigint,
): Promise<TransactionReceipt | null> {
  const logs = await session.conn.publicClient.getContractEvents({
    address: session.conn.batchAddress,
    abi: batchPayoutAbi,
    eventName: 'BatchPaid',
    args: { batchId: batchKey },
    fromBlock: 0n,
    toBlock,
  });
  const log = logs[0];
  return log ? await receiptOf(session, log.transactionHash) : null;
}

// ---------------------------------------------------------------------------------------------------
// Errors

/** True when the node says the call reverts (JSON-RPC code 3, or geth's -32000 "execution reverted"). */
export function isExecutionRevert(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 10; depth += 1) {
    const c = e as { code?: unknown; message?: unknown; cause?: unknown };
    if (c.code === 3) return true;
    if (c.code === -32000 && typeof c.message === 'string' && /execution reverted/i.test(c.message)) return true;
    e = c.cause;
  }
  return false;
}

function revertReason(error: unknown): string {
  const data =
    error instanceof BaseError
      ? (error.walk((e) => typeof (e as { data?: unknown }).data === 'string') as { data?: Hex } | null)?.data
      : undefined;
  if (data) {
    try {
      const decoded = decodeErrorResult({ abi: batchPayoutAbi, data });
      return `${decoded.errorName}(${(decoded.args ?? []).map(String).join(', ')})`;
    } catch {
      return `revert data ${data.slice(0, 10)}`;
    }
  }
  return errorMessage(error);
}

export function errorMessage(error: unknown): string {
  if (error instanceof BaseError) return error.shortMessage;
  return error instanceof Error ? error.message : String(error);
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
