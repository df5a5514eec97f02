import { type RawBuilder, type Selectable, type SelectQueryBuilder, sql } from 'kysely';
import { z } from 'zod';
import { AppError } from '../core/errors.ts';
import { isoTime } from '../core/validation.ts';
import type { Database, Db, ModeScope } from './database.ts';

/**
 * Keyset pagination for every list, all ordered newest first, `(created_at desc, id desc)`, as
 * Stripe pages: `starting_after` = the last id of the page you have (older objects next),
 * `ending_before` = the first id of the page you have (the newer objects just before it, still
 * newest first). `has_more` says whether more objects lie further in the direction you paged.
 * A row comparison, so one expression serves every table with those two columns, and the
 * (account_id, livemode, [filter,] created_at desc, id desc) indexes answer it in both directions.
 */

/** The query fields of every list: the same names, rules and words everywhere. */
export function pageParams(
  noun: string,
  idExample: string,
  sizes: { default: number; max: number } = { default: 20, max: 100 },
) {
  return {
    limit: z.coerce
      .number({ error: 'limit must be a number' })
      .int('limit must be an integer')
      .min(1, `limit must be between 1 and ${sizes.max}`)
      .max(sizes.max, `limit must be between 1 and ${sizes.max}`)
      .default(sizes.default)
      .describe(`Page size, 1 to ${sizes.max} (default ${sizes.default}).`),
    starting_after: z
      .string({ error: 'starting_after must be a string' })
      .max(100, 'starting_after must be at most 100 characters')
      .optional()
      .describe(`A ${noun} id (${idExample}): the page of older ${noun}s after it (the next page).`),
    ending_before: z
      .string({ error: 'ending_before must be a string' })
      .max(100, 'ending_before must be at most 100 characters')
      .optional()
      .describe(`A ${noun} id (${idExample}): the page of newer ${noun}s before it (the previous page).`),
  };
}

export interface PageRequest {
  limit: number;
  starting_after?: string | undefined;
  ending_before?: string | undefined;
}

export interface Cursor {
  createdAt: Date;
  id: string;
}

/** The creation-time filters of the lists that have them. */
export function createdRange(noun: string) {
  return {
    created_gte: isoTime('created_gte', `Only ${noun}s created at or after this time (ISO 8601).`).optional(),
    created_lte: isoTime('created_lte', `Only ${noun}s created at or before this time (ISO 8601).`).optional(),
  };
}

/** Where a page starts and which way it runs. */
export interface Keyset {
  cursor: Cursor | undefined;
  /** older: after the cursor in list order (starting_after, or the first page); newer: before it. */
  direction: 'older' | 'newer';
}

/**
 * The keyset a page request asks for. `locate` finds the cursor row among the caller's own rows
 * of this list: another account's or mode's id is the same 400 as an unknown one, so a cursor never
 * confirms that someone else's object exists.
 */
export async function keysetOf(
  page: PageRequest,
  noun: string,
  locate: (id: string) => Promise<{ created_at: Date; id: string } | undefined>,
): Promise<Keyset> {
  if (page.starting_after !== undefined && page.ending_before !== undefined) {
    throw new AppError('invalid_request', 'Send starting_after or ending_before, not both.', {
      param: 'ending_before',
    });
  }
  const param = page.ending_before !== undefined ? 'ending_before' : 'starting_after';
  const id = page.ending_before ?? page.starting_after;
  if (id === undefined) return FIRST_PAGE;
  const row = await locate(id);
  if (!row) throw new AppError('invalid_request', `${param}: no such ${noun} '${id}'.`, { param });
  return {
    cursor: { createdAt: row.created_at, id: row.id },
    direction: param === 'ending_before' ? 'newer' : 'older',
  };
}

export const FIRST_PAGE: Keyset = { cursor: undefined, direction: 'older' };

