import { type RawBuilder, type SelectQueryBuilder, sql } from 'kysely';
import { z } from 'zod';
import { AppError } from '../core/errors.ts';
import { isoTime } from '../core/validation.ts';
import type { Db, ModeScope } from './database.ts';
import { scopedRow } from './repositories/scoped.ts';

/**
 * Keyset pagination for every list, all ordered newest first, `(created_at desc, id desc)`, as
 * Stripe pages: `starting_after` = the last id of the page you have (older objects next),
 * `ending_before` = the first id of the page you have (the newer objects just before it, still
 * newest first). `has_more` says whether more objects lie further in the direction you paged.
 * A row comparison, so one expression serves every table with those two columns, and the
 * (account_id, livemode, [filter,] created_at desc, id desc) indexes answer it in both directions.
 *
 * A list is a function in its table's repository (src/db/repositories/): it finds the page's keyset
 * (keysetIn: the cursor among the caller's own rows), builds the query of the caller's rows and
 * filters, and reads it with readPage, which adds the cursor, the order and the limit and returns
 * the page newest first with has_more.
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
function keysetWhere(keyset: Keyset): RawBuilder<boolean> {
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
export function pageFrom<R>(rows: R[], limit: number, keyset: Keyset): Page<R> {
  const data = rows.slice(0, limit);
  if (keyset.direction === 'newer') data.reverse();
  return { data, has_more: rows.length > limit };
}

/** One page of a list, newest first; has_more: more rows lie further in the direction paged. */
export interface Page<R> {
  data: R[];
  has_more: boolean;
}

/**
 * A list query read from the keyset's cursor: the rows beyond it, in the order that reaches the
 * nearest first (created_at, id), `fetch` of them. The query names the caller's rows and filters
 * (its table must have created_at and id); this adds the cursor, the order and the limit, so the
 * (account_id, livemode, [filter,] created_at desc, id desc) index answers it in both directions.
 * Use readPage for a page; this is for callers that take the rows and page them themselves.
 */
// biome-ignore lint/suspicious/noExplicitAny: any list query over a table with created_at and id.
export function fromCursor<Q extends SelectQueryBuilder<any, any, any>>(query: Q, keyset: Keyset, fetch: number): Q {
  const order = keysetOrder(keyset);
  return query
    .where(keysetWhere(keyset))
    .orderBy(sql.ref('created_at'), order)
    .orderBy(sql.ref('id'), order)
    .limit(fetch) as Q;
}

/** One page of a list query: `limit + 1` rows from the cursor (fromCursor), then pageFrom. */
export async function readPage<R>(
  // biome-ignore lint/suspicious/noExplicitAny: any list query over a table with created_at and id.
  query: SelectQueryBuilder<any, any, R>,
  keyset: Keyset,
  limit: number,
): Promise<Page<R>> {
  return pageFrom(await fromCursor(query, keyset, limit + 1).execute(), limit, keyset);
}

/** Tables listed newest first whose rows belong to one account and one mode. */
export type ListedTable =
  | 'payments'
  | 'payouts'
  | 'refunds'
  | 'revenue_shares'
  | 'agent_runs'
  | 'agent_actions'
  | 'confirmations'
  | 'events';

/** The cursor row of a listed table, among the caller's own rows in the caller's mode. */
function locateIn(db: Db, table: ListedTable, scope: ModeScope) {
  return (id: string) =>
    scopedRow(db, table as 'payouts', scope, id)
      .select(['created_at', 'id'])
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
