import { CompiledQuery } from 'kysely';
import type { Db } from '../database.ts';
import { PREPARED } from '../prepared-statements.ts';

/**
 * Claims an idempotency key. Returns false when the key already exists (committed, or
 * committed while we waited on the unique index).
 */
export async function insertIdempotencyRecord(
  db: Db,
  row: { accountId: string; livemode: boolean; key: string; tool: string; requestHash: string },
): Promise<boolean> {
  const result = await db
    .insertInto('idempotency_keys')
    .values({
      account_id: row.accountId,
      livemode: row.livemode,
      key: row.key,
      tool: row.tool,
      request_hash: row.requestHash,
      // Replaced by the result before the transaction commits; never visible as null.
      response: 'null',
    })
    .onConflict((oc) => oc.columns(['account_id', 'livemode', 'key']).doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/**
 * Runs `insert` (an insert … returning *, one row or none) and, when it wrote its row and a key is
 * given, claims the idempotency key with `response` already in place: one statement, so one round
 * trip and its own transaction; both rows commit or neither does. Returns the row written, or
 * undefined when the insert wrote none (then no key was claimed either). A key that exists
 * already, or that a concurrent request holds uncommitted (the insert waits on the key's unique
 * index until that one ends), fails the whole statement with a unique violation
 * (isUniqueViolation), and nothing is written. It runs on its own, never inside a transaction (a
 * stale prepared plan is retried as text: prepared-statements.ts).
 */
export async function insertWithIdempotencyRecord<R>(
  db: Db,
  insert: CompiledQuery<R>,
  claim:
    | { accountId: string; livemode: boolean; key: string; tool: string; requestHash: string; response: string }
    | undefined,
): Promise<R | undefined> {
  let texts = claimTexts.get(insert.sql);
  if (texts === undefined) {
    const n = insert.parameters.length;
    // Prepared: planning this statement costs Postgres more than running it (prepared-statements.ts).
    texts = {
      alone: `${PREPARED}with created as (${insert.sql}) select * from created`,
      claiming:
        `${PREPARED}with created as (${insert.sql}), claimed as (` +
        'insert into idempotency_keys (account_id, livemode, key, tool, request_hash, response) ' +
        `select $${n + 1}, $${n + 2}, $${n + 3}, $${n + 4}, $${n + 5}, $${n + 6} from created` +
        ') select * from created',
    };
    claimTexts.set(insert.sql, texts);
  }
  const { rows } = await db.executeQuery<R>(
    claim
      ? CompiledQuery.raw(texts.claiming, [
          ...insert.parameters,
          claim.accountId,
          claim.livemode,
          claim.key,
          claim.tool,
          claim.requestHash,
          claim.response,
        ])
      : CompiledQuery.raw(texts.alone, [...insert.parameters]),
  );
  return rows[0];
}

/** The full statements per insert text: built once, so the prepared statement's text is the same string. */
const claimTexts = new Map<string, { alone: string; claiming: string }>();

/** A unique index refused a row (SQLSTATE 23505), on Postgres and PGlite alike. */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23505';
}

/** Postgres ended the statement to break a lock cycle: nothing it wrote remains. */
export function isDeadlock(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '40P01';
}

/** Stores the result of the call that claimed the key. */
export async function updateIdempotencyResponse(
  db: Db,
  owner: { accountId: string; livemode: boolean },
  key: string,
  response: string,
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ response })
    .where('account_id', '=', owner.accountId)
    .where('livemode', '=', owner.livemode)
    .where('key', '=', key)
    .execute();
}

export async function findIdempotencyRecord(
  db: Db,
  accountId: string,
  livemode: boolean,
  key: string,
): Promise<{ tool: string; request_hash: string; response: unknown } | undefined> {
  return db
    .selectFrom('idempotency_keys')
    .select(['tool', 'request_hash', 'response'])
    .where('account_id', '=', accountId)
    .where('livemode', '=', livemode)
    .where('key', '=', key)
    .executeTakeFirst();
}

/** Keys are kept at least 24 hours (we keep them 48) and then pruned by the worker. */
export async function pruneIdempotencyRecords(db: Db, olderThan: Date): Promise<number> {
  const result = await db.deleteFrom('idempotency_keys').where('created_at', '<', olderThan).executeTakeFirst();
  return Number(result.numDeletedRows);
}
