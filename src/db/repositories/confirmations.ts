import { type Insertable, sql } from 'kysely';
import type { Db, ModeScope } from '../database.ts';
import { fromCursor, keysetIn, keysetOrder, type Page, type PageRequest, pageFrom, readPage } from '../pagination.ts';
import type { ConfirmationRow, ConfirmationStatus, ConfirmationsTable } from '../tables/money.ts';
import { findScoped } from './scoped.ts';

// Confirmations (the actions the policy held for a person): the reads, and at the end the writes
// src/policy/confirmations.ts makes when it creates, consumes and expires them (the rules of
// each step, and its event, stay there).

/** A confirmation as its owner sees it: another account's or the other mode's does not exist. */
export function findConfirmation(db: Db, scope: ModeScope, id: string): Promise<ConfirmationRow | undefined> {
  return findScoped(db, 'confirmations', scope, id);
}

/** These confirmations (any account's: the caller has them from rows it owns), oldest first. */
export function listConfirmationsById(db: Db, ids: readonly string[]): Promise<ConfirmationRow[]> {
  return db.selectFrom('confirmations').selectAll().where('id', 'in', ids).orderBy('created_at').execute();
}

/**
 * Confirmations of every account still waiting for a person at `now`, and when the oldest was
 * asked (the metrics' scrape). A lapsed one stays 'pending' in its row until the expiry job marks
 * it expired: the expiry filter leaves those out in between.
 */
export function countWaitingConfirmations(db: Db, now: Date) {
  return db
    .selectFrom('confirmations')
    .select((eb) => [eb.fn.countAll().as('waiting'), eb.fn.min('created_at').as('oldest')])
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .executeTakeFirstOrThrow();
}

/**
 * Which confirmations a list shows, as a person reads their state at `now`: pending (still
 * waiting: a lapsed one is expired even before the expiry job marks it), expired (marked, or
 * lapsed), executed, rejected, or all of them.
 */
export type ConfirmationFilter = ConfirmationStatus | 'all';

/**
 * One page of the caller's confirmations in `filter`, newest first: GET /v1/confirmations
 * (pending) and the dashboard's Approvals screen. Each status is a range of confirmations_pending
 * (account, mode, status, created_at, id); all of them a range of confirmations_list.
 */
export async function listConfirmationsPage(
  db: Db,
  scope: ModeScope,
  filter: ConfirmationFilter,
  page: PageRequest,
  now: Date,
): Promise<Page<ConfirmationRow>> {
  const keyset = await keysetIn(db, 'confirmations', scope, page, 'confirmation');
  const inStatus = (status?: ConfirmationStatus) => {
    let query = db
      .selectFrom('confirmations')
      .selectAll()
      .where('account_id', '=', scope.accountId)
      .where('livemode', '=', scope.livemode);
    if (status) query = query.where('status', '=', status);
    return query;
  };
  if (filter === 'pending') return readPage(inStatus('pending').where('expires_at', '>', now), keyset, page.limit);
  if (filter !== 'expired') return readPage(inStatus(filter === 'all' ? undefined : filter), keyset, page.limit);
  // Expired reads two ranges, marked expired and still pending past their expiry, merged in list
  // order (Merge Append): an OR of the two in one WHERE would read and sort all such of the account.
  const fetch = page.limit + 1;
  const marked = fromCursor(inStatus('expired'), keyset, fetch);
  const lapsed = fromCursor(inStatus('pending').where('expires_at', '<=', now), keyset, fetch);
  const order = sql.raw(keysetOrder(keyset));
  const { rows } = await sql<ConfirmationRow>`select * from ((${marked}) union all (${lapsed})) as c
    order by created_at ${order}, id ${order} limit ${fetch}`.execute(db);
  return pageFrom(rows, page.limit, keyset);
}

