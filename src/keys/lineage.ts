import type { Db } from '../db/database.ts';
import { findKeyOfPrincipal } from '../db/repositories/api-keys.ts';

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
 * One recursive query (findKeyOfPrincipal). Keys never leave their account, and the walk stays
 * inside it.
 */
export async function isSamePrincipal(db: Db, accountId: string, keyId: string, otherKeyId: string): Promise<boolean> {
  const row = await findKeyOfPrincipal(db, accountId, keyId, otherKeyId);
  return row !== undefined;
}
