import { type RawBuilder, sql } from 'kysely';
import { AppError } from '../core/errors.ts';
import type { Db, ModeScope } from './database.ts';

/**
 * Keyset pagination for lists ordered newest first, `(created_at desc, id desc)`: the rows that
 * come after `cursor` in that order. A row comparison, so one expression serves every table with
 * those two columns, and the (…, created_at desc, id desc) indexes answer it.
 */
export function afterCursor(cursor: { createdAt: Date; id: string }): RawBuilder<boolean> {
  return sql<boolean>`(created_at, id) < (${cursor.createdAt}, ${cursor.id})`;
}

/** Tables listed newest first whose rows belong to one account and one mode. */
export type ListedTable = 'payouts' | 'agent_runs' | 'agent_actions' | 'confirmations';

/**
 * The keyset condition for "after the row whose id the client passed as starting_after". The row
 * must be the caller's own, in the caller's mode: another account's or mode's id is the same 400
 * as an unknown one, so a cursor never confirms that someone else's object exists.
 */
export async function afterListedRow(
  db: Db,
  table: ListedTable,
  scope: ModeScope,
  id: string,
  noun: string,
): Promise<RawBuilder<boolean>> {
  // Every listed table has these columns; kysely needs one concrete name to type the query.
  const row = await db
    .selectFrom(table as 'payouts')
    .select(['created_at', 'id'])
    .where('id', '=', id)
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .executeTakeFirst();
  if (!row) {
    throw new AppError('invalid_request', `starting_after: no such ${noun} '${id}'.`, { param: 'starting_after' });
  }
  return afterCursor({ createdAt: row.created_at, id: row.id });
}
