import { type RawBuilder, type Selectable, type SelectQueryBuilder, sql } from 'kysely';
import type { Database, Db, ModeScope } from '../database.ts';

/** The tables whose rows belong to one account and one mode, each named by a text id. */
export type ScopedTable = {
  [T in keyof Database]: Database[T] extends { id: string; account_id: string; livemode: boolean } ? T : never;
}[keyof Database];

/**
 * The row `id` of `table` as its owner sees it, to select from (and lock, or narrow further):
 * another account's or the other mode's row is not there, so a caller's 404 never confirms that
 * someone else's object exists.
 */
export function scopedRow<T extends ScopedTable>(
  db: Db,
  table: T,
  scope: ModeScope,
  id: string,
): SelectQueryBuilder<Database, T, object> {
  // Every scoped table has these columns; kysely needs one concrete name to type the conditions.
  return db
    .selectFrom(table as 'payouts')
    .where('id', '=', id)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode) as unknown as SelectQueryBuilder<Database, T, object>;
}

/** The whole row `id` of `table`, when it is the caller's (scopedRow). */
export async function findScoped<T extends ScopedTable>(
  db: Db,
  table: T,
  scope: ModeScope,
  id: string,
): Promise<Selectable<Database[T]> | undefined> {
  const row = await scopedRow(db, table as 'payouts', scope, id)
    .selectAll()
    .executeTakeFirst();
  return row as Selectable<Database[T]> | undefined;
}

/** Whether row `id` of `table` is the caller's (scopedRow): an id the caller names must be theirs. */
export async function isScopedRow(db: Db, table: ScopedTable, scope: ModeScope, id: string): Promise<boolean> {
  return (
    (await scopedRow(db, table as 'payouts', scope, id)
      .select('id')
      .executeTakeFirst()) !== undefined
  );
}

/** The status of the caller's payout or refund `id` now; undefined when it is not theirs. */
export async function findScopedStatus(
  db: Db,
  table: 'payouts' | 'refunds',
  scope: ModeScope,
  id: string,
): Promise<string | undefined> {
  return (await scopedRow(db, table, scope, id).select('status').executeTakeFirst())?.status;
}

/** A condition: the row's (account_id, livemode) is one of these scopes (false for none). */
export function inScopes(scopes: readonly ModeScope[]): RawBuilder<boolean> {
  if (scopes.length === 0) return sql<boolean>`false`;
  return sql<boolean>`(account_id, livemode) in (${sql.join(scopes.map((s) => sql`(${s.accountId}, ${s.livemode})`))})`;
}
