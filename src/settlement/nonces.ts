// Nonce gaps. The relayer's stored next nonce (relayer_leases.next_nonce) can get ahead of the
// chain: a reorg takes mined transactions off it, a node restart loses its pool. Every later
// transaction then waits behind the first missing nonce, for ever. Each turn the worker compares
// the stored next nonce with the chain's (pending) and fills the first gap, oldest first:
// - the nonce belongs to a batch (or an x402 authorization, migration 031) still in flight: its
//   stored signed transaction is sent again, the same bytes (the newest sibling if fees were bumped);
// - the nonce belongs to a confirmed batch or authorization: the reorg watch decides (it puts the
//   batch back in flight if its transaction is really gone), nothing is done here;
// - otherwise (its batch failed and its transfers were released, or the nonce was never ours): that
//   transaction must never land, so the nonce is refilled with a zero-value transfer from the
//   relayer to itself (gas estimated), stored before it is broadcast, signed again at the same
//   nonce with higher fees when the node finds it underpriced. It pays no one; nothing is ever
//   skipped. A nonce this relayer never handed out (someone else used the key) may be an
//   operator's transaction still on its way: it is refilled only after foreignNonceGapAfterMs.

import { type Hex, parseTransaction } from 'viem';
import { BroadcastError, broadcastRawTransaction, estimateFees, signRelayerTransaction } from '../chain/chain.ts';
import { recordNonceRepair } from '../metrics/metrics.ts';
import { type ChainSession, leaseKey } from './chain-session.ts';
import type { SettlementContext } from './context.ts';
import { broadcastStored } from './relayer.ts';
import { newestLiveTransaction } from '../db/repositories/chain-transactions.ts';
import { findNextNonce, holdsLease } from '../db/repositories/relayer-leases.ts';
import { findNonceOwner, insertNonceFill, type NonceFill, newestNonceFill } from '../db/repositories/relayer-nonces.ts';

/** Most nonces repaired in one turn (each one is one broadcast). */
const MAX_REPAIRS_PER_TURN = 16;

/**
 * Nonces missing on the chain that this relayer never handed out (someone else used the key), by
 * chain and nonce, with when this process first saw each missing. Such a nonce may belong to an
 * operator's own transaction still on its way; a refill could replace it. It is refilled only after
 * it has been missing for foreignNonceGapAfterMs.
 */
const foreignGapsSeen = new Map<string, number>();

/** Returns how many nonces it re-sent or refilled. */
export async function repairNonceGaps(ctx: SettlementContext, session: ChainSession): Promise<number> {
  const nextNonce = await findNextNonce(ctx.db, leaseKey(session));
  if (nextNonce === undefined) return 0;
  const client = session.conn.publicClient;
  let repaired = 0;
  let lastTried: bigint | undefined;
  while (repaired < MAX_REPAIRS_PER_TURN) {
    const pending = BigInt(await client.getTransactionCount({ address: session.relayer, blockTag: 'pending' }));
    for (const key of foreignGapsSeen.keys()) {
      const [chain, nonce] = splitGapKey(key);
      if (chain === session.key && nonce < pending) foreignGapsSeen.delete(key);
    }
    if (pending >= nextNonce) break;
    // The node took the last repair but did not put it in its pool (or the pool is full): next turn.
    if (lastTried !== undefined && pending <= lastTried) break;
    lastTried = pending;
    const action = await repairNonce(ctx, session, pending);
    if (action === 'wait') break;
    recordNonceRepair(action);
    repaired += 1;
  }
  return repaired;
}

function gapKey(session: ChainSession, nonce: bigint): string {
  return `${nonce}@${session.key}`;
}

function splitGapKey(key: string): [string, bigint] {
  const at = key.indexOf('@');
  return [key.slice(at + 1), BigInt(key.slice(0, at))];
}

