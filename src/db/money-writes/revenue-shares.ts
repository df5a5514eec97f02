// A revenue share's row, written in split_revenue's run with its legs' payouts. Only tools/ imports
// this (test/architecture.test.ts).

import type { Insertable } from 'kysely';
import type { Db } from '../database.ts';
import type { RevenueShareRow, RevenueSharesTable } from '../tables/money.ts';

export async function insertRevenueShare(db: Db, share: Insertable<RevenueSharesTable>): Promise<RevenueShareRow> {
  return db.insertInto('revenue_shares').values(share).returningAll().executeTakeFirstOrThrow();
}