/** How many of the caller's confirmations wait for a person at `now` (the Overview's count). */
export async function countPendingConfirmations(db: Db, scope: ModeScope, now: Date): Promise<number> {
  const row = await db
    .selectFrom('confirmations')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * The caller's confirmations still waiting at `now` for these tools, created in `range`, newest
 * first, at most `limit`: the Payouts screen shows the payouts the policy held.
 */
export async function listWaitingConfirmations(
  db: Db,
  scope: ModeScope,
  tools: readonly string[],
  range: { created_gte?: Date | undefined; created_lte?: Date | undefined },
  now: Date,
  limit: number,
): Promise<ConfirmationRow[]> {
  let query = db
    .selectFrom('confirmations')
    .selectAll()
    .where('account_id', '=', scope.accountId)
    .where('livemode', '=', scope.livemode)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .where('tool', 'in', [...tools]);
  if (range.created_gte) query = query.where('created_at', '>=', range.created_gte);
  if (range.created_lte) query = query.where('created_at', '<=', range.created_lte);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

/** When the next pending confirmation lapses: its expires_at, or undefined when none is pending. */
export async function findNextConfirmationLapse(db: Db): Promise<{ expires_at: Date } | undefined> {
  return db
    .selectFrom('confirmations')
    .select('expires_at')
    .where('status', '=', 'pending')
    .orderBy('expires_at')
    .limit(1)
    .executeTakeFirst();
}

/** Stores a held action as the policy built it (pending, with its expiry), and returns the row. */
export function insertConfirmation(db: Db, row: Insertable<ConfirmationsTable>): Promise<ConfirmationRow> {
  return db.insertInto('confirmations').values(row).returningAll().executeTakeFirstOrThrow();
}

/**
 * Marks the caller's confirmation executed by its approver, only while it is still pending and
 * unexpired at `now`: the status guard in the WHERE is what makes a confirmation single use (a
 * second approval, a rejection or the lapse that came first leaves nothing to update). Returns
 * its id, or undefined when nothing was updated.
 */
export function markConfirmationExecuted(
  db: Db,
  confirmation: { id: string; approverKeyId: string },
  scope: { accountId: string },
  now: Date,
): Promise<{ id: string } | undefined> {
  return db
    .updateTable('confirmations')
    .set({ status: 'executed', decided_by_key: confirmation.approverKeyId, decided_at: now })
    .where('id', '=', confirmation.id)
    .where('account_id', '=', scope.accountId)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .returning('id')
    .executeTakeFirst();
}

/** Keeps what the approved action produced (`result`, JSON text) on its confirmation; returns the row. */
export function setConfirmationResult(db: Db, id: string, result: string): Promise<ConfirmationRow> {
  return db.updateTable('confirmations').set({ result }).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

/**
 * Marks expired up to `limit` pending confirmations lapsed at `now`, the earliest lapse first, and
 * returns them. Their rows are locked FOR UPDATE SKIP LOCKED: run it in a transaction, so several
 * workers share the work and a row an approval holds is left to the approval.
 */
export function markLapsedConfirmationsExpired(db: Db, now: Date, limit: number): Promise<ConfirmationRow[]> {
  return db
    .updateTable('confirmations')
    .set({ status: 'expired' })
    .where(
      'id',
      'in',
      db
        .selectFrom('confirmations')
        .select('id')
        .where('status', '=', 'pending')
        .where('expires_at', '<=', now)
        .orderBy('expires_at')
        .limit(limit)
        .forUpdate()
        .skipLocked(),
    )
    .returningAll()
    .execute();
}

/** Rejected by `keyId` if it is still pending (the caller's transaction); undefined when it no longer was. */
export function markConfirmationRejected(
  db: Db,
  id: string,
  keyId: string,
  now: Date,
): Promise<ConfirmationRow | undefined> {
  return db
    .updateTable('confirmations')
    .set({ status: 'rejected', decided_by_key: keyId, decided_at: now })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .returningAll()
    .executeTakeFirst();
}
