// Reads of settlement batches for the settlement worker. Every write to them is in
// src/db/money-writes/settlement-batches.ts.

import { sql } from 'kysely';
import type { Db } from '../database.ts';
import type { SettlementBatchRow } from '../tables/settlement.ts';

/**
 * Batches sent on an in-process devnet that is gone: an ephemeral chain other than the current one
 * on which no lease is live (its process ended).
 */
export async function sentBatchesOnGoneDevnets(
  db: Db,
  currentChainKey: string,
): Promise<{ id: string; chain_key: string }[]> {
  return (
    db
      .selectFrom('settlement_batches as b')
      .innerJoin('chains as c', 'c.chain_key', 'b.chain_key')
      .select(['b.id', 'b.chain_key'])
      .where('b.status', '=', 'sent')
      .where('b.chain_key', '!=', currentChainKey)
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
      // The inner join on chains has no row for a null chain_key.
      .$narrowType<{ chain_key: string }>()
      .execute()
  );
}

/** The ids of the batches sent on a chain, locked for the caller's transaction. */
export async function lockSentBatchesOn(trx: Db, chainKey: string): Promise<{ id: string }[]> {
  return trx
    .selectFrom('settlement_batches')
    .select('id')
    .where('chain_key', '=', chainKey)
    .where('status', '=', 'sent')
    .forUpdate()
    .execute();
}

/** How many batches are sent on a chain and not confirmed there. */
export async function countSentBatchesOn(db: Db, chainKey: string): Promise<number> {
  const open = await db
    .selectFrom('settlement_batches')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('chain_key', '=', chainKey)
    .where('status', '=', 'sent')
    .executeTakeFirstOrThrow();
  return Number(open.n);
}

/**
 * Batches sent (or back in flight after a reorg) longer ago than `stuckAfterMs` and still
 * unconfirmed, oldest first; one whose nonce is used without a successful receipt of its own only
 * once it has waited `stuckAwaitingFinalityAfterMs` since that was seen.
 */
export async function stuckBatches(db: Db, options: { stuckAfterMs: number; stuckAwaitingFinalityAfterMs: number }) {
  const { stuckAfterMs, stuckAwaitingFinalityAfterMs } = options;
  return db
    .selectFrom('settlement_batches')
    .select(['id', 'chain_key', 'sent_at', 'reorg_count', 'nonce_used_at'])
    .where('status', '=', 'sent')
    .where('sent_at', '<', sql<Date>`now() - (${stuckAfterMs}::int * interval '1 millisecond')`)
    .where((eb) =>
      eb.or([
        eb('nonce_used_at', 'is', null),
        eb('nonce_used_at', '<', sql<Date>`now() - (${stuckAwaitingFinalityAfterMs}::int * interval '1 millisecond')`),
      ]),
    )
    .orderBy('sent_at')
    .limit(1_000)
    .execute();
}

/** Planned batches, oldest first, up to `limit`: the relayer signs and sends them in this order. */
export async function plannedBatches(db: Db, limit: number): Promise<SettlementBatchRow[]> {
  return await db
    .selectFrom('settlement_batches')
    .selectAll()
    .where('status', '=', 'planned')
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** A batch's status, its row locked for the caller's transaction (the one that signs for it). */
export async function lockBatchStatus(trx: Db, batchId: string): Promise<SettlementBatchRow['status'] | undefined> {
  const batch = await trx
    .selectFrom('settlement_batches')
    .select('status')
    .where('id', '=', batchId)
    .forUpdate()
    .executeTakeFirst();
  return batch?.status;
}

/** The batches sent on a chain, the oldest sent first: the relayer follows each to its end. */
export async function sentBatchesToFollow(
  db: Db,
  chainKey: string,
): Promise<Pick<SettlementBatchRow, 'id' | 'batch_key' | 'sent_at' | 'nonce_used_at'>[]> {
  return await db
    .selectFrom('settlement_batches')
    .select(['id', 'batch_key', 'sent_at', 'nonce_used_at'])
    .where('status', '=', 'sent')
    .where('chain_key', '=', chainKey)
    .orderBy('sent_at')
    .execute();
}

/** The batches confirmed on a chain and not final yet, lowest block first, up to 1,000: the reorg watch's. */
export async function confirmedBatchesNotFinal(
  db: Db,
  chainKey: string,
): Promise<Pick<SettlementBatchRow, 'id' | 'tx_hash' | 'block_number' | 'block_hash'>[]> {
  return await db
    .selectFrom('settlement_batches')
    .select(['id', 'tx_hash', 'block_number', 'block_hash'])
    .where('status', '=', 'confirmed')
    .where('finalized_at', 'is', null)
    .where('chain_key', '=', chainKey)
    .orderBy('block_number', 'asc')
    .limit(1_000)
    .execute();
}

/** The batches sent on a chain, with their totals (the invariants: paid on chain, not yet booked?). */
export async function sentBatchTotals(
  db: Db,
  chainKey: string,
): Promise<Pick<SettlementBatchRow, 'id' | 'batch_key' | 'total_minor'>[]> {
  return await db
    .selectFrom('settlement_batches')
    .select(['id', 'batch_key', 'total_minor'])
    .where('status', '=', 'sent')
    .where('chain_key', '=', chainKey)
    .execute();
}

/** Transfers in more than one confirmed batch (paid twice), up to 20: the invariants expect none. */
export async function transfersInSeveralConfirmedBatches(db: Db): Promise<{ transfer_id: string; n: number }[]> {
  const twice = await sql<{ transfer_id: string; n: number }>`
    select bt.transfer_id, count(*)::int as n from settlement_batch_transfers bt
      join settlement_batches b on b.id = bt.batch_id
     where b.status = 'confirmed' group by bt.transfer_id having count(*) > 1 limit 20`.execute(db);
  return twice.rows;
}

/**
 * Confirmed batches whose total or count differs from their transfers', or with a transfer not
 * confirmed by them, up to 20: the invariants expect none.
 */
export async function confirmedBatchesNotMatchingTransfers(db: Db): Promise<{ id: string }[]> {
  const mismatched = await sql<{ id: string }>`
    select b.id from settlement_batches b
      join settlement_batch_transfers bt on bt.batch_id = b.id
      join transfers t on t.id = bt.transfer_id
     where b.status = 'confirmed'
     group by b.id, b.total_minor, b.transfer_count
    having b.total_minor <> sum(t.amount_minor) or b.transfer_count <> count(*)
       or bool_or(t.status <> 'confirmed' or t.batch_id <> b.id) limit 20`.execute(db);
  return mismatched.rows;
}

// Locks a system tool takes in its own transaction before it records how a batch ended.

/** A batch, its row locked for the caller's transaction (the one that records its outcome). */
export async function lockBatch(trx: Db, batchId: string): Promise<SettlementBatchRow | undefined> {
  return trx.selectFrom('settlement_batches').selectAll().where('id', '=', batchId).forUpdate().executeTakeFirst();
}

/** These batches' status and chain, their rows locked in id order (the order every locker takes). */
export async function lockBatchesById(
  trx: Db,
  batchIds: readonly string[],
): Promise<Pick<SettlementBatchRow, 'id' | 'status' | 'chain_key'>[]> {
  return trx
    .selectFrom('settlement_batches')
    .select(['id', 'status', 'chain_key'])
    .where('id', 'in', batchIds)
    .orderBy('id')
    .forUpdate()
    .execute();
}
