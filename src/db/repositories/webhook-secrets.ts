import type { Db, ModeScope } from '../database.ts';

// An account's secrets are per mode: test-mode events are signed with test secrets only.

export interface StoredWebhookSecret {
  id: string;
  secretCiphertext: string;
  createdAt: Date;
  expiresAt: Date | null;
}

export async function insertWebhookSecret(
  db: Db,
  row: ModeScope & { id: string; secretCiphertext: string },
): Promise<void> {
  await db
    .insertInto('webhook_secrets')
    .values({
      id: row.id,
      account_id: row.accountId,
      livemode: row.livemode,
      secret_ciphertext: row.secretCiphertext,
    })
    .execute();
}

/** The current secret first, then any rotated-out secret still inside its grace period. */
export async function listActiveWebhookSecrets(db: Db, owner: ModeScope, now: Date): Promise<StoredWebhookSecret[]> {
  const rows = await db
    .selectFrom('webhook_secrets')
    .selectAll()
    .where('account_id', '=', owner.accountId)
    .where('livemode', '=', owner.livemode)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    secretCiphertext: r.secret_ciphertext,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
  }));
}

/** Ends the current secret's life at `expiresAt` (the rotation grace period). */
export async function expireCurrentWebhookSecrets(db: Db, owner: ModeScope, expiresAt: Date): Promise<void> {
  await db
    .updateTable('webhook_secrets')
    .set({ expires_at: expiresAt })
    .where('account_id', '=', owner.accountId)
    .where('livemode', '=', owner.livemode)
    .where('expires_at', 'is', null)
    .execute();
}