/** The condition for rows beyond the cursor (none on a first page). */
export function keysetWhere(keyset: Keyset): RawBuilder<boolean> {
  if (!keyset.cursor) return sql<boolean>`true`;
  const cursor = sql`(${keyset.cursor.createdAt}, ${keyset.cursor.id})`;
  return keyset.direction === 'older'
    ? sql<boolean>`(created_at, id) < ${cursor}`
    : sql<boolean>`(created_at, id) > ${cursor}`;
}

/** The scan order that reaches the rows nearest the cursor first. */
export function keysetOrder(keyset: Keyset): 'asc' | 'desc' {
  return keyset.direction === 'older' ? 'desc' : 'asc';
}

/**
 * The page from rows fetched in keyset order with `limit + 1`: newest first whichever way it ran,
 * and has_more from the extra row.
 */
export function pageFrom<R>(rows: R[], limit: number, keyset: Keyset): { data: R[]; has_more: boolean } {
  const data = rows.slice(0, limit);
  if (keyset.direction === 'newer') data.reverse();
  return { data, has_more: rows.length > limit };
}

/** Tables listed newest first whose rows belong to one account and one mode. */
export type ListedTable =
  | 'payments'
  | 'payouts'
  | 'refunds'
  | 'revenue_shares'
  | 'agent_runs'
  | 'agent_actions'
  | 'confirmations';

/** The cursor row of a listed table, among the caller's own rows in the caller's mode. */
export function locateIn(db: Db, table: ListedTable, scope: ModeScope) {
  return (id: string) =>
    // Every listed table has these columns; kysely needs one concrete name to type the query.
    db
      .selectFrom(table as 'payouts')
      .select(['created_at', 'id'])
      .where('id', '=', id)
      .where('account_id', '=', scope.accountId)
      .where('livemode', '=', scope.livemode)
      .executeTakeFirst();
}

/** The keyset of a page of a listed table, its cursor looked up among the caller's own rows. */
export function keysetIn(
  db: Db,
  table: ListedTable,
  scope: ModeScope,
  page: PageRequest,
  noun: string,
): Promise<Keyset> {
  return keysetOf(page, noun, locateIn(db, table, scope));
}

/** The creation-time filters of a list, as createdRange parses them. */
export interface CreatedRange {
  created_gte?: Date | undefined;
  created_lte?: Date | undefined;
}

type ListQuery<T extends ListedTable> = SelectQueryBuilder<Database, T, Selectable<Database[T]>>;

/**
 * One page of one of the caller's lists: the rows of `table` in the caller's account and mode,
 * narrowed by `filter` and the creation range, from the page's cursor, newest first. The lists of
 * payouts, refunds, revenue shares, confirmations, runs and actions read through here; payments,
 * events and keys have repositories of their own that use the same keyset pieces.
 */
export async function listPage<T extends ListedTable>(
  db: Db,
  table: T,
  scope: ModeScope,
  input: PageRequest & CreatedRange,
  noun: string,
  filter: (query: ListQuery<T>) => ListQuery<T> = (query) => query,
): Promise<{ data: Selectable<Database[T]>[]; has_more: boolean }> {
  const keyset = await keysetIn(db, table, scope, input, noun);
  const order = keysetOrder(keyset);
  // Every listed table has these columns; kysely cannot type them for a table named by a parameter.
  let query = filter(
    db
      .selectFrom(table as 'payouts')
      .selectAll()
      .where('account_id', '=', scope.accountId)
      .where('livemode', '=', scope.livemode) as unknown as ListQuery<T>,
  ) as unknown as ListQuery<'payouts'>;
  if (input.created_gte) query = query.where('created_at', '>=', input.created_gte);
  if (input.created_lte) query = query.where('created_at', '<=', input.created_lte);
  const rows = await query
    .where(keysetWhere(keyset))
    .orderBy('created_at', order)
    .orderBy('id', order)
    .limit(input.limit + 1)
    .execute();
  return pageFrom(rows as unknown as Selectable<Database[T]>[], input.limit, keyset);
}
