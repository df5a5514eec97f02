// Reads of the ledger's postings. Every posting is written by postLedger in
// src/db/money-writes/ledger.ts, in a tool's run.

import type { Db } from '../database.ts';

/** Whether the opening balance of a treasury (its ledger account id) has been posted: its first sight on a chain. */
export async function hasTreasuryOpening(db: Db, treasuryAccountId: string): Promise<boolean> {
  const opened = await db
    .selectFrom('ledger_postings')
    .select('id')
    .where('kind', '=', 'treasury_opening')
    .where('reference', '=', treasuryAccountId)
    .executeTakeFirst();
  return opened !== undefined;
}
