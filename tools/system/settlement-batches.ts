// How a settlement batch ends, as system tools run by the settlement worker (src/settlement/): paid
// on chain (confirm_settlement_batch), never payable (fail_settlement_batch), or its confirmation
// undone by a reorg (revert_settlement_batch). Each run is one transaction: the batch's rows
// (src/db/money-writes/settlement-batches.ts), the ledger, the transfers, and each transfer's object (a payment
// settled, a payout paid: transfer-outcomes.ts) with its event, together or not at all; and in the
// action log of every merchant whose money the batch carried.

import type { Hex } from 'viem';
import { z } from 'zod';
import { defineTool, type SystemToolSpec, type ToolContext } from '../../src/core/tool.ts';
import type { Db, ModeScope } from '../../src/db/database.ts';
import type { TransferKind, TransferRow } from '../../src/db/tables/settlement.ts';
import { credit, debit, type LedgerAccountRef, type LedgerPosting, ledgerAccount } from '../../src/ledger/ledger.ts';
import { postLedger } from '../../src/db/money-writes/ledger.ts';
import type { BatchReceipt } from '../../src/domain/batch-receipts.ts';
import { recordBatchFailed, recordBatchPaid, recordBatchUnpaid } from '../../src/db/money-writes/settlement-batches.ts';
import { listLedgerAccountsIn } from '../../src/db/repositories/ledger-accounts.ts';
import { holdsLease } from '../../src/db/repositories/relayer-leases.ts';
import { lockBatch, lockBatchStatus } from '../../src/db/repositories/settlement-batches.ts';
import { listTransferOwners, lockBatchTransfers, lockQueuedTransfers } from '../../src/db/repositories/transfers.ts';
import type {
  ConfirmedTransfer,
  FailedTransfer,
  RevertedTransfer,
  TransferOutcomeContext,
} from './transfer-handler.ts';
import { TRANSFER_HANDLERS } from './transfer-outcomes.ts';
import { inScope, uniqueScopes } from './scopes.ts';
import {
  confirmBatchTransfers,
  endTransferAttempt,
  unconfirmBatchTransfers,
} from '../../src/db/money-writes/transfers.ts';

const hex = z.string().regex(/^0x[0-9a-fA-F]*$/);
const uint = z.string().regex(/^\d{1,78}$/);

const chainFactsInput = z.strictObject({
  key: z.string().min(1).max(200),
  chain_id: z.number().int().positive(),
  /** The in-process devnet: never reorganises, so a confirmation is final at once. */
  ephemeral: z.boolean(),
  confirmations: z.number().int().min(0),
  batch_address: hex,
  asset: z.string().min(1).max(16),
  relayer: hex,
});
export type BatchChainFacts = z.output<typeof chainFactsInput>;

const receiptSchema = z.strictObject({
  chain_key: z.string().min(1).max(200),
  hash: hex,
  block_number: uint,
  block_hash: hex,
  gas_used: uint,
  effective_gas_price: uint,
});
type ReceiptInput = z.output<typeof receiptSchema>;

function batchReceipt(input: ReceiptInput): BatchReceipt {
  return {
    chainKey: input.chain_key,
    hash: input.hash as Hex,
    blockNumber: BigInt(input.block_number),
    blockHash: input.block_hash as Hex,
    gasUsed: BigInt(input.gas_used),
    effectiveGasPrice: BigInt(input.effective_gas_price),
  };
}

/**
 * The treasury on this chain: the tokens its batch contract holds (an asset account). A confirmed
 * transfer's tokens left it on chain, so the confirmation credits it (lowers it) and settles the
 * in-flight amount; a reorg's reversal debits it back.
 */
function treasuryOf(chain: BatchChainFacts): LedgerAccountRef {
  return ledgerAccount.treasury(chain.key, chain.batch_address, chain.asset);
}

const transferLine = z.object({
  transfer_id: z.string(),
  kind: z.string(),
  source_id: z.string(),
  account_id: z.string(),
  livemode: z.boolean(),
  amount_minor: z.string(),
});
type TransferLine = z.output<typeof transferLine>;

function line(t: TransferRow): TransferLine {
  return {
    transfer_id: t.id,
    kind: t.kind,
    source_id: t.source_id,
    account_id: t.account_id,
    livemode: t.livemode,
    amount_minor: t.amount_minor.toString(),
  };
}

