// The account's webhook signing secrets, one per mode (a test key never sees or rotates the secret
// that signs live events), sealed at rest with the runtime's SecretBox. Rotation makes a new current secret and keeps the previous
// one signing for a grace period, so every delivery in that window carries both signatures and a
// receiver can switch secrets whenever it likes without missing an event.

import { AppError } from '../core/errors.ts';
import type { SecretBox } from '../core/secret-box.ts';
import type { Db, ModeScope } from '../db/database.ts';
import { lockAccount } from '../db/repositories/accounts.ts';
import {
  expireCurrentWebhookSecrets,
  insertWebhookSecret,
  listActiveWebhookSecrets,
} from '../db/repositories/webhook-secrets.ts';
import { newId } from '../domain/ids.ts';
import { generateWebhookSecret } from './signer.ts';

/** The default grace period of a rotation: a day to deploy the new secret. */
export const DEFAULT_ROTATION_GRACE_MINUTES = 24 * 60;
/** The longest grace period allowed: a week. */
export const MAX_ROTATION_GRACE_MINUTES = 7 * 24 * 60;

/**
 * The secrets to sign a delivery with: the current one first, then every rotated-out secret still
 * inside its grace period. Empty only if the account has no secret at all.
 */
export async function signingSecrets(db: Db, box: SecretBox, owner: ModeScope, now: Date): Promise<string[]> {
  const rows = await listActiveWebhookSecrets(db, owner, now);
  return rows.map((row) => box.open(row.secretCiphertext));
}

/**
 * The secrets that sign one delivery: an account endpoint's own secret, or for the event's
 * webhook_url the account's secrets of the event's mode (signingSecrets).
 */
export async function deliverySecrets(
  db: Db,
  box: SecretBox,
  delivery: ModeScope & { endpointSecretCiphertext: string | null },
  now: Date,
): Promise<string[]> {
  if (delivery.endpointSecretCiphertext !== null) return [box.open(delivery.endpointSecretCiphertext)];
  return signingSecrets(db, box, { accountId: delivery.accountId, livemode: delivery.livemode }, now);
}

export interface WebhookSecretView {
  object: 'webhook_secret';
  /** The current whsec_ secret. */
  secret: string;
  created: string;
  /**
   * Rotated-out secrets that still sign deliveries, with when they stop. Their values are not
   * shown again: they were shown while current, and the receiver that needs them already has them.
   */
  previous_secrets: Array<{ created: string; expires_at: string }>;
}

/** GET /v1/webhook_secret: the calling key's mode's secret. */
export async function readWebhookSecret(
  db: Db,
  box: SecretBox,
  owner: ModeScope,
  now: Date,
): Promise<WebhookSecretView> {
  const rows = await listActiveWebhookSecrets(db, owner, now);
  const current = rows.find((row) => row.expiresAt === null);
  if (!current) {
    throw new AppError(
      'not_found',
      'This account has no current webhook signing secret. Create one with POST /v1/webhook_secret/rotate.',
    );
  }
  return {
    object: 'webhook_secret',
    secret: box.open(current.secretCiphertext),
    created: current.createdAt.toISOString(),
    previous_secrets: rows
      .filter((row) => row.expiresAt !== null)
      .map((row) => ({ created: row.createdAt.toISOString(), expires_at: row.expiresAt!.toISOString() })),
  };
}

/**
 * POST /v1/webhook_secret/rotate: a new current secret; the old one signs alongside it until
 * now + grace (0 ends it at once). Run in a transaction: the account row is locked so two
 * concurrent rotations cannot both leave a "current" secret.
 */
export async function rotateWebhookSecret(
  trx: Db,
  box: SecretBox,
  input: ModeScope & { now: Date; gracePeriodMinutes: number },
): Promise<WebhookSecretView> {
  const { accountId, livemode, now } = input;
  await lockAccount(trx, accountId);
  const owner = { accountId, livemode };
  await expireCurrentWebhookSecrets(trx, owner, new Date(now.getTime() + input.gracePeriodMinutes * 60_000));
  await insertWebhookSecret(trx, { ...owner, id: newId('whsec'), secretCiphertext: box.seal(generateWebhookSecret()) });
  return readWebhookSecret(trx, box, owner, now);
}
