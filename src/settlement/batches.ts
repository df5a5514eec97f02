// Settlement batches: planning (queued transfers → one netted BatchPayout call), and the two ways a
// batch ends, each one database transaction: confirmed (transfers confirmed, ledger in-flight →
// treasury, per-kind handlers: payment settled + event) or failed (transfers released for a new
// attempt, or failed for good with their money returned).

import { sql } from 'kysely';
import { getAddress, type Hex } from 'viem';
import { batchIdFromKey, encodeBatchPayout } from '../chain/chain.ts';
import type { Db } from '../db/database.ts';
import type { SettlementBatchRow, TransferKind, TransferRow } from '../db/tables/settlement.ts';
import { newId } from '../domain/ids.ts';
import {
  credit,
  debit,
  type LedgerAccountRef,
  type LedgerPosting,
  ledgerAccount,
  postLedger,
} from '../ledger/ledger.ts';
import { testMoneyMayMoveOn, testMoneyRefusal } from '../chain/test-networks.ts';
import type { ChainSession } from './chain-session.ts';
import type { SettlementContext } from './context.ts';
import { holdsLease } from './relayer.ts';
import type { ConfirmedTransfer, FailedTransfer, RevertedTransfer, TransferOutcomeContext } from './handlers.ts';
import { type BatchLine, netTransfers } from './transfers.ts';

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
    if (!made) break;
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
  const stats = await sql<{ n: number; recipients: number; overdue: boolean; quiet: boolean; scheduled: boolean }>`
    select count(*)::int as n,
           count(distinct lower(recipient))::int as recipients,
           coalesce(bool_or(created_at <= now() - (${batchMaxWaitMs}::int * interval '1 millisecond')), false) as overdue,
           coalesce(bool_and(created_at <= now() - (${batchWindowMs}::int * interval '1 millisecond')), false) as quiet,
           exists (select 1 from transfers w where w.status = 'queued' and w.due_at <= ${now}) as scheduled
      from transfers where status = 'queued' and due_at is null`.execute(trx);
  const row = stats.rows[0];
  if (!row) return false;
  if (row.scheduled) return true;
  if (row.n === 0) return false;
  return row.n >= batchMaxTransfers || row.recipients >= batchMax || row.overdue || row.quiet;
}

/**
 * When the next scheduled transfer falls due (the earliest due_at still in the future or past), or
 * null when none waits. For the worker's loop: a worker that sleeps while idle should wake by then.
 */
export async function nextSettlementDueAt(db: Db): Promise<Date | null> {
  const row = await db
    .selectFrom('transfers')
    .select((eb) => eb.fn.min('due_at').as('due'))
    .where('status', '=', 'queued')
    .where('due_at', 'is not', null)
    .executeTakeFirst();
  return row?.due ?? null;
}

