import { type Insertable, type Selectable, sql } from 'kysely';
import type { Db, ModeScope } from '../database.ts';
import type { CollectionAccountsTable, CollectionOwner, ProviderRail } from '../tables/rails.ts';

// The operator's collection accounts (docs/rails.md, "Who collects"), as stored: the credentials
// still sealed. What they mean, and opening them, is src/payments/rails/collections.ts.

export type CollectionAccountRow = Selectable<CollectionAccountsTable>;

/** A rail and mode's collection account: instance-wide (accountId null) or one account's own. */
export interface CollectionTarget {
  rail: ProviderRail;
  livemode: boolean;
  accountId: string | null;
}

export async function insertCollectionAccount(
  db: Db,
  values: Insertable<CollectionAccountsTable>,
): Promise<CollectionAccountRow> {
  return db.insertInto('collection_accounts').values(values).returningAll().executeTakeFirstOrThrow();
}

/** Retires the target's active collection accounts (whoever owns them); returns those retired. */
export async function retireActiveCollectionAccounts(
  db: Db,
  target: CollectionTarget,
  now: Date,
): Promise<CollectionAccountRow[]> {
  return db
    .updateTable('collection_accounts')
    .set({ retired_at: now, updated_at: now })
    .where('rail', '=', target.rail)
    .where('livemode', '=', target.livemode)
    .where((eb) => (target.accountId === null ? eb('account_id', 'is', null) : eb('account_id', '=', target.accountId)))
    .where('retired_at', 'is', null)
    .returningAll()
    .execute();
}

/** A merchant's active collection account becomes the operator's; undefined when it is not one. */
export async function adoptMerchantCollectionAccount(
  db: Db,
  id: string,
  now: Date,
): Promise<CollectionAccountRow | undefined> {
  return db
    .updateTable('collection_accounts')
    .set({ owner: 'operator', updated_at: now })
    .where('id', '=', id)
    .where('owner', '=', 'merchant')
    .where('retired_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Every collection account, the retired ones last; optionally only one owner's, only active ones, one mode's. */
export async function listCollectionAccounts(
  db: Db,
  filter: { owner?: CollectionOwner; active?: boolean; livemode?: boolean },
): Promise<CollectionAccountRow[]> {
  let query = db.selectFrom('collection_accounts').selectAll();
  if (filter.owner) query = query.where('owner', '=', filter.owner);
  if (filter.active) query = query.where('retired_at', 'is', null);
  if (filter.livemode !== undefined) query = query.where('livemode', '=', filter.livemode);
  return query
    .orderBy(sql`retired_at is not null`)
    .orderBy('livemode')
    .orderBy('rail')
    .orderBy('account_id')
    .orderBy('created_at')
    .execute();
}

/** The operator's active collection account for this account's payments on a rail: its own, else the instance-wide one. */
export async function findActiveOperatorCollectionAccount(
  db: Db,
  scope: ModeScope,
  rail: ProviderRail,
): Promise<CollectionAccountRow | undefined> {
  return (
    db
      .selectFrom('collection_accounts')
      .selectAll()
      .where('rail', '=', rail)
      .where('livemode', '=', scope.livemode)
      .where('owner', '=', 'operator')
      .where('retired_at', 'is', null)
      .where((eb) => eb.or([eb('account_id', '=', scope.accountId), eb('account_id', 'is', null)]))
      // The account's own first.
      .orderBy(sql`account_id is null`)
      .executeTakeFirst()
  );
}

/** A collection account by id, retired or not, whoever owns it. */
export async function findCollectionAccountById(db: Db, id: string): Promise<CollectionAccountRow | undefined> {
  return db.selectFrom('collection_accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Adds a currency to those the provider refused for this collection account (once). */
export async function addRefusedCurrency(db: Db, id: string, currency: string, now: Date): Promise<void> {
  await db
    .updateTable('collection_accounts')
    .set({
      refused_currencies: sql`(select coalesce(json_agg(distinct c), '[]'::json) from (
        select json_array_elements_text(refused_currencies) as c union select ${currency}) as refused)`,
      updated_at: now,
    })
    .where('id', '=', id)
    .execute();
}

/** A payment credited without a success collected into an operator-owned collection account. */
export interface CreditWithoutOperatorCollection {
  id: string;
  account_id: string;
  livemode: boolean;
  currency: string;
  amount_minor: bigint;
}

/**
 * The collection invariant (docs/rails.md): a merchant is credited stablecoin only for local money
 * that reached an operator-owned collection account. Every `payment_received` posting needs a
 * success of that payment on the sandbox (test mode: no money), on an operator's collection
 * account, or on the usdc rail with its transfer confirmed into the operator's treasury. Returns the payments that break it (those paid in `paid` only, when given); tests check
 * it after every file, and the daily reconciliation names each one.
 */
export async function creditsWithoutOperatorCollection(
  db: Db,
  options: { paid?: { from: Date; to: Date }; limit?: number } = {},
): Promise<CreditWithoutOperatorCollection[]> {
  const { paid, limit } = options;
  const rows = await sql<CreditWithoutOperatorCollection>`
    select p.id, p.account_id, p.livemode, p.currency, p.amount_minor
      from ledger_postings lp join payments p on p.id = lp.reference
     where lp.kind = 'payment_received'
       and not exists (
         select 1 from payment_attempts a left join collection_accounts c on c.id = a.collection_id
          where a.payment_id = p.id and a.outcome = 'succeeded' and not a.late
            and ((a.rail = 'sandbox' and not p.livemode)
                 or (a.rail not in ('sandbox', 'usdc') and c.owner = 'operator')
                 -- USDC paid in is collected by the operator's treasury itself: its transfer confirmed there.
                 or (a.rail = 'usdc' and exists (
                       select 1 from x402_authorizations x where x.attempt_id = a.id and x.status = 'confirmed'))))
       ${paid ? sql`and p.paid_at >= ${paid.from} and p.paid_at < ${paid.to}` : sql``}
     order by p.id
     ${limit === undefined ? sql`` : sql`limit ${limit}`}`.execute(db);
  return rows.rows;
}

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

/**
 * The collection account `id` if the operator set it, active, for this rail and for this
 * account's payments (its own or instance-wide) in this mode: the only kind a payer pays into.
 */
export async function findOperatorCollectionFor(
  db: Db,
  scope: ModeScope,
  id: string,
  rail: CollectionAccountRow['rail'],
): Promise<Pick<CollectionAccountRow, 'id'> | undefined> {
  return db
    .selectFrom('collection_accounts')
    .select(['id'])
    .where('id', '=', id)
    .where('rail', '=', rail)
    .where('livemode', '=', scope.livemode)
    .where('owner', '=', 'operator')
    .where('retired_at', 'is', null)
    .where((eb) => eb.or([eb('account_id', 'is', null), eb('account_id', '=', scope.accountId)]))
    .executeTakeFirst();
}

/** Who owns a collection account (operator or merchant), by id, retired or not. */
export async function findCollectionAccountOwner(
  db: Db,
  id: string,
): Promise<Pick<CollectionAccountRow, 'owner'> | undefined> {
  return db.selectFrom('collection_accounts').select('owner').where('id', '=', id).executeTakeFirst();
}
