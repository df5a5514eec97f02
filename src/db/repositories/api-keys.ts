import { fromCursor, type Keyset } from '../pagination.ts';
import type { ApiKeyRow, Db, NewApiKey } from '../database.ts';

export async function insertApiKey(db: Db, key: NewApiKey): Promise<ApiKeyRow> {
  return db.insertInto('api_keys').values(key).returningAll().executeTakeFirstOrThrow();
}

export async function findApiKeyByHash(db: Db, secretHash: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('secret_hash', '=', secretHash).executeTakeFirst();
}

/**
 * Whose keys: an account's keys of one mode (what an API key or a dashboard session sees), or of
 * both modes when `livemode` is left out (the operator's CLI only).
 */
export interface KeyOwner {
  accountId: string;
  livemode?: boolean;
}

export async function findApiKey(db: Db, owner: KeyOwner, id: string): Promise<ApiKeyRow | undefined> {
  let query = db.selectFrom('api_keys').selectAll().where('account_id', '=', owner.accountId).where('id', '=', id);
  if (owner.livemode !== undefined) query = query.where('livemode', '=', owner.livemode);
  return query.executeTakeFirst();
}

/** The owner's keys, newest first: all of them, or one page (`limit` + 1 rows, in keyset order). */
export async function listApiKeys(
  db: Db,
  owner: KeyOwner,
  page?: { keyset: Keyset; limit: number },
): Promise<ApiKeyRow[]> {
  let query = db.selectFrom('api_keys').selectAll().where('account_id', '=', owner.accountId);
  if (owner.livemode !== undefined) query = query.where('livemode', '=', owner.livemode);
  if (!page) return query.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  return fromCursor(query, page.keyset, page.limit + 1).execute();
}

/** What names the account's keys among `ids` on a page (unknown ids and other accounts' are left out). */
export async function listApiKeyLabels(
  db: Db,
  accountId: string,
  ids: readonly string[],
): Promise<Pick<ApiKeyRow, 'id' | 'name' | 'display_prefix' | 'last4'>[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('api_keys')
    .select(['id', 'name', 'display_prefix', 'last4'])
    .where('account_id', '=', accountId)
    .where('id', 'in', ids)
    .execute();
}

export async function revokeApiKey(db: Db, owner: KeyOwner, id: string, at: Date): Promise<ApiKeyRow | undefined> {
  let query = db
    .updateTable('api_keys')
    .set((eb) => ({ revoked_at: eb.fn.coalesce('revoked_at', eb.val(at)) }))
    .where('account_id', '=', owner.accountId)
    .where('id', '=', id);
  if (owner.livemode !== undefined) query = query.where('livemode', '=', owner.livemode);
  return query.returningAll().executeTakeFirst();
}

/** Sets when a key stops working; only ever shortens an existing expiry. */
export async function expireApiKeyAt(db: Db, id: string, at: Date): Promise<void> {
  await db
    .updateTable('api_keys')
    .set((eb) => ({
      expires_at: eb.fn('least', [eb.fn.coalesce('expires_at', eb.val(at)), eb.val(at)]),
    }))
    .where('id', '=', id)
    .execute();
}

export async function touchApiKey(db: Db, id: string, at: Date): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute();
}

/**
 * `otherKeyId` if it is among the keys reached from `keyId` in the account by rotation (both ways)
 * and creation (downwards), the walk src/keys/lineage.ts calls a principal. One recursive query
 * (UNION drops repeats, so it ends on any shape of data), the same on Postgres and PGlite.
 */
export function findKeyOfPrincipal(
  db: Db,
  accountId: string,
  keyId: string,
  otherKeyId: string,
): Promise<{ id: string } | undefined> {
  return db
    .withRecursive('principal(id, rotated_from)', (qb) =>
      qb
        .selectFrom('api_keys')
        .select(['id', 'rotated_from'])
        .where('account_id', '=', accountId)
        .where('id', '=', keyId)
        .union((qb) =>
          qb
            .selectFrom('api_keys as k')
            .innerJoin('principal as p', (join) =>
              join.on((eb) =>
                eb.or([
                  eb('k.rotated_from', '=', eb.ref('p.id')),
                  eb('k.created_by_key', '=', eb.ref('p.id')),
                  eb('k.id', '=', eb.ref('p.rotated_from')),
                ]),
              ),
            )
            .select(['k.id', 'k.rotated_from'])
            .where('k.account_id', '=', accountId),
        ),
    )
    .selectFrom('principal')
    .select('id')
    .where('id', '=', otherKeyId)
    .executeTakeFirst();
}
