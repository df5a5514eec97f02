// x402 authorizations on chain: the relayer submits each recorded EIP-3009 authorization
// (transferWithAuthorization to the token, the relayer paying the gas) and follows it to its end,
// with the relayer machinery batches use (relayer.ts): a nonce only while the lease is held, the
// raw transaction stored before its first broadcast, the same bytes broadcast again after a
// restart, fee bumps at the same nonce with the same calldata.
//
// The token is the truth: authorizationState(from, nonce) says whether the authorization was used,
// its AuthorizationUsed event in which transaction. Unlike a batch, an authorization can be
// submitted again with a new relayer nonce whenever its earlier transaction provably failed to use
// it: the token lets it move money once, whichever transaction carries it. A transfer at depth is
// confirmed through confirm_x402_authorization (tools/system/), which credits the merchant.

import { type Address, BlockNotFoundError, type Hex, parseEventLogs, type TransactionReceipt } from 'viem';
import { estimateFees } from '../chain/chain.ts';
import { plainUsdAbi } from '../chain/contracts/abis.ts';
import {
  dropAuthorizationTransactions,
  type TrackedTransaction,
  trackedAuthorizationTransactions,
} from '../db/repositories/chain-transactions.ts';
import { countAuthorizationNonces } from '../db/repositories/relayer-nonces.ts';
import {
  type AuthorizationChain,
  confirmedAuthorizationsNotFinal,
  findAuthorizationStatus,
  lockAuthorizationStatus,
  markAuthorizationFinal,
  markAuthorizationRecordedAgain,
  markAuthorizationSubmitted,
  recordAuthorizationBlock,
  recordedAuthorizations,
  submittedAuthorizations,
  submittedAuthorizationsOnGoneDevnets,
} from '../db/repositories/x402-authorizations.ts';
import type { X402AuthorizationRow } from '../db/tables/x402.ts';
import { runSystemTool } from '../pipeline/system-runs.ts';
import {
  type Authorization,
  simulateTransfer,
  transferWithAuthorizationData,
  x402Target,
} from '../x402/verify-exact.ts';
import { X402_REASONS } from '../x402/messages.ts';
import type { ChainSession } from './chain-session.ts';
import type { SettlementContext } from './context.ts';
import {
  allocateNonce,
  broadcastStored,
  errorMessage,
  keepMoving,
  receiptOf,
  signAndStore,
  type StillInFlight,
} from './relayer.ts';
import {
  confirmX402Authorization,
  failX402Authorization,
  revertX402Authorization,
} from '../../tools/system/x402-authorizations.ts';

function authorizationOf(row: X402AuthorizationRow): Authorization {
  return {
    from: row.payer as Address,
    to: row.pay_to as Address,
    value: row.value_minor,
    validAfter: row.valid_after,
    validBefore: row.valid_before,
    nonce: row.nonce as Hex,
  };
}

/** The chain and token this session pays in on, as the authorizations' rows name them. */
function authorizationChainOf(session: ChainSession): AuthorizationChain {
  return { chainId: session.chainId, token: session.conn.tokenAddress.toLowerCase(), chainKey: session.key };
}

/**
 * Submits every recorded authorization (oldest first): checked once more on chain (used already?
 * would it revert?), then a nonce, signed, stored and broadcast. Returns how many moved on.
 */
export async function submitRecordedAuthorizations(ctx: SettlementContext, session: ChainSession): Promise<number> {
  const recorded = await recordedAuthorizations(ctx.db, authorizationChainOf(session), ctx.options.maxBatchesPerTurn);
  let moved = 0;
  for (const row of recorded) {
    let step: 'moved' | 'stay' | 'stop' | 'lease_lost';
    try {
      step = await submitOne(ctx, session, row);
      submitFailures(ctx).delete(row.id);
    } catch (error) {
      // One row's trouble (a node error, a contract wallet whose check fails under real gas) must
      // not hold back the rows behind it: it is logged, counted, and failed after a few tries.
      step = (await giveUpAfterRepeatedFailures(ctx, session, row, error)) ? 'moved' : 'stay';
    }
    if (step === 'moved' || step === 'stop') moved += 1;
    if (step === 'stop' || step === 'lease_lost') break;
  }
  return moved;
}