/**
 * Every merchant whose money the batch carries, read before any row lock (the pipeline takes their
 * action-log locks first); each one's log row records its own transfers.
 */
function batchAccounts<O extends { transfers: TransferLine[] }>(): SystemToolSpec<{ batch_id: string }, O> {
  return {
    accounts: (input, { db }) => transferScopes(db, 'batch_id', [input.batch_id]),
    // The batch's own facts (its id, the chain, the receipt, the reason) are every merchant's; of
    // its transfers each row records only that merchant's.
    recordFor(input, output, scope: ModeScope) {
      const transfers = output.transfers.filter((t) => inScope(t, scope));
      if (transfers.length === 0) return undefined;
      const { transfers: _all, ...rest } = output as O & Record<string, unknown>;
      return { input, result: { ...rest, transfers }, amountSettlementMinor: sumOf(transfers) };
    },
  };
}

function sumOf(transfers: readonly TransferLine[]): bigint {
  return transfers.reduce((sum, t) => sum + BigInt(t.amount_minor), 0n);
}

/** The merchants (and modes) whose transfers these are: by batch, or by transfer id. */
async function transferScopes(db: Db, by: 'batch_id' | 'id', values: readonly string[]): Promise<ModeScope[]> {
  return uniqueScopes(await listTransferOwners(db, by, values));
}

function outcomeContext(ctx: ToolContext): TransferOutcomeContext {
  return { config: ctx.config, logger: ctx.logger, now: ctx.now };
}

const confirmOutput = z.object({
  batch_id: z.string(),
  /** False: the batch was no longer `sent` (another worker recorded it); nothing changed. */
  confirmed: z.boolean(),
  tx_hash: z.string().nullable(),
  transfers: z.array(transferLine),
});

/**
 * A batch's transaction is mined, succeeded and has the configured confirmations: the batch and its
 * transfers are confirmed, each transfer's money moves in-flight → treasury, and each transfer's
 * object settles (payment.settled, payout.settled) with its share of the gas.
 */
export const confirmSettlementBatch = defineTool({
  name: 'confirm_settlement_batch',
  title: 'Record a settlement batch paid on chain',
  description: 'Confirms a settlement batch whose transaction is mined: ledger, transfers, payments and payouts.',
  input: z.strictObject({ batch_id: z.string().min(1).max(100), chain: chainFactsInput, receipt: receiptSchema }),
  output: confirmOutput,
  effect: 'money',
  scope: 'payouts:write',
  system: batchAccounts<z.output<typeof confirmOutput>>(),
  async handler(input, ctx) {
    const { db, now } = ctx;
    const batchId = input.batch_id;
    const receipt = batchReceipt(input.receipt);
    const nothing = { batch_id: batchId, confirmed: false, tx_hash: null, transfers: [] };
    const batch = await lockBatch(db, batchId);
    if (batch?.status !== 'sent') return nothing;
    const transfers = await lockBatchTransfers(db, batchId, ['sent']);
    const total = transfers.reduce((sum, t) => sum + t.amount_minor, 0n);
    if (transfers.length !== batch.transfer_count || total !== batch.total_minor) {
      // Paid on chain, but the rows disagree with what was signed: stop and shout rather than guess.
      throw new Error(`batch ${batchId} was paid but its transfers do not add up to the signed batch`);
    }
    await recordBatchPaid(db, batchId, receipt, input.chain.ephemeral);
    const treasury = treasuryOf(input.chain);
    await postLedger(
      db,
      transfers.map((t) => ({
        kind: 'transfer_confirmed',
        // A confirmation a reorg undid was reversed by its own posting; each later one is a new
        // posting (the ledger is append-only, and (kind, reference) is unique).
        reference: t.reversals === 0 ? t.id : `${t.id}:${t.reversals}`,
        at: now,
        entries: [debit(ledgerAccount.inFlight(t.asset), t.amount_minor), credit(treasury, t.amount_minor)],
      })),
    );
    await confirmBatchTransfers(db, batchId);

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
        chainId: input.chain.chain_id,
        txHash: receipt.hash,
        blockNumber: receipt.blockNumber,
        gasUsed,
        gasCostWei: gasUsed * receipt.effectiveGasPrice,
        confirmations: input.chain.confirmations,
      };
    });
    const outcome = outcomeContext(ctx);
    for (const [kind, items] of groupByKind(confirmed, (c) => c.transfer.kind)) {
      await TRANSFER_HANDLERS[kind].onConfirmed(db, items, outcome);
    }
    return { batch_id: batchId, confirmed: true, tx_hash: receipt.hash, transfers: transfers.map(line) };
  },
});

