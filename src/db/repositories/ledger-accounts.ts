import { sql } from 'kysely';
import type { Db } from '../database.ts';
import type { LedgerAccountRow } from '../tables/settlement.ts';

/** What the treasury owes in one asset, per mode, in three parts (decimal strings of minor units). */
export interface TreasuryObligation {
  livemode: boolean;
  /** Custodial merchant balances; transfers queued, batched or sent; paid payments not yet taken. */
  part: 'balances_minor' | 'transfers_minor' | 'paid_unbooked_minor';
  total: string;
}

/**
 * The merchant ledger accounts' balances in `asset`, with the transfers not yet confirmed and the
 * paid payments not yet settled in it, summed per mode: what the treasury owes (the daily
 * reconciliation's treasury cover). A mode and part with nothing has no row.
 */
export async function listTreasuryObligations(db: Db, asset: string): Promise<TreasuryObligation[]> {
  const rows = await sql<TreasuryObligation>`
    select livemode, 'balances_minor' as part, coalesce(sum(balance_minor), 0)::text as total
      from ledger_accounts where kind = 'merchant' and asset = ${asset} group by livemode
    union all
    select livemode, 'transfers_minor', coalesce(sum(amount_minor), 0)::text
      from transfers where asset = ${asset} and status in ('queued', 'batched', 'sent') group by livemode
    union all
    select livemode, 'paid_unbooked_minor', coalesce(sum(settlement_minor), 0)::text
      from payments where status = 'paid' and settlement_asset = ${asset} group by livemode`.execute(db);
  return rows.rows;
}

/** The ledger accounts with these ids (those that exist). */
export async function listLedgerAccountsIn(db: Db, ids: readonly string[]): Promise<LedgerAccountRow[]> {
  return db.selectFrom('ledger_accounts').selectAll().where('id', 'in', ids).execute();
}

/** A ledger account's balance, in minor units; undefined when no posting has opened the account yet. */
export async function findLedgerBalance(db: Db, ledgerAccountId: string): Promise<bigint | undefined> {
  const row = await db
    .selectFrom('ledger_accounts')
    .select('balance_minor')
    .where('id', '=', ledgerAccountId)
    .executeTakeFirst();
  return row?.balance_minor;
}
