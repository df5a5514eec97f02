import type { Db } from '../database.ts';

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
