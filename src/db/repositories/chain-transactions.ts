// The relayer's signed transactions (chain_transactions): each stored before its first broadcast,
// then its broadcasts, for a settlement batch or an x402 authorization (migration 031). The queries
// of the relayer (src/settlement/relayer.ts), its nonce repair (nonces.ts) and the authorizations'
// submission (authorizations.ts). No money moves here: a batch's or an authorization's outcome is a
// system tool's run.

import { type Insertable, sql } from 'kysely';
import type { Db } from '../database.ts';
import type { ChainTransactionRow, ChainTransactionsTable } from '../tables/settlement.ts';

/** A stored transaction being followed: how old it is and how long since it was last broadcast, in ms. */
export type TrackedTransaction = ChainTransactionRow & { age_ms: number; since_broadcast_ms: number | null };

/** A signed transaction, stored in the caller's transaction before anything broadcasts it. */
export async function insertChainTransaction(
  trx: Db,
  row: Insertable<ChainTransactionsTable>,
): Promise<ChainTransactionRow> {
  return await trx.insertInto('chain_transactions').values(row).returningAll().executeTakeFirstOrThrow();
}

/** The node took the transaction (or said its nonce is used by another: `lastError`). */
export async function recordBroadcast(
  db: Db,
  tx: { chain_key: string; hash: string },
  lastError: string | null,
): Promise<void> {
  await db
    .updateTable('chain_transactions')
    .set((eb) => ({
      status: sql`case when status = 'signed' then 'broadcast' else status end`,
      broadcast_count: eb('broadcast_count', '+', 1),
      last_broadcast_at: sql`now()`,
      last_error: lastError,
    }))
    .where('chain_key', '=', tx.chain_key)
    .where('hash', '=', tx.hash)
    .execute();
}

/** The node refused the transaction: why, and when it was tried. */
export async function recordBroadcastRefused(
  db: Db,
  tx: { chain_key: string; hash: string },
  lastError: string,
): Promise<void> {
  await db
    .updateTable('chain_transactions')
    .set({ last_error: lastError, last_broadcast_at: sql`now()` })
    .where('chain_key', '=', tx.chain_key)
    .where('hash', '=', tx.hash)
    .execute();
}

// The two tracking reads below look alike but differ in what a transaction's age is measured from,
// which decides when its fee is bumped. A batch that a reorg put back in flight sends the same
// stored bytes again (its sent_at is reset, its transactions are not), so its age counts from the
// later of signing and the batch going back in flight: the same bytes first, not a bump at once. A
// resubmitted authorization drops its transactions and is signed anew, so signing is enough.
// (The authorizations' read is also kept to the chain: their rows outlive a gone devnet.)

/** The live (signed or broadcast) transactions of these batches, in nonce order, cheapest first within a nonce. */
export async function trackedBatchTransactions(db: Db, batchIds: readonly string[]): Promise<TrackedTransaction[]> {
  return await db
    .selectFrom('chain_transactions')
    .selectAll(['chain_transactions'])
    .select(
      sql<number>`(extract(epoch from now() - greatest(chain_transactions.created_at, (select b.sent_at from settlement_batches b where b.id = chain_transactions.batch_id))) * 1000)::int`.as(
        'age_ms',
      ),
    )
    .select(sql<number | null>`(extract(epoch from now() - last_broadcast_at) * 1000)::int`.as('since_broadcast_ms'))
    .where('batch_id', 'in', batchIds)
    .where('status', 'in', ['signed', 'broadcast'])
    .orderBy('nonce')
    .orderBy('max_fee_per_gas')
    .execute();
}

/** The live transactions on this chain of these authorizations, in nonce order, cheapest first within a nonce. */
export async function trackedAuthorizationTransactions(
  db: Db,
  chainKey: string,
  authorizationIds: readonly string[],
): Promise<TrackedTransaction[]> {
  return await db
    .selectFrom('chain_transactions')
    .selectAll()
    .select(sql<number>`(extract(epoch from now() - created_at) * 1000)::int`.as('age_ms'))
    .select(sql<number | null>`(extract(epoch from now() - last_broadcast_at) * 1000)::int`.as('since_broadcast_ms'))
    .where('chain_key', '=', chainKey)
    .where('authorization_id', 'in', authorizationIds)
    .where('status', 'in', ['signed', 'broadcast'])
    .orderBy('nonce')
    .orderBy('max_fee_per_gas')
    .execute();
}

/** The highest-fee live transaction of a batch or authorization at `nonce` on this chain (the newest fee bump). */
export async function newestLiveTransaction(
  db: Db,
  chainKey: string,
  owner: { column: 'batch_id' | 'authorization_id'; id: string },
  nonce: bigint,
): Promise<Pick<ChainTransactionRow, 'chain_key' | 'hash' | 'raw_transaction'> | undefined> {
  return await db
    .selectFrom('chain_transactions')
    .select(['chain_key', 'hash', 'raw_transaction'])
    .where('chain_key', '=', chainKey)
    .where(owner.column, '=', owner.id)
    .where('nonce', '=', nonce)
    .where('status', 'in', ['signed', 'broadcast'])
    .orderBy('max_fee_per_gas', 'desc')
    .executeTakeFirst();
}

/** An authorization's live transactions can no longer carry it: dropped, with why. */
export async function dropAuthorizationTransactions(trx: Db, authorizationId: string, why: string): Promise<void> {
  await trx
    .updateTable('chain_transactions')
    .set({ status: 'dropped', last_error: why })
    .where('authorization_id', '=', authorizationId)
    .where('status', 'in', ['signed', 'broadcast'])
    .execute();
}