/**
 * Consecutive failures to submit a recorded row, and since when (monotonic ms), per worker: a
 * restart starts counting again, which only delays the end.
 */
const submitFailureCounts = new WeakMap<SettlementContext, Map<string, { failures: number; since: number }>>();
function submitFailures(ctx: SettlementContext): Map<string, { failures: number; since: number }> {
  let counts = submitFailureCounts.get(ctx);
  if (!counts) {
    counts = new Map();
    submitFailureCounts.set(ctx, counts);
  }
  return counts;
}

/**
 * A recorded row that failed this many passes in a row, over at least this long, fails for good
 * (nothing of ours was signed). Both: passes come every 50 ms when busy, and a node's hiccup of a
 * second must not fail pay-ins; a crafted authorization must not sit in flight until its validBefore.
 */
export const MAX_SUBMIT_FAILURES = 5;
export const SUBMIT_FAILURES_MIN_MS = 10_000;

/** Counts a failed pass on a row; past the limit fails it, unless the token says its nonce is used. Returns whether it ended. */
async function giveUpAfterRepeatedFailures(
  ctx: SettlementContext,
  session: ChainSession,
  row: X402AuthorizationRow,
  error: unknown,
): Promise<boolean> {
  const counts = submitFailures(ctx);
  // The service's clock: a deployment's is the wall clock, a test's is driven.
  const since = counts.get(row.id)?.since ?? ctx.clock.now().getTime();
  const failures = (counts.get(row.id)?.failures ?? 0) + 1;
  counts.set(row.id, { failures, since });
  ctx.logger.warn(
    { authorization: row.id, failures, err: errorMessage(error) },
    'could not submit authorization this turn',
  );
  if (failures < MAX_SUBMIT_FAILURES || ctx.clock.now().getTime() - since < SUBMIT_FAILURES_MIN_MS) return false;
  try {
    if ((await findAuthorizationStatus(ctx.db, row.id)) !== 'recorded') {
      counts.delete(row.id); // it moved on meanwhile (signed and stored): the tracker follows it
      return false;
    }
    // Before failing it, the token is asked: a used nonce means a transfer may have landed, which is
    // judged from its transaction (confirmed, or failed when it paid someone else), never assumed.
    if (await usedOnChain(session, authorizationOf(row))) return await confirmFromEvent(ctx, session, row);
    await fail(
      ctx,
      row,
      X402_REASONS.transactionState,
      `the transfer could not be submitted after ${failures} attempts: ${errorMessage(error)}`,
    );
    counts.delete(row.id);
    return true;
  } catch (again) {
    ctx.logger.warn(
      { authorization: row.id, err: errorMessage(again) },
      'could not end a failing authorization this turn',
    );
    return false;
  }
}

async function submitOne(
  ctx: SettlementContext,
  session: ChainSession,
  row: X402AuthorizationRow,
): Promise<'moved' | 'stay' | 'stop' | 'lease_lost'> {
  const auth = authorizationOf(row);
  if (await usedOnChain(session, auth)) {
    // Used by a transaction that is not one of ours in flight (the payer submitted it, or an
    // earlier one of ours landed after all): its event says which, and that one is judged.
    return (await confirmFromEvent(ctx, session, row)) ? 'moved' : 'stay';
  }
  const target = await x402Target(session.conn);
  const refusal = await simulateTransfer(session.conn, target, auth, row.signature as Hex);
  if (refusal) {
    // Nothing is signed yet, so nothing can land: it fails here, with the token's reason.
    await fail(ctx, row, refusal.reason, refusal.message);
    return 'moved';
  }
  const data = transferWithAuthorizationData(auth, row.signature as Hex);
  const [gas, fees, chainNonce] = await Promise.all([
    session.conn.publicClient.estimateGas({ account: session.relayer, to: target.asset, data }),
    estimateFees(session.conn),
    session.conn.publicClient.getTransactionCount({ address: session.relayer, blockTag: 'pending' }),
  ]);
  const stored = await ctx.db.transaction().execute(async (trx) => {
    if ((await lockAuthorizationStatus(trx, row.id)) !== 'recorded') return null;
    const nonce = await allocateNonce(trx, ctx, session, { authorization_id: row.id }, BigInt(chainNonce));
    if (nonce === undefined) return 'lease_lost' as const;
    const tx = await signAndStore(
      trx,
      session,
      { authorization_id: row.id },
      {
        to: target.asset,
        nonce,
        data,
        // A margin over the estimate: the token's storage writes cost the same, but a node's estimate may be tight.
        gas: (gas * 12n) / 10n,
        maxFeePerGas: fees.maxFeePerGas,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      },
    );
    await markAuthorizationSubmitted(trx, row.id, session.key);
    return tx;
  });
  if (stored === 'lease_lost') return 'lease_lost';
  if (stored === null) return 'stay';
  // Stored: it is in flight now, whatever the broadcast says (the tracker re-broadcasts it).
  if ((await broadcastStored(ctx, session, stored)) !== 'ok') return 'stop';
  return 'moved';
}

