// Reads of settlement batches for the settlement worker. Every write to them is in
// src/db/money-writes/settlement-batches.ts.

import { sql } from 'kysely';
import type { Db } from '../database.ts';

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