async function planOneBatch(trx: Db, ctx: SettlementContext, session: ChainSession): Promise<boolean> {
  const { batchMax, batchMaxTransfers, isolateAfterAttempts } = ctx.options;
  const now = ctx.clock.now();
  if (!(await batchIsDue(trx, ctx, now))) return false;

  // Every due transfer, oldest first: instant ones (the window closed) and scheduled ones.
  const candidates = await trx
    .selectFrom('transfers')
    .selectAll()
    .where('status', '=', 'queued')
    .where((eb) => eb.or([eb('due_at', 'is', null), eb('due_at', '<=', now)]))
    .orderBy('created_at')
    .orderBy('id')
    .limit(batchMaxTransfers)
    .forUpdate()
    .skipLocked()
    .execute();
  if (candidates.length === 0) return false;

  // Guardrail at the side effect: tokens sent to the token or batch contract would be lost or land
  // back in the treasury behind the ledger's back. Such a transfer fails for good, before any signing.
  const forbidden = new Set([session.conn.tokenAddress.toLowerCase(), session.conn.batchAddress.toLowerCase()]);
  const refused = candidates.filter((t) => forbidden.has(t.recipient.toLowerCase()));
  if (refused.length > 0) {
    await failTransfersForGood(
      trx,
      ctx,
      refused,
      'recipient is a contract of the settlement service (token or batch contract)',
    );
    return true;
  }
  // And test-mode money never becomes tokens off a test network, whatever queued it (the tools
  // refuse it first; this is the last place before signing).
  if (!testMoneyMayMoveOn(session.conn)) {
    const testMoney = candidates.filter((t) => !t.livemode);
    if (testMoney.length > 0) {
      await failTransfersForGood(trx, ctx, testMoney, testMoneyRefusal(session.conn));
      return true;
    }
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
  const id = newId('batch');
  await trx
    .insertInto('settlement_batches')
    .values({
      id,
      batch_key: batchIdFromKey(id),
      asset: session.asset,
      status: 'planned',
      chain_key: null,
      lines: JSON.stringify(lines.map((l) => ({ recipient: l.recipient, amount: l.amount.toString() }))),
      total_minor: total,
      transfer_count: chosen.length,
    })
    .execute();
  await trx
    .insertInto('settlement_batch_transfers')
    .values(chosen.map((t) => ({ batch_id: id, transfer_id: t.id })))
    .execute();
  const moved = await trx
    .updateTable('transfers')
    .set({ status: 'batched', batch_id: id, updated_at: sql`now()` })
    .where(
      'id',
      'in',
      chosen.map((t) => t.id),
    )
    .where('status', '=', 'queued')
    .executeTakeFirst();
  if (Number(moved.numUpdatedRows) !== chosen.length)
    throw new Error('a locked queued transfer changed under its lock');
  ctx.logger.debug({ batch: id, transfers: chosen.length, recipients: lines.length, total }, 'batch planned');
  return true;
}

export interface BatchReceipt {
  /** The chain it was mined on: a hash alone names a transaction on one chain only. */
  chainKey: string;
  hash: Hex;
  blockNumber: bigint;
  /** The block's hash: a settlement is final only while this is still the chain's block at blockNumber. */
  blockHash: Hex;
  gasUsed: bigint;
  effectiveGasPrice: bigint;
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
 * The batch's transaction is mined, succeeded and has the configured confirmations: one transaction
 * records everything. A batch no longer `sent` (another worker did it) is left alone. Returns whether
 * this call confirmed it.
 */
export async function confirmBatch(
  ctx: SettlementContext,
  session: ChainSession,
  batchId: string,
  receipt: BatchReceipt,
): Promise<boolean> {
  return ctx.db.transaction().execute(async (trx) => {
    const batch = await trx
      .selectFrom('settlement_batches')
      .selectAll()
      .where('id', '=', batchId)
      .forUpdate()
      .executeTakeFirst();
    if (batch?.status !== 'sent') return false;
    const transfers = await trx
      .selectFrom('transfers')
      .selectAll()
      .where('batch_id', '=', batchId)
      .where('status', '=', 'sent')
      .orderBy('id')
      .forUpdate()
      .execute();
    const total = transfers.reduce((sum, t) => sum + t.amount_minor, 0n);
    if (transfers.length !== batch.transfer_count || total !== batch.total_minor) {
      // Paid on chain, but the rows disagree with what was signed: stop and shout rather than guess.
      throw new Error(`batch ${batchId} was paid but its transfers do not add up to the signed batch`);
    }
    const now = ctx.clock.now();
    await trx
      .updateTable('settlement_batches')
      .set({
        status: 'confirmed',
        ...batchReceiptColumns(receipt),
        finished_at: sql`now()`,
        // The in-process devnet does not reorganise (and makes no blocks when quiet, so a finality
        // depth would never be reached): final at once, nothing for the reorg watch.
        finalized_at: session.ephemeral ? sql`now()` : null,
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

    await postLedger(
      trx,
      transfers.map((t) => ({
        kind: 'transfer_confirmed',
        // A confirmation a reorg undid was reversed by its own posting; each later one is a new
        // posting (the ledger is append-only, and (kind, reference) is unique).
        reference: t.reversals === 0 ? t.id : `${t.id}:${t.reversals}`,
        at: now,
        entries: [debit(ledgerAccount.inFlight(t.asset), t.amount_minor), credit(session.treasury, t.amount_minor)],
      })),
    );
    await trx
      .updateTable('transfers')
      .set({ status: 'confirmed', confirmed_at: sql`now()`, updated_at: sql`now()` })
      .where('batch_id', '=', batchId)
      .where('status', '=', 'sent')
      .execute();

    // Each transfer's share of the gas: an even split, the remainder to the first ones, so that the
    // shares add up to exactly what the transaction used.
    const n = BigInt(transfers.length);
    const base = receipt.gasUsed / n;
    const remainder = receipt.gasUsed % n;
    const confirmed: ConfirmedTransfer[] = transfers.map((t, i) => {
      const gasUsed = base + (BigInt(i) < remainder ? 1n : 0n);
      return {
        transfer: { ...t, status: 'confirmed' },
        batchId,
        chainId: session.chainId,
        txHash: receipt.hash,
        blockNumber: receipt.blockNumber,
        gasUsed,
        gasCostWei: gasUsed * receipt.effectiveGasPrice,
        confirmations: session.conn.confirmations,
      };
    });
    const outcome: TransferOutcomeContext = { config: ctx.config, logger: ctx.logger, now };
    for (const [kind, items] of groupByKind(confirmed, (c) => c.transfer.kind)) {
      await ctx.handlers[kind].onConfirmed(trx, items, outcome);
    }
    ctx.logger.info(
      { batch: batchId, tx: receipt.hash, transfers: transfers.length, gasUsed: receipt.gasUsed },
      'settlement batch confirmed',
    );
    return true;
  });
}

/**
 * A confirmed batch whose transaction a reorg took off the chain (its block is no longer the
 * chain's, and its transaction is not mined deep enough anywhere else): back in flight, in one
 * transaction. The batch is `sent` again with its stored signed transactions live again (the
 * tracker re-broadcasts the same bytes; the contract pays a batch id once, so whichever lands pays
 * once). The ledger is corrected by a reversing posting per transfer (treasury → in-flight), never
 * by removing the confirmation's posting; the transfers are `sent` again and each kind's handler
 * moves its object back and announces the correction. Returns whether this call reverted it.
 */
export async function revertConfirmedBatch(
  ctx: SettlementContext,
  session: ChainSession,
  batchId: string,
  reason: string,
): Promise<boolean> {
  const reverted = await ctx.db.transaction().execute(async (trx) => {
    const batch = await trx
      .selectFrom('settlement_batches')
      .selectAll()
      .where('id', '=', batchId)
      .forUpdate()
      .executeTakeFirst();
    if (batch?.status !== 'confirmed' || batch.chain_key !== session.key || batch.finalized_at !== null) return null;
    // Fencing as for signing: a worker whose relayer lease lapsed changes nothing on this chain.
    if (!(await holdsLease(trx, ctx, session))) return null;
    const transfers = await trx
      .selectFrom('transfers')
      .selectAll()
      .where('batch_id', '=', batchId)
      .where('status', '=', 'confirmed')
      .orderBy('id')
      .forUpdate()
      .execute();
    const now = ctx.clock.now();
    await postLedger(
      trx,
      transfers.map((t) => ({
        kind: 'transfer_confirmation_reversed',
        reference: `${t.id}:${t.reversals + 1}`,
        at: now,
        entries: [debit(session.treasury, t.amount_minor), credit(ledgerAccount.inFlight(t.asset), t.amount_minor)],
      })),
    );
    await trx
      .updateTable('transfers')
      .set((eb) => ({
        status: 'sent',
        confirmed_at: null,
        reversals: eb('reversals', '+', 1),
        last_error: reason.slice(0, 500),
        updated_at: sql`now()`,
      }))
      .where('batch_id', '=', batchId)
      .where('status', '=', 'confirmed')
      .execute();
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
    // Every signed transaction of the batch may land again (same nonce, same calldata; siblings
    // differ only in fees). None is re-signed.
    const live = await trx
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
      .where('chain_key', '=', session.key)
      .where('status', 'in', ['mined', 'replaced'])
      .returning(['chain_key', 'hash'])
      .execute();
    const items: RevertedTransfer[] = transfers.map((t) => ({
      transfer: { ...t, status: 'sent' },
      batchId,
      chainId: session.chainId,
      txHash: batch.tx_hash as Hex,
      blockNumber: batch.block_number,
      reason,
    }));
    const outcome: TransferOutcomeContext = { config: ctx.config, logger: ctx.logger, now };
    for (const [kind, group] of groupByKind(items, (r) => r.transfer.kind)) {
      await ctx.handlers[kind].onReverted(trx, group, outcome);
    }
    return { batch, transfers: transfers.length, live };
  });
  if (!reverted) return false;
  // Broadcast again at once, not after rebroadcastAfterMs: this process's memory of having sent
  // them is about a chain that no longer has them.
  for (const tx of reverted.live) ctx.broadcastHere.delete(`${tx.chain_key}/${tx.hash}`);
  ctx.logger.error(
    {
      batch: batchId,
      tx: reverted.batch.tx_hash,
      block: reverted.batch.block_number,
      blockHash: reverted.batch.block_hash,
      transfers: reverted.transfers,
      reason,
    },
    'reorg: a confirmed settlement batch is back in flight; its signed transaction will be broadcast again',
  );
  return true;
}

export interface BatchFailure {
  reason: string;
  /** The transaction whose receipt shows the revert, if one was mined. */
  reverted?: BatchReceipt;
}

/**
 * The batch can never pay: its transaction reverted, or its nonce was used by a transaction that is
 * not one of its own, or it would revert before anything was signed. `expected` is the status the
 * caller saw (planned or sent). Its transfers go back to the queue for a new batch (a new batch id),
 * or fail for good after maxTransferAttempts. Returns whether this call recorded the failure.
 */
export async function failBatch(
  ctx: SettlementContext,
  batchId: string,
  expected: 'planned' | 'sent',
  failure: BatchFailure,
): Promise<boolean> {
  return ctx.db.transaction().execute(async (trx) => {
    const batch = await trx
      .selectFrom('settlement_batches')
      .select(['status'])
      .where('id', '=', batchId)
      .forUpdate()
      .executeTakeFirst();
    if (batch?.status !== expected) return false;
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

    const transfers = await trx
      .selectFrom('transfers')
      .selectAll()
      .where('batch_id', '=', batchId)
      .where('status', 'in', ['batched', 'sent'])
      .orderBy('id')
      .forUpdate()
      .execute();
    const exhausted = transfers.filter((t) => t.attempts + 1 >= ctx.options.maxTransferAttempts);
    const retry = transfers.filter((t) => t.attempts + 1 < ctx.options.maxTransferAttempts);
    if (retry.length > 0) {
      await trx
        .updateTable('transfers')
        .set((eb) => ({
          status: 'queued',
          batch_id: null,
          attempts: eb('attempts', '+', 1),
          last_error: failure.reason,
          updated_at: sql`now()`,
        }))
        .where(
          'id',
          'in',
          retry.map((t) => t.id),
        )
        .execute();
    }
    if (exhausted.length > 0) await failTransfersForGood(trx, ctx, exhausted, failure.reason);
    ctx.logger.warn(
      { batch: batchId, reason: failure.reason, released: retry.length, failed: exhausted.length },
      'settlement batch failed',
    );
    return true;
  });
}

/** Ends transfers for good: money back from in-flight to where it came from, handlers told. */
async function failTransfersForGood(
  trx: Db,
  ctx: SettlementContext,
  transfers: readonly TransferRow[],
  reason: string,
): Promise<void> {
  const now = ctx.clock.now();
  const sources = await trx
    .selectFrom('ledger_accounts')
    .selectAll()
    .where(
      'id',
      'in',
      transfers.map((t) => t.from_ledger_account),
    )
    .execute();
  const byId = new Map(sources.map((a) => [a.id, a]));
  const postings: LedgerPosting[] = transfers.map((t) => {
    const source = byId.get(t.from_ledger_account);
    if (!source) throw new Error(`ledger account ${t.from_ledger_account} of transfer ${t.id} is missing`);
    const back: LedgerAccountRef = {
      id: source.id,
      kind: source.kind,
      asset: source.asset,
      ...(source.account_id ? { accountId: source.account_id } : {}),
      ...(source.livemode !== null ? { livemode: source.livemode } : {}),
      ...(source.chain_key ? { chainKey: source.chain_key } : {}),
    };
    return {
      kind: 'transfer_failed',
      reference: t.id,
      at: now,
      entries: [debit(ledgerAccount.inFlight(t.asset), t.amount_minor), credit(back, t.amount_minor)],
    };
  });
  await postLedger(trx, postings);
  await trx
    .updateTable('transfers')
    .set((eb) => ({
      status: 'failed',
      batch_id: null,
      attempts: eb('attempts', '+', 1),
      last_error: reason,
      updated_at: sql`now()`,
    }))
    .where(
      'id',
      'in',
      transfers.map((t) => t.id),
    )
    .execute();
  const failed: FailedTransfer[] = transfers.map((t) => ({ transfer: { ...t, status: 'failed' }, reason }));
  const outcome: TransferOutcomeContext = { config: ctx.config, logger: ctx.logger, now };
  for (const [kind, items] of groupByKind(failed, (f) => f.transfer.kind)) {
    await ctx.handlers[kind].onFailed(trx, items, outcome);
  }
}

/**
 * Batches sent on an in-process devnet that no longer exists (its process ended: no live lease on
 * that chain) go back to `planned` with the same batch id, to be signed again on the current chain.
 * That is safe because the old chain, with any transaction that was on it, is gone; on the new chain
 * the contract has never seen the batch id. Chains reached over RPC are never treated this way.
 */
export async function replanBatchesFromGoneChains(ctx: SettlementContext, session: ChainSession): Promise<number> {
  const orphans = await ctx.db
    .selectFrom('settlement_batches as b')
    .innerJoin('chains as c', 'c.chain_key', 'b.chain_key')
    .select(['b.id', 'b.chain_key'])
    .where('b.status', '=', 'sent')
    .where('b.chain_key', '!=', session.key)
    .where('c.ephemeral', '=', true)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('relayer_leases as l')
            .select('l.chain_key')
            .whereRef('l.chain_key', '=', 'b.chain_key')
            .where('l.expires_at', '>', sql<Date>`now()`),
        ),
      ),
    )
    .execute();
  let moved = 0;
  for (const orphan of orphans) {
    const done = await ctx.db.transaction().execute(async (trx) => {
      const batch = await trx
        .selectFrom('settlement_batches')
        .select(['status', 'chain_key'])
        .where('id', '=', orphan.id)
        .forUpdate()
        .executeTakeFirst();
      if (batch?.status !== 'sent' || batch.chain_key !== orphan.chain_key) return false;
      await trx
        .updateTable('settlement_batches')
        .set({ status: 'planned', chain_key: null, sent_at: null, updated_at: sql`now()` })
        .where('id', '=', orphan.id)
        .execute();
      await trx
        .updateTable('chain_transactions')
        .set({ status: 'dropped', last_error: 'the in-process devnet this was signed for is gone' })
        .where('batch_id', '=', orphan.id)
        .where('status', 'in', ['signed', 'broadcast'])
        .execute();
      await trx
        .updateTable('transfers')
        .set({ status: 'batched', updated_at: sql`now()` })
        .where('batch_id', '=', orphan.id)
        .where('status', '=', 'sent')
        .execute();
      return true;
    });
    if (done) moved += 1;
  }
  if (moved > 0) ctx.logger.warn({ batches: moved }, 'batches from a devnet that is gone will be sent again here');
  // A gone devnet can no longer reorganise anything: its confirmed batches are as final as they get.
  await sql`
    update settlement_batches b set finalized_at = now(), updated_at = now()
     where b.status = 'confirmed' and b.finalized_at is null and b.chain_key <> ${session.key}
       and exists (select 1 from chains c where c.chain_key = b.chain_key and c.ephemeral)
       and not exists (select 1 from relayer_leases l where l.chain_key = b.chain_key and l.expires_at > now())`.execute(
    ctx.db,
  );
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

function groupByKind<T>(items: readonly T[], kindOf: (item: T) => TransferKind): Map<TransferKind, T[]> {
  const groups = new Map<TransferKind, T[]>();
  for (const item of items) {
    const kind = kindOf(item);
    const list = groups.get(kind);
    if (list) list.push(item);
    else groups.set(kind, [item]);
  }
  return groups;
}