const authorizationStillSubmitted: StillInFlight = async (trx, tx) =>
  tx.authorization_id !== null && (await lockAuthorizationStatus(trx, tx.authorization_id)) === 'submitted';

/**
 * Follows every submitted authorization of this chain to its end: confirmed at depth from the
 * transaction that used it; submitted again when its transaction can no longer use it and it is
 * still valid; failed when it expired unused; otherwise kept moving (re-broadcast, fee bump).
 * Returns how many ended or moved on.
 */
export async function trackSubmittedAuthorizations(ctx: SettlementContext, session: ChainSession): Promise<number> {
  await resubmitFromGoneChains(ctx, session);
  const submitted = await submittedAuthorizations(ctx.db, authorizationChainOf(session));
  if (submitted.length === 0) return 0;
  const txs = await trackedAuthorizationTransactions(
    ctx.db,
    session.key,
    submitted.map((a) => a.id),
  );
  const client = session.conn.publicClient;
  const [latestBlock, minedNonce] = await Promise.all([
    client.getBlockNumber({ cacheTime: 0 }),
    client.getTransactionCount({ address: session.relayer, blockTag: 'latest' }).then(BigInt),
  ]);
  const depth = BigInt(session.conn.confirmations);
  const failureDepth = session.ephemeral ? depth : BigInt(session.conn.finalityDepth);
  let moved = 0;
  for (const row of submitted) {
    const own: TrackedTransaction[] = txs.filter((t) => t.authorization_id === row.id);
    try {
      const nonce = own[0]?.nonce;
      if (nonce !== undefined && nonce >= minedNonce) {
        await keepMoving(ctx, session, own, authorizationStillSubmitted);
        continue;
      }
      const receipts = await Promise.all(own.map((tx) => receiptOf(session, tx.hash as Hex)));
      const success = receipts.find((r) => r?.status === 'success');
      if (success) {
        if (latestBlock - success.blockNumber + 1n < depth) continue;
        const fresh = await receiptOf(session, success.transactionHash);
        if (fresh?.status !== 'success' || fresh.blockHash !== success.blockHash) continue; // reorg: look again
        if (await confirm(ctx, session, row, fresh)) moved += 1;
        continue;
      }
      // Our nonce is used and none of ours succeeded: what the token says decides, once it is deep.
      const deepBlock = latestBlock - failureDepth + 1n;
      if (deepBlock < 0n) continue;
      const reverted = receipts.find((r) => r?.status === 'reverted');
      if (reverted && reverted.blockNumber > deepBlock) continue;
      if (await usedOnChain(session, authorizationOf(row), deepBlock)) {
        if (await confirmFromEvent(ctx, session, row)) moved += 1;
        continue;
      }
      const deep = await client.getBlock({ blockNumber: deepBlock });
      if (deep.timestamp >= row.valid_before) {
        await fail(ctx, row, X402_REASONS.validBefore, `the authorization expired unused (block ${deepBlock})`);
      } else if (reverted && (await countAuthorizationNonces(ctx.db, row.id)) >= MAX_REVERTED_SUBMISSIONS) {
        // Unused at depth (checked just above): nothing moved. A transfer that passes simulation and
        // reverts when mined (a contract wallet that answers differently on chain) would otherwise
        // cost the relayer gas until validBefore.
        await fail(
          ctx,
          row,
          X402_REASONS.transactionState,
          `the transfer reverted on chain ${MAX_REVERTED_SUBMISSIONS} times (last ${reverted.transactionHash}); the authorization is unused`,
        );
        ctx.logger.error(
          { authorization: row.id, tx: reverted.transactionHash, payment: row.payment_id },
          'an x402 transfer kept reverting when mined; failed it, nothing moved',
        );
      } else {
        // Still valid and unused, and our transaction can no longer carry it: submit it again.
        await resubmit(ctx, row.id, reverted ? `transaction ${reverted.transactionHash} reverted` : 'nonce taken');
      }
      moved += 1;
    } catch (error) {
      ctx.logger.warn({ authorization: row.id, err: errorMessage(error) }, 'could not follow authorization this turn');
    }
  }
  return moved;
}

