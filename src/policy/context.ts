import type { Channel } from '../core/tool.ts';
import type { Db } from '../db/database.ts';
import type { PolicyContext } from './action.ts';
import { normaliseRecipient } from './policy-schema.ts';

const DAY_MS = 24 * 3600_000;

/**
 * What the rules need from history: the money this channel moved in the last 24 hours and which
 * of the action's recipients this account has paid before (only those: an account's whole payout
 * history would be read on every money action). Read inside the action's transaction, after the
 * account's action-log head is locked, so two concurrent actions cannot both slip under a cap.
 */
export async function loadPolicyContext(
  db: Db,
  actor: { accountId: string; livemode: boolean; channel: Channel },
  actionRecipients: readonly string[],
  now: Date,
): Promise<PolicyContext> {
  const spent = await db
    .selectFrom('policy_spend')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<string>('amount_settlement_minor'), eb.val('0')).as('total'))
    .where('account_id', '=', actor.accountId)
    .where('livemode', '=', actor.livemode)
    .where('channel', '=', actor.channel)
    .where('created_at', '>', new Date(now.getTime() - DAY_MS))
    .executeTakeFirstOrThrow();
  const asked = [...new Set(actionRecipients.map(normaliseRecipient))];
  const recipients =
    asked.length === 0
      ? []
      : await db
          .selectFrom('payouts')
          .select((eb) => eb.fn('lower', ['to_address']).as('address'))
          .distinct()
          .where('account_id', '=', actor.accountId)
          .where('livemode', '=', actor.livemode)
          .where('status', '!=', 'failed')
          .where((eb) => eb(eb.fn('lower', ['to_address']), 'in', asked))
          .execute();
  return {
    spentLast24hSettlementMinor: BigInt(spent.total),
    knownRecipients: new Set(recipients.map((r) => String(r.address))),
  };
}
