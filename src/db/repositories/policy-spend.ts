import type { Insertable } from 'kysely';
import type { Db } from '../database.ts';
import type { PolicySpendTable } from '../tables/money.ts';

// policy_spend: the money actions the policy let through (or a person approved), the history the
// channels' rolling caps read. src/policy/context.ts decides what is counted and over what window.

/** One money action counted towards its channel's cap, in the action's transaction. */
export async function insertPolicySpend(db: Db, row: Insertable<PolicySpendTable>): Promise<void> {
  await db.insertInto('policy_spend').values(row).execute();
}

/**
 * What the account's channel moved in one mode after `since`, in settlement minor units, as
 * decimal text ('0' when nothing).
 */
export async function sumPolicySpendSince(
  db: Db,
  actor: { accountId: string; livemode: boolean; channel: string },
  since: Date,
): Promise<string> {
  const spent = await db
    .selectFrom('policy_spend')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<string>('amount_settlement_minor'), eb.val('0')).as('total'))
    .where('account_id', '=', actor.accountId)
    .where('livemode', '=', actor.livemode)
    .where('channel', '=', actor.channel)
    .where('created_at', '>', since)
    .executeTakeFirstOrThrow();
  return spent.total;
}