/**
 * Authorizations submitted on an in-process devnet that no longer exists (its process ended: no
 * live lease on it) are recorded again, to be judged afresh on this chain, as
 * replanBatchesFromGoneChains does for batches: that chain, with anything that was on it, is gone.
 */
async function resubmitFromGoneChains(ctx: SettlementContext, session: ChainSession): Promise<void> {
  const orphans = await submittedAuthorizationsOnGoneDevnets(ctx.db, session.key);
  for (const orphan of orphans) {
    await resubmit(ctx, orphan.id, 'the in-process devnet this was signed for is gone');
  }
}

/** A transfer that reverted when mined this many times (one relayer nonce each) is not submitted again. */
export const MAX_REVERTED_SUBMISSIONS = 3;

async function resubmit(ctx: SettlementContext, id: string, why: string): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    if ((await lockAuthorizationStatus(trx, id)) !== 'submitted') return;
    await dropAuthorizationTransactions(trx, id, why);
    await markAuthorizationRecordedAgain(trx, id);
  });
  ctx.logger.warn({ authorization: id, why }, 'authorization not carried by its transaction; submitting it again');
}

async function usedOnChain(session: ChainSession, auth: Authorization, blockNumber?: bigint): Promise<boolean> {
  return await session.conn.publicClient.readContract({
    address: session.conn.tokenAddress,
    abi: plainUsdAbi,
    functionName: 'authorizationState',
    args: [auth.from, auth.nonce],
    ...(blockNumber === undefined ? {} : { blockNumber }),
  });
}

/**
 * The token says the authorization's nonce is used: its events say how. Confirmed only when the
 * transaction that used it paid the treasury this authorization's value; failed (nothing reached
 * the treasury) when the nonce went to a different transfer or was canceled, once that is deep.
 * Anything else (no event seen yet: a node whose logs lag its state) is unknown and looked at again.
 */
async function confirmFromEvent(
  ctx: SettlementContext,
  session: ChainSession,
  row: X402AuthorizationRow,
): Promise<boolean> {
  const client = session.conn.publicClient;
  const head = await client.getBlockNumber({ cacheTime: 0 });
  // The nonce was unused when the row was recorded (verified just before): its use is in a later block.
  const fromBlock = await blockAtOrBefore(ctx, session, row, head);
  const args = { authorizer: row.payer as Address, nonce: row.nonce as Hex };
  const [usedLogs, canceledLogs] = await Promise.all([
    client.getContractEvents({
      address: session.conn.tokenAddress,
      abi: plainUsdAbi,
      eventName: 'AuthorizationUsed',
      args,
      fromBlock,
      toBlock: head,
    }),
    client.getContractEvents({
      address: session.conn.tokenAddress,
      abi: plainUsdAbi,
      eventName: 'AuthorizationCanceled',
      args,
      fromBlock,
      toBlock: head,
    }),
  ]);
  const failureDepth = BigInt(session.ephemeral ? session.conn.confirmations : session.conn.finalityDepth);
  const deepEnough = (block: bigint | null, need: bigint) => block !== null && head - block + 1n >= need;
  const log = usedLogs[0];
  if (!log) {
    const canceled = canceledLogs[0];
    if (canceled && deepEnough(canceled.blockNumber, failureDepth)) {
      await fail(
        ctx,
        row,
        X402_REASONS.nonceUsed,
        `nonce ${row.nonce} of ${row.payer} was canceled (transaction ${canceled.transactionHash}); nothing moved`,
      );
      return true;
    }
    if (!canceled) {
      ctx.logger.warn(
        { authorization: row.id, fromBlock, head },
        'the token says the nonce is used but no event says how yet: unknown, looked at again',
      );
    }
    return false;
  }
  const receipt = await receiptOf(session, log.transactionHash);
  if (receipt?.status !== 'success') return false;
  if (!deepEnough(receipt.blockNumber, BigInt(session.conn.confirmations))) return false;
  if (paysTheAuthorization(receipt, row, session.conn.tokenAddress)) return await confirm(ctx, session, row, receipt);
  // The payer signed another authorization with this nonce (to someone else, or for less) and it
  // landed first: the token will never let this one move money. Final once it cannot be reorged away.
  if (!deepEnough(receipt.blockNumber, failureDepth)) return false;
  await fail(
    ctx,
    row,
    X402_REASONS.nonceUsed,
    `nonce ${row.nonce} of ${row.payer} was used by transaction ${receipt.transactionHash}, which did not pay ${row.value_minor} to ${row.pay_to}: nothing reached the treasury`,
  );
  ctx.logger.error(
    { authorization: row.id, tx: receipt.transactionHash, payment: row.payment_id },
    'an x402 authorization was overtaken by a different transfer with the same nonce',
  );
  return true;
}

