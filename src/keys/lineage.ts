import type { Db } from '../db/database.ts';

/**
 * Whether `otherKeyId` speaks for the same principal as `keyId`. A key's principal reaches, from the
 * key, transitively:
 * - its rotation lineage, both ways: the key it was rotated from and the keys rotated from it
 *   (whoever rotates a key holds the new secret, so the lineage is one holder);
 * - every key it created (`created_by_key`), and every key those created: the creator chose their
 *   scopes and saw their secrets.
 * Creation is followed downwards only: the key that created `keyId` is another principal (the
 * admin who made an agent's key is who should approve the agent's requests). A rotation's new key
 * is created by the rotation's caller, so rotating someone else's key brings it into your principal;
 * that is why an approver of another principal is not yours to rotate (rotationRefusal, api-keys.ts).
 *
 * One recursive query (UNION drops repeats, so it ends on any shape of data), the same on Postgres
 * and PGlite. Keys never leave their account, and the walk stays inside it.
 */
export async function isSamePrincipal(db: Db, accountId: string, keyId: string, otherKeyId: string): Promise<boolean> {
  const row = await db
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
  return row !== undefined;
}
