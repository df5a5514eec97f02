import type { Db } from '../database.ts';

/**
 * The operator's collection accounts that could have collected in [from, to): active during it, or
 * named (by a payment booked then), ordered by mode, rail and id (reconciliation/collections.ts).
 */
export async function listOperatorCollectionsInUse(db: Db, window: { from: Date; to: Date }, named: readonly string[]) {
  return db
    .selectFrom('collection_accounts')
    .select(['id', 'rail', 'livemode'])
    .where('owner', '=', 'operator')
    .where((eb) =>
      eb.or([
        eb.and([
          eb('created_at', '<', window.to),
          eb.or([eb('retired_at', 'is', null), eb('retired_at', '>=', window.from)]),
        ]),
        ...(named.length > 0 ? [eb('id', 'in', named)] : []),
      ]),
    )
    .orderBy('livemode')
    .orderBy('rail')
    .orderBy('id')
    .execute();
}
