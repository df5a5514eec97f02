// The transfer queue: the only way money leaves the treasury. A tool that pays someone (a payout, a
// split leg, a payment's settlement) queues the transfer inside its own run: the amount moves to
// in-flight in the ledger and the transfer row is written together; the settlement worker batches,
// signs, broadcasts and follows it (docs/settlement.md), and its outcome is recorded by the system
// tools in tools/system/. Refunds do not come through here: they go back over the payer's rail.
// Only tools/ imports this (test/architecture.test.ts): a transfer is queued in a tool's run.

import { type Insertable, sql } from 'kysely';
import type { Db } from '../database.ts';
import type { TransferKind, TransferRow, TransfersTable } from '../tables/settlement.ts';
import { newId } from '../../domain/ids.ts';
import { SETTLEMENT_CURRENCY } from '../../domain/money.ts';
import { credit, debit, type LedgerAccountRef, type LedgerPosting, ledgerAccount } from '../../ledger/ledger.ts';
import { postLedger } from './ledger.ts';
import { checkRecipient, TransferRefusedError } from '../../domain/recipients.ts';

export interface EnqueueTransferInput {
  kind: TransferKind;
  /** The object asking for the transfer (pay_…, po_…): one transfer per (kind, sourceId), ever. */
  sourceId: string;
  /** The merchant account whose money this is. */
  accountId: string;
  livemode: boolean;
  /** 0x EVM address that receives the tokens. */
  recipient: string;
  /** Minor units of the settlement asset (USDC: 6 decimals), > 0. */
  amountMinor: bigint;
  /**
   * The ledger account the money comes from; by default the merchant's custodial balance in this
   * mode. It moves to in-flight now and back here if the transfer fails for good.
   */
  from?: LedgerAccountRef;
  at?: Date;
  /**
   * Settlement schedules (schedules.ts): the transfer waits in the queue until then. Absent or null:
   * instant, sent by the next batch.
   */
  dueAt?: Date | null;
  /**
   * Due at once, whatever dueAt says, when the transfers waiting for the recipient with a threshold
   * add up to this (USDC minor units); see releaseReachedThresholds.
   */
  thresholdMinor?: bigint | null;
}

/** A transfer of this kind was already queued for this source. */
export class DuplicateTransferError extends Error {
  override name = 'DuplicateTransferError';
}

/**
 * Queues one on-chain transfer, inside the caller's transaction: moves the amount from `from` (the
 * merchant's custodial balance by default) to in-flight in the ledger and inserts the transfer row.
 * Throws InsufficientBalanceError (src/ledger) when `from` does not hold the amount,
 * DuplicateTransferError when (kind, sourceId) was queued before, and TransferRefusedError for an
 * amount or recipient that must never be sent. In every case the caller's transaction must roll back.
 */
export async function enqueueTransfer(db: Db, input: EnqueueTransferInput): Promise<TransferRow> {
  const [row] = await enqueueTransfers(db, [input]);
  return row!;
}

/** enqueueTransfer for many at once (one ledger call, one insert): what the settlement worker uses. */
export async function enqueueTransfers(
  db: Db,
  inputs: readonly EnqueueTransferInput[],
  options: { alsoPost?: readonly LedgerPosting[] } = {},
): Promise<TransferRow[]> {
  const prepared = inputs.map((input) => prepareTransfer(input));
  // One postLedger call so that balances are locked in one sorted pass (see postLedger).
  await postLedger(db, [...(options.alsoPost ?? []), ...prepared.map((p) => p.posting)]);
  if (prepared.length === 0) return [];
  const rows = await db
    .insertInto('transfers')
    .values(prepared.map((p) => p.row))
    .onConflict((oc) => oc.columns(['kind', 'source_id']).doNothing())
    .returningAll()
    .execute();
  if (rows.length !== prepared.length) {
    const stored = new Set(rows.map((r) => r.id));
    const duplicate = prepared.find((p) => !stored.has(p.row.id));
    throw new DuplicateTransferError(
      `a ${duplicate?.row.kind} transfer for ${duplicate?.row.source_id} was already queued; no second one is made`,
    );
  }
  return rows;
}

function prepareTransfer(input: EnqueueTransferInput): {
  row: Insertable<TransfersTable> & { id: string; kind: TransferKind; source_id: string };
  posting: LedgerPosting;
} {
  const asset = SETTLEMENT_CURRENCY.code;
  if (typeof input.amountMinor !== 'bigint' || input.amountMinor <= 0n) {
    throw new TransferRefusedError(`transfer amount must be a bigint > 0, got ${String(input.amountMinor)}`);
  }
  const recipient = checkRecipient(input.recipient);
  const from = input.from ?? ledgerAccount.merchant(input.accountId, input.livemode, asset);
  if (from.asset !== asset) {
    throw new TransferRefusedError(`transfers are paid in ${asset}; ledger account ${from.id} holds ${from.asset}`);
  }
  const id = newId('tx');
  return {
    row: {
      id,
      kind: input.kind,
      source_id: input.sourceId,
      account_id: input.accountId,
      livemode: input.livemode,
      asset,
      recipient,
      amount_minor: input.amountMinor,
      from_ledger_account: from.id,
      status: 'queued',
      batch_id: null,
      last_error: null,
      due_at: input.dueAt ?? null,
      threshold_minor: input.thresholdMinor ?? null,
    },
    posting: {
      kind: 'transfer_enqueued',
      reference: id,
      entries: [debit(from, input.amountMinor), credit(ledgerAccount.inFlight(asset), input.amountMinor)],
      ...(input.at ? { at: input.at } : {}),
    },
  };
}