/** How far before the row's recording the log search starts: clocks of node and service may differ. */
const LOG_SEARCH_MARGIN_SECONDS = 600n;
const searchStarts = new WeakMap<SettlementContext, Map<string, bigint>>();

/** The newest block stamped at or before the row's recording (less a margin): a binary search by timestamp, cached. */
async function blockAtOrBefore(
  ctx: SettlementContext,
  session: ChainSession,
  row: X402AuthorizationRow,
  head: bigint,
): Promise<bigint> {
  let cache = searchStarts.get(ctx);
  if (!cache) {
    cache = new Map();
    searchStarts.set(ctx, cache);
  }
  const key = `${session.key}/${row.id}`;
  const cached = cache.get(key);
  if (cached !== undefined && cached <= head) return cached;
  const target = BigInt(Math.floor(new Date(row.created_at).getTime() / 1000)) - LOG_SEARCH_MARGIN_SECONDS;
  let lo = 0n;
  let hi = head;
  while (lo < hi) {
    const mid = (lo + hi + 1n) / 2n;
    const block = await session.conn.publicClient.getBlock({ blockNumber: mid });
    if (block.timestamp <= target) lo = mid;
    else hi = mid - 1n;
  }
  cache.set(key, lo);
  return lo;
}

/**
 * The reorg watch for authorizations, as reorgs.ts is for batches: each confirmed authorization of
 * this chain not yet final is re-checked against the chain's block at its height until it is
 * finalityDepth deep. A replaced block whose transaction is not mined deep enough elsewhere puts
 * the authorization back in flight (revert_x402_authorization). Returns how many were reverted.
 */
export async function watchConfirmedAuthorizations(ctx: SettlementContext, session: ChainSession): Promise<number> {
  const watched = await confirmedAuthorizationsNotFinal(ctx.db, authorizationChainOf(session));
  if (watched.length === 0) return 0;
  const client = session.conn.publicClient;
  const head = await client.getBlockNumber({ cacheTime: 0 });
  const need = BigInt(Math.max(session.conn.finalityDepth, session.conn.confirmations));
  let reverted = 0;
  for (const row of watched) {
    try {
      if (row.block_number === null || row.block_hash === null || row.tx_hash === null) continue;
      if (row.block_number > head) continue; // a node behind us says nothing yet
      const seen = await blockHashAt(session, row.block_number);
      if (seen === null) continue; // not found is not replaced: look again later
      if (seen.toLowerCase() === row.block_hash.toLowerCase()) {
        if (head - row.block_number + 1n >= need) await markAuthorizationFinal(ctx.db, row.id);
        continue;
      }
      const receipt = await receiptOf(session, row.tx_hash as Hex);
      if (receipt?.status === 'success' && head - receipt.blockNumber + 1n >= BigInt(session.conn.confirmations)) {
        const canonical = await blockHashAt(session, receipt.blockNumber);
        if (canonical?.toLowerCase() === receipt.blockHash.toLowerCase()) {
          // Mined again in another block, deep enough: the credit stands, only its block changes.
          await recordAuthorizationBlock(ctx.db, row.id, { number: receipt.blockNumber, hash: receipt.blockHash });
          continue;
        }
      }
      const result = await runSystemTool(
        ctx.toolEnvironment,
        revertX402Authorization,
        {
          authorization_id: row.id,
          chain: chainFactsOf(session),
          tx_hash: row.tx_hash,
          reason: `reorg: block ${row.block_number} (${row.block_hash}) is no longer the chain's (now ${seen})`,
        },
        { accountId: row.account_id, livemode: row.livemode },
      );
      if (!result.changed) continue;
      reverted += 1;
      // Broadcast again at once: this process's memory of having sent them is about a chain that is gone.
      for (const key of [...ctx.broadcastHere]) if (key.startsWith(`${session.key}/`)) ctx.broadcastHere.delete(key);
      ctx.logger.error(
        { authorization: row.id, tx: row.tx_hash, payment: row.payment_id },
        'reorg: a confirmed x402 transfer is back in flight; its signed transaction will be broadcast again',
      );
    } catch (error) {
      ctx.logger.warn(
        { authorization: row.id, err: errorMessage(error) },
        'could not re-check an authorization this turn',
      );
    }
  }
  return reverted;
}