const revertOutput = z.object({
  batch_id: z.string(),
  /** False: the batch was not a confirmed, unfinalised batch of this chain, or the lease lapsed. */
  reverted: z.boolean(),
  tx_hash: z.string().nullable(),
  block_number: z.string().nullable(),
  block_hash: z.string().nullable(),
  /** The batch's signed transactions that are live again (the worker broadcasts them again). */
  live: z.array(z.object({ chain_key: z.string(), hash: z.string() })),
  transfers: z.array(transferLine),
});

/**
 * A reorg took a confirmed batch's transaction off the chain: the ledger is corrected by a
 * reversing posting per transfer (treasury → in-flight), never by removing the confirmation's
 * posting; the transfers are `sent` again and each transfer's object moves back with a correcting
 * event (payment.settlement_reverted, payout.settlement_reverted).
 */
export const revertSettlementBatch = defineTool({
  name: 'revert_settlement_batch',
  title: 'Record a settlement batch undone by a reorg',
  description: 'Puts a confirmed settlement batch whose transaction left the chain back in flight.',
  input: z.strictObject({
    batch_id: z.string().min(1).max(100),
    chain: chainFactsInput,
    /** The relayer lease the worker holds: a worker whose lease lapsed changes nothing on this chain. */
    holder: z.string().min(1).max(200),
    reason: z.string().min(1).max(2000),
  }),
  output: revertOutput,
  effect: 'money',
  scope: 'payouts:write',
  system: batchAccounts<z.output<typeof revertOutput>>(),
  async handler(input, ctx) {
    const { db, now } = ctx;
    const { batch_id: batchId, chain, reason } = input;
    const nothing = {
      batch_id: batchId,
      reverted: false,
      tx_hash: null,
      block_number: null,
      block_hash: null,
      live: [],
      transfers: [],
    };
    const batch = await lockBatch(db, batchId);
    if (batch?.status !== 'confirmed' || batch.chain_key !== chain.key || batch.finalized_at !== null) return nothing;
    // Fencing as for signing: a worker whose relayer lease lapsed changes nothing on this chain.
    if (!(await holdsLease(db, { holder: input.holder }, { key: chain.key, relayer: chain.relayer as Hex }))) {
      return nothing;
    }
    const transfers = await lockBatchTransfers(db, batchId, ['confirmed']);
    const treasury = treasuryOf(chain);
    await postLedger(
      db,
      transfers.map((t) => ({
        kind: 'transfer_confirmation_reversed',
        reference: `${t.id}:${t.reversals + 1}`,
        at: now,
        entries: [debit(treasury, t.amount_minor), credit(ledgerAccount.inFlight(t.asset), t.amount_minor)],
      })),
    );
    await unconfirmBatchTransfers(db, batchId, reason);
    const live = await recordBatchUnpaid(db, batchId, chain.key, reason);
    const items: RevertedTransfer[] = transfers.map((t) => ({
      transfer: { ...t, status: 'sent' },
      batchId,
      chainId: chain.chain_id,
      txHash: batch.tx_hash as Hex,
      blockNumber: batch.block_number,
      reason,
    }));
    const outcome = outcomeContext(ctx);
    for (const [kind, group] of groupByKind(items, (r) => r.transfer.kind)) {
      await TRANSFER_HANDLERS[kind].onReverted(db, group, outcome);
    }
    return {
      batch_id: batchId,
      reverted: true,
      tx_hash: batch.tx_hash,
      block_number: batch.block_number === null ? null : batch.block_number.toString(),
      block_hash: batch.block_hash,
      live,
      transfers: transfers.map(line),
    };
  },
});

const failOutput = z.object({
  batch_id: z.string(),
  /** False: the batch was no longer in the status the worker saw; nothing changed. */
  failed: z.boolean(),
  /** Back in the queue for a new batch. */
  released: z.array(z.string()),
  /** Failed for good: their money is back where it came from (transfers lists them). */
  transfers: z.array(transferLine),
});