async function repairNonce(
  ctx: SettlementContext,
  session: ChainSession,
  nonce: bigint,
): Promise<'rebroadcast' | 'refill' | 'wait'> {
  const owner = await findNonceOwner(ctx.db, leaseKey(session), nonce);
  if (owner?.status === 'confirmed' || owner?.authorization_status === 'confirmed') return 'wait';
  if (owner?.authorization_id && owner.authorization_status === 'submitted') {
    // An authorization's transfer in flight: its stored bytes, as for a batch (the token's nonce
    // lets it land once whichever of its transactions is mined).
    return await rebroadcastLive(ctx, session, nonce, 'authorization_id', owner.authorization_id);
  }
  if (owner?.status === 'sent' && owner.id !== null) {
    return await rebroadcastLive(ctx, session, nonce, 'batch_id', owner.id);
  }
  if (!owner) {
    // Never handed out by this relayer: give whoever used the key time to send it again.
    const key = gapKey(session, nonce);
    const seen = foreignGapsSeen.get(key);
    if (seen === undefined) {
      foreignGapsSeen.set(key, Date.now());
      ctx.logger.warn(
        { nonce, refillAfterMs: ctx.options.foreignNonceGapAfterMs },
        'nonce gap at a nonce this relayer never handed out (another tool uses the key?); waiting before refilling it',
      );
      return 'wait';
    }
    if (Date.now() - seen < ctx.options.foreignNonceGapAfterMs) return 'wait';
  }

  // Nothing of ours may use this nonce any more: refill it (the stored filler first, if any).
  const stored = await newestNonceFill(ctx.db, leaseKey(session), nonce);
  let fill = stored ?? (await signFill(ctx, session, nonce));
  if (!fill) return 'wait';
  ctx.logger.warn(
    { nonce, batch: owner?.batch_id ?? null, batchStatus: owner?.status ?? null, tx: fill.hash },
    'nonce gap: refilling a nonce no live transaction of ours may use with a zero-value transfer to the relayer',
  );
  if ((await broadcastFill(ctx, session, fill)) === 'reprice') {
    // The stored fill is priced below what the node takes now: the same nonce, higher fees.
    fill = await signFill(ctx, session, nonce, parseTransaction(fill.raw_transaction as Hex));
    if (!fill) return 'wait';
    await broadcastFill(ctx, session, fill);
  }
  return 'refill';
}

/** Sends the newest stored transaction of a batch or authorization in flight at `nonce` again. */
async function rebroadcastLive(
  ctx: SettlementContext,
  session: ChainSession,
  nonce: bigint,
  ownerColumn: 'batch_id' | 'authorization_id',
  ownerId: string,
): Promise<'rebroadcast' | 'wait'> {
  const live = await newestLiveTransaction(ctx.db, session.key, { column: ownerColumn, id: ownerId }, nonce);
  if (!live) return 'wait';
  ctx.logger.warn(
    { [ownerColumn === 'batch_id' ? 'batch' : 'authorization']: ownerId, nonce, tx: live.hash },
    'nonce gap: the node has no transaction for this nonce; sending the stored one again',
  );
  await broadcastStored(ctx, session, live);
  return 'rebroadcast';
}

/** Signs and stores (lease-fenced) a zero-value transfer to the relayer at `nonce`; above `previous`'s fees if given. */
async function signFill(
  ctx: SettlementContext,
  session: ChainSession,
  nonce: bigint,
  previous?: { maxFeePerGas?: bigint | undefined; maxPriorityFeePerGas?: bigint | undefined },
): Promise<NonceFill | undefined> {
  const [fees, gas] = await Promise.all([
    estimateFees(session.conn),
    session.conn.publicClient.estimateGas({ account: session.relayer, to: session.relayer, value: 0n, data: '0x' }),
  ]);
  const raise = (value: bigint | undefined): bigint => ((value ?? 0n) * 125n + 99n) / 100n;
  const maxFeePerGas = max(fees.maxFeePerGas, raise(previous?.maxFeePerGas));
  let maxPriorityFeePerGas = max(fees.maxPriorityFeePerGas, raise(previous?.maxPriorityFeePerGas));
  if (maxPriorityFeePerGas > maxFeePerGas) maxPriorityFeePerGas = maxFeePerGas;
  const signed = await signRelayerTransaction(session.conn, {
    to: session.relayer,
    value: 0n,
    nonce: Number(nonce),
    data: '0x',
    gas,
    maxFeePerGas,
    maxPriorityFeePerGas,
  });
  return await ctx.db.transaction().execute(async (trx) => {
    // Fencing as for any signature: only the lease holder signs.
    if (!(await holdsLease(trx, ctx, session))) return undefined;
    return await insertNonceFill(trx, leaseKey(session), nonce, signed);
  });
}

async function broadcastFill(
  ctx: SettlementContext,
  session: ChainSession,
  fill: NonceFill,
): Promise<'ok' | 'reprice' | 'refused'> {
  try {
    await broadcastRawTransaction(session.conn, fill.raw_transaction as Hex);
    return 'ok';
  } catch (error) {
    if (!(error instanceof BroadcastError)) throw error;
    ctx.logger.warn({ tx: fill.hash, kind: error.kind, err: error.message }, 'nonce refill broadcast refused');
    return error.kind === 'fee_too_low' || error.kind === 'replacement_underpriced' ? 'reprice' : 'refused';
  }
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
