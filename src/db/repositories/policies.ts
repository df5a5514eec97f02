import type { Insertable, Selectable } from 'kysely';
import type { Db, ModeScope } from '../database.ts';
import type { PoliciesTable } from '../tables/money.ts';

// policies: every saved version of an account's policy, per mode (the old ones stay, for the audit
// trail). src/policy/store.ts decides which one is in force and numbers the next.

/** The owner's newest saved policy version, or undefined when it never saved one. */
export function findLatestPolicy(db: Db, owner: ModeScope): Promise<Selectable<PoliciesTable> | undefined> {
  return db
    .selectFrom('policies')
    .selectAll()
    .where('account_id', '=', owner.accountId)
    .where('livemode', '=', owner.livemode)
    .orderBy('version', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export async function insertPolicy(db: Db, row: Insertable<PoliciesTable>): Promise<void> {
  await db.insertInto('policies').values(row).execute();
}