/**
 * The threshold schedule: after transfers with a threshold were queued (in the caller's
 * transaction), every waiting threshold transfer whose recipient is now owed at least its threshold
 * by the same account, in the same mode and asset (by all its waiting threshold transfers together),
 * becomes due now, and so does its payment's `settlement_due_at`. Transfers already due do not
 * count again. A per-owing transaction lock makes concurrent intakes for one address add up one
 * after the other: each sums in a statement that starts after the other committed.
 */
export async function releaseReachedThresholds(db: Db, queued: readonly TransferRow[], now: Date): Promise<void> {
  const owings = new Map<string, TransferRow>();
  for (const t of queued) {
    if (t.threshold_minor === null) continue;
    owings.set(`${t.account_id}:${t.livemode}:${t.asset}:${t.recipient}`, t);
  }
  for (const [owing, t] of [...owings].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`plainpay:threshold:${owing}`}, 0))`.execute(db);
    const waiting = sql`status = 'queued' and account_id = ${t.account_id} and livemode = ${t.livemode}
         and asset = ${t.asset} and recipient = ${t.recipient} and threshold_minor is not null
         and (due_at is null or due_at > ${now})`;
    const released = await sql<{ kind: TransferKind; source_id: string }>`
      update transfers set due_at = ${now}, updated_at = now()
       where ${waiting}
         and threshold_minor <= (select sum(amount_minor) from transfers where ${waiting})
      returning kind, source_id`.execute(db);
    const payments = released.rows.filter((r) => r.kind === 'payment_settlement').map((r) => r.source_id);
    if (payments.length > 0) {
      await db
        .updateTable('payments')
        .set({ settlement_due_at: now, updated_at: now })
        .where('id', 'in', payments)
        .where('status', '=', 'settling')
        .execute();
    }
  }
}

/**
 * Queued transfers taken into a planned batch (compare-and-set on rows the planner holds locked).
 * Returns how many moved: fewer than asked means a locked row changed under its lock.
 */
export async function batchQueuedTransfers(db: Db, batchId: string, transferIds: readonly string[]): Promise<number> {
  const moved = await db
    .updateTable('transfers')
    .set({ status: 'batched', batch_id: batchId, updated_at: sql`now()` })
    .where('id', 'in', transferIds)
    .where('status', '=', 'queued')
    .executeTakeFirst();
  return Number(moved.numUpdatedRows);
}

/**
 * A batch's transfers once its signed transaction is stored: a transaction exists that may land, so
 * they stay with this batch until it is confirmed or provably dead.
 */
export async function sendBatchTransfers(db: Db, batchId: string): Promise<void> {
  await db
    .updateTable('transfers')
    .set({ status: 'sent', updated_at: sql`now()` })
    .where('batch_id', '=', batchId)
    .where('status', '=', 'batched')
    .execute();
}

/** The transfers of batches re-planned after their chain was gone: `batched` again, in the same batch. */
export async function rebatchSentTransfers(db: Db, batchIds: readonly string[]): Promise<void> {
  await db
    .updateTable('transfers')
    .set({ status: 'batched', updated_at: sql`now()` })
    .where('batch_id', 'in', batchIds)
    .where('status', '=', 'sent')
    .execute();
}

/** A mined batch's transfers confirmed (confirm_settlement_batch): their money reached the recipients. */
export async function confirmBatchTransfers(db: Db, batchId: string): Promise<void> {
  await db
    .updateTable('transfers')
    .set({ status: 'confirmed', confirmed_at: sql`now()`, updated_at: sql`now()` })
    .where('batch_id', '=', batchId)
    .where('status', '=', 'sent')
    .execute();
}

/** A batch's confirmation a reorg undid (revert_settlement_batch): its transfers are `sent` again. */
export async function unconfirmBatchTransfers(db: Db, batchId: string, reason: string): Promise<void> {
  await db
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
}

/**
 * A failed attempt of these transfers ends: out of their batch, one attempt more, the reason kept;
 * `queued` for a new batch, or `failed` for good (its money already posted back).
 */
export async function endTransferAttempt(
  db: Db,
  transfers: readonly TransferRow[],
  status: 'queued' | 'failed',
  reason: string,
): Promise<void> {
  await db
    .updateTable('transfers')
    .set((eb) => ({
      status,
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
}