/**
 * A batch can never pay (its transaction reverted, its nonce went to another transaction, or it
 * would revert before signing): its transfers go back to the queue for a new batch, or, after
 * max_transfer_attempts, fail for good: money back from in-flight to where it came from, and each
 * transfer's object told (a payment settles into the balance; a payout fails, payout.failed).
 */
export const failSettlementBatch = defineTool({
  name: 'fail_settlement_batch',
  title: 'Record a settlement batch that cannot pay',
  description: 'Fails a settlement batch: its transfers are queued again or fail for good with their money returned.',
  input: z.strictObject({
    batch_id: z.string().min(1).max(100),
    expected: z.enum(['planned', 'sent']),
    reason: z.string().min(1).max(2000),
    reverted: receiptSchema.optional(),
    max_transfer_attempts: z.number().int().min(1),
  }),
  output: failOutput,
  effect: 'money',
  scope: 'payouts:write',
  system: batchAccounts<z.output<typeof failOutput>>(),
  async handler(input, ctx) {
    const { db } = ctx;
    const { batch_id: batchId, reason } = input;
    const status = await lockBatchStatus(db, batchId);
    if (status !== input.expected) return { batch_id: batchId, failed: false, released: [], transfers: [] };
    await recordBatchFailed(db, batchId, {
      reason,
      ...(input.reverted ? { reverted: batchReceipt(input.reverted) } : {}),
    });
    const transfers = await lockBatchTransfers(db, batchId, ['batched', 'sent']);
    const exhausted = transfers.filter((t) => t.attempts + 1 >= input.max_transfer_attempts);
    const retry = transfers.filter((t) => t.attempts + 1 < input.max_transfer_attempts);
    if (retry.length > 0) await endTransferAttempt(db, retry, 'queued', reason);
    if (exhausted.length > 0) await failTransfersForGood(db, ctx, exhausted, reason);
    return {
      batch_id: batchId,
      failed: true,
      released: retry.map((t) => t.id),
      transfers: exhausted.map(line),
    };
  },
});

const failQueuedOutput = z.object({ transfers: z.array(transferLine) });

/**
 * Queued transfers the batch planner must never sign (a recipient that is one of the service's own
 * contracts; test-mode money on a chain where tokens are real) fail for good: money back from
 * in-flight to where it came from, each object told. Transfers no longer queued are left alone.
 */
export const failQueuedTransfers = defineTool({
  name: 'fail_queued_transfers',
  title: 'Fail transfers that must never be sent',
  description: 'Fails queued transfers for good and returns their money to where it came from.',
  input: z.strictObject({
    transfer_ids: z.array(z.string().min(1).max(100)).min(1).max(5000),
    reason: z.string().min(1).max(2000),
  }),
  output: failQueuedOutput,
  effect: 'money',
  scope: 'payouts:write',
  system: {
    accounts: (input, { db }) => transferScopes(db, 'id', input.transfer_ids),
    recordFor(input, output, scope) {
      const transfers = output.transfers.filter((t) => inScope(t, scope));
      if (transfers.length === 0) return undefined;
      return {
        input: { ...input, transfer_ids: transfers.map((t) => t.transfer_id) },
        result: { transfers },
        amountSettlementMinor: sumOf(transfers),
      };
    },
  },
  async handler(input, ctx) {
    const transfers = await lockQueuedTransfers(ctx.db, input.transfer_ids);
    if (transfers.length > 0) await failTransfersForGood(ctx.db, ctx, transfers, input.reason);
    return { transfers: transfers.map(line) };
  },
});

/** Ends transfers for good: money back from in-flight to where it came from, each object told. */
async function failTransfersForGood(
  db: Db,
  ctx: ToolContext,
  transfers: readonly TransferRow[],
  reason: string,
): Promise<void> {
  const { now } = ctx;
  const sources = await listLedgerAccountsIn(
    db,
    transfers.map((t) => t.from_ledger_account),
  );
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
  await postLedger(db, postings);
  await endTransferAttempt(db, transfers, 'failed', reason);
  const failed: FailedTransfer[] = transfers.map((t) => ({ transfer: { ...t, status: 'failed' }, reason }));
  const outcome = outcomeContext(ctx);
  for (const [kind, items] of groupByKind(failed, (f) => f.transfer.kind)) {
    await TRANSFER_HANDLERS[kind].onFailed(db, items, outcome);
  }
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
