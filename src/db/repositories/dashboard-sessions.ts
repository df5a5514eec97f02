import type { Db } from '../database.ts';
import type { DashboardSessionRow } from '../tables/dashboard.ts';

// The dashboard's sign-in sessions (src/dashboard/sessions.ts says what they are and how long they
// live). Rows are keyed by the SHA-256 of the session id: the id itself is never stored.

/** Starts a session; first drops the key's sessions that can no longer be used. */
export async function insertDashboardSession(
  db: Db,
  row: Pick<DashboardSessionRow, 'id_hash' | 'account_id' | 'key_id' | 'livemode' | 'csrf_token'> & {
    now: Date;
    expiresAt: Date;
  },
): Promise<void> {
  // Old sessions of this key are of no use to anyone: drop them while we are here.
  await db
    .deleteFrom('dashboard_sessions')
    .where('key_id', '=', row.key_id)
    .where((eb) => eb.or([eb('expires_at', '<=', row.now), eb('revoked_at', 'is not', null)]))
    .execute();
  await db
    .insertInto('dashboard_sessions')
    .values({
      id_hash: row.id_hash,
      account_id: row.account_id,
      key_id: row.key_id,
      livemode: row.livemode,
      csrf_token: row.csrf_token,
      created_at: row.now,
      last_seen_at: row.now,
      expires_at: row.expiresAt,
    })
    .execute();
}

/** A session with its key's label and scopes as they are now. */
export interface LiveDashboardSession
  extends Pick<
    DashboardSessionRow,
    'account_id' | 'key_id' | 'livemode' | 'csrf_token' | 'last_seen_at' | 'expires_at'
  > {
  scopes: string[];
  assistant: boolean;
  name: string | null;
  display_prefix: string;
  last4: string;
}

/**
 * The session `idHash` if it is live at `now`: not ended, not past its expiry, used within
 * `idleSince`, and its key neither revoked nor expired.
 */
export async function findLiveDashboardSession(
  db: Db,
  idHash: string,
  now: Date,
  idleSince: Date,
): Promise<LiveDashboardSession | undefined> {
  return db
    .selectFrom('dashboard_sessions as s')
    .innerJoin('api_keys as k', (join) =>
      join.onRef('k.id', '=', 's.key_id').onRef('k.account_id', '=', 's.account_id'),
    )
    .select([
      's.account_id',
      's.key_id',
      's.livemode',
      's.csrf_token',
      's.last_seen_at',
      's.expires_at',
      'k.scopes',
      'k.assistant',
      'k.name',
      'k.display_prefix',
      'k.last4',
    ])
    .where('s.id_hash', '=', idHash)
    .where('s.revoked_at', 'is', null)
    .where('s.expires_at', '>', now)
    .where('s.last_seen_at', '>', idleSince)
    .where('k.revoked_at', 'is', null)
    .where((eb) => eb.or([eb('k.expires_at', 'is', null), eb('k.expires_at', '>', now)]))
    .executeTakeFirst();
}

export async function touchDashboardSession(db: Db, idHash: string, now: Date): Promise<void> {
  await db.updateTable('dashboard_sessions').set({ last_seen_at: now }).where('id_hash', '=', idHash).execute();
}

/** Ends one session for good. */
export async function revokeDashboardSession(db: Db, idHash: string, now: Date): Promise<void> {
  await db
    .updateTable('dashboard_sessions')
    .set({ revoked_at: now })
    .where('id_hash', '=', idHash)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Ends every session signed in with one key. */
export async function revokeKeyDashboardSessions(db: Db, accountId: string, keyId: string, now: Date): Promise<void> {
  await db
    .updateTable('dashboard_sessions')
    .set({ revoked_at: now })
    .where('account_id', '=', accountId)
    .where('key_id', '=', keyId)
    .where('revoked_at', 'is', null)
    .execute();
}