async function blockHashAt(session: ChainSession, height: bigint): Promise<Hex | null> {
  try {
    return (await session.conn.publicClient.getBlock({ blockNumber: height })).hash;
  } catch (error) {
    if (error instanceof BlockNotFoundError) return null;
    throw error;
  }
}

function chainFactsOf(session: ChainSession) {
  return {
    key: session.key,
    chain_id: session.chainId,
    batch_address: session.conn.batchAddress,
    asset: session.asset,
    ephemeral: session.ephemeral,
  };
}

async function confirm(
  ctx: SettlementContext,
  session: ChainSession,
  row: X402AuthorizationRow,
  receipt: TransactionReceipt,
): Promise<boolean> {
  if (!paysTheAuthorization(receipt, row, session.conn.tokenAddress)) {
    throw new Error(`transaction ${receipt.transactionHash} succeeded without using authorization ${row.id}`);
  }
  const result = await runSystemTool(
    ctx.toolEnvironment,
    confirmX402Authorization,
    {
      authorization_id: row.id,
      chain: chainFactsOf(session),
      receipt: {
        hash: receipt.transactionHash,
        block_number: receipt.blockNumber.toString(),
        block_hash: receipt.blockHash,
        gas_used: receipt.gasUsed.toString(),
        effective_gas_price: receipt.effectiveGasPrice.toString(),
      },
    },
    { accountId: row.account_id, livemode: row.livemode },
  );
  if (result.changed) {
    ctx.logger.info(
      { authorization: row.id, tx: receipt.transactionHash, payment: row.payment_id },
      'authorization confirmed',
    );
  }
  return result.changed;
}

/**
 * Whether the transaction carried this very authorization: the token's AuthorizationUsed for the
 * payer and nonce and, in the same receipt, the token's Transfer of exactly the value from the payer
 * to pay_to. The nonce alone is not enough: a payer can sign another authorization with the same
 * nonce (1 unit to themselves) and land it first; that one uses the nonce and pays plainpay nothing.
 */
function paysTheAuthorization(receipt: TransactionReceipt, row: X402AuthorizationRow, token: Address): boolean {
  const logs = receipt.logs.filter((l) => l.address.toLowerCase() === token.toLowerCase());
  const used = parseEventLogs({ abi: plainUsdAbi, eventName: 'AuthorizationUsed', logs }).some(
    (e) => e.args.authorizer.toLowerCase() === row.payer && e.args.nonce.toLowerCase() === row.nonce.toLowerCase(),
  );
  const paid = parseEventLogs({ abi: plainUsdAbi, eventName: 'Transfer', logs }).some(
    (e) =>
      e.args.from.toLowerCase() === row.payer &&
      e.args.to.toLowerCase() === row.pay_to &&
      e.args.value === BigInt(row.value_minor),
  );
  return used && paid;
}

async function fail(ctx: SettlementContext, row: X402AuthorizationRow, reason: string, message: string): Promise<void> {
  await runSystemTool(
    ctx.toolEnvironment,
    failX402Authorization,
    { authorization_id: row.id, reason, message: message.slice(0, 2000) },
    { accountId: row.account_id, livemode: row.livemode },
  );
  ctx.logger.warn({ authorization: row.id, reason, message }, 'authorization cannot land; nothing moved');
}
