import type { Account, Db } from '../database.ts';

export async function insertAccount(db: Db, account: { id: string; name: string; feeBps?: number }): Promise<Account> {
  return db
    .insertInto('accounts')
    .values({ id: account.id, name: account.name, fee_bps: account.feeBps, default_payout_address: null })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findAccount(db: Db, id: string): Promise<Account | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The account's display name, shown when the payment has no merchant_name of its own. */
export async function findAccountName(db: Db, accountId: string): Promise<string | undefined> {
  const row = await db.selectFrom('accounts').select('name').where('id', '=', accountId).executeTakeFirst();
  return row?.name;
}

export async function countAccounts(db: Db): Promise<number> {
  const row = await db
    .selectFrom('accounts')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Locks the account's row for the caller's transaction: writes of one account that must not
 * interleave (a new policy version, a webhook secret rotation) queue on it. Throws when there is
 * no such account.
 */
export async function lockAccount(db: Db, accountId: string): Promise<void> {
  await db.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate().executeTakeFirstOrThrow();
}

/** The default payout address of each of these accounts (null: none set), by id. */
export async function listDefaultPayoutAddresses(
  db: Db,
  accountIds: readonly string[],
): Promise<Pick<Account, 'id' | 'default_payout_address'>[]> {
  return db.selectFrom('accounts').select(['id', 'default_payout_address']).where('id', 'in', accountIds).execute();
}
