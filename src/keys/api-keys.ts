import { AppError } from '../core/errors.ts';
import type { ApiKeyRow, Db } from '../db/database.ts';
import {
  expireApiKeyAt,
  findApiKey,
  insertApiKey,
  type KeyOwner,
  listApiKeys,
  revokeApiKey,
} from '../db/repositories/api-keys.ts';
import { API_KEY_SCOPES, type ApiKeyScope, generateApiKey } from '../domain/api-key-secret.ts';
import { newId } from '../domain/ids.ts';

/** What a client sees of a key: never the secret, never its hash. */
export interface ApiKeyView {
  id: string;
  object: 'api_key';
  name: string | null;
  livemode: boolean;
  prefix: string;
  last4: string;
  /** e.g. "sk_test_4f9Q…x7Kd", for display. */
  redacted: string;
  scopes: string[];
  created: string;
  last_used: string | null;
  expires: string | null;
  revoked: string | null;
  rotated_from: string | null;
}

export interface IssuedApiKey extends ApiKeyView {
  /** The secret, returned once at creation and never again. */
  secret: string;
}

export function presentApiKey(row: ApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    object: 'api_key',
    name: row.name,
    livemode: row.livemode,
    prefix: row.display_prefix,
    last4: row.last4,
    redacted: `${row.display_prefix}…${row.last4}`,
    scopes: row.scopes,
    created: row.created_at.toISOString(),
    last_used: row.last_used_at?.toISOString() ?? null,
    expires: row.expires_at?.toISOString() ?? null,
    revoked: row.revoked_at?.toISOString() ?? null,
    rotated_from: row.rotated_from,
  };
}

export async function issueApiKey(
  db: Db,
  input: {
    accountId: string;
    livemode: boolean;
    scopes?: readonly ApiKeyScope[];
    name?: string | null;
    rotatedFrom?: string;
  },
): Promise<IssuedApiKey> {
  const generated = generateApiKey(input.livemode);
  const row = await insertApiKey(db, {
    id: newId('key'),
    account_id: input.accountId,
    name: input.name ?? null,
    livemode: input.livemode,
    display_prefix: generated.displayPrefix,
    last4: generated.last4,
    secret_hash: generated.secretHash,
    scopes: [...(input.scopes ?? API_KEY_SCOPES)],
    rotated_from: input.rotatedFrom ?? null,
  });
  return { ...presentApiKey(row), secret: generated.secret };
}

/** The key doing the managing (an API key on POST /keys…, or the key signed in on the dashboard). */
export interface KeyManager {
  accountId: string;
  livemode: boolean;
  scopes: ReadonlySet<string>;
}

/**
 * Keys are objects of one mode, like payments: a key lists, reads, revokes and rotates only keys of
 * its own account and mode, and another mode's key id is a 404 as any other object's would be. The
 * operator's CLI (no managing key) sees both modes.
 */
function ownerOf(accountId: string, manager: KeyManager | null): KeyOwner {
  return manager ? { accountId: manager.accountId, livemode: manager.livemode } : { accountId };
}

/**
 * A key never mints or obtains a more powerful key: a test key cannot create a live key, and only
 * scopes the managing key holds can be granted (a live key may create a test key, which is less).
 * Rotation hands out a new secret with the target's scopes, so it needs every one of them. One
 * rule for the API and the dashboard.
 */
export function assertCanGrant(manager: KeyManager, livemode: boolean, scopes: readonly string[]): void {
  if (livemode && !manager.livemode) {
    throw new AppError('permission_denied', 'A test-mode key cannot create live-mode keys. Use a live key.', {
      param: 'live',
    });
  }
  const missing = scopes.filter((scope) => !manager.scopes.has(scope));
  if (missing.length > 0) {
    throw new AppError(
      'permission_denied',
      `The calling key cannot grant scopes it does not hold: ${missing.join(', ')}.`,
      {
        param: 'scopes',
      },
    );
  }
}

/** The keys `manager` may see (its account and mode), or all of an account's keys for the CLI. */
export async function listAccountApiKeys(db: Db, accountId: string, manager: KeyManager | null): Promise<ApiKeyView[]> {
  return (await listApiKeys(db, ownerOf(accountId, manager))).map(presentApiKey);
}

/** One key `manager` may see, or a 404 naming the id. */
export async function getAccountApiKey(
  db: Db,
  accountId: string,
  keyId: string,
  manager: KeyManager | null,
): Promise<ApiKeyRow> {
  const row = await findApiKey(db, ownerOf(accountId, manager), keyId);
  if (!row) throw new AppError('not_found', `No API key with id '${keyId}'.`, { param: 'id' });
  return row;
}

export async function revokeAccountApiKey(
  db: Db,
  accountId: string,
  keyId: string,
  now: Date,
  /** The key revoking it; null only for the operator's CLI, which is trusted. */
  manager: KeyManager | null,
): Promise<ApiKeyView> {
  const row = await revokeApiKey(db, ownerOf(accountId, manager), keyId, now);
  if (!row) throw new AppError('not_found', `No API key with id '${keyId}'.`, { param: 'id' });
  return presentApiKey(row);
}

/**
 * Rotation issues a new key with the same mode, scopes and name, and keeps the old key valid
 * until `now + oldKeyExpiresInMinutes` (0 = at once) so deployments can switch without downtime.
 */
export async function rotateAccountApiKey(
  db: Db,
  input: { keyId: string; oldKeyExpiresInMinutes: number; now: Date; manager: KeyManager },
): Promise<{ new_key: IssuedApiKey; old_key: ApiKeyView }> {
  const { manager } = input;
  const old = await getAccountApiKey(db, manager.accountId, input.keyId, manager);
  assertCanGrant(manager, old.livemode, old.scopes);
  if (old.revoked_at)
    throw new AppError('conflict', `API key '${input.keyId}' is revoked and cannot be rotated.`, { param: 'id' });
  if (old.expires_at && old.expires_at <= input.now) {
    throw new AppError('conflict', `API key '${input.keyId}' has expired and cannot be rotated.`, { param: 'id' });
  }
  const issued = await issueApiKey(db, {
    accountId: manager.accountId,
    livemode: old.livemode,
    scopes: old.scopes as ApiKeyScope[],
    name: old.name,
    rotatedFrom: old.id,
  });
  await expireApiKeyAt(db, old.id, new Date(input.now.getTime() + input.oldKeyExpiresInMinutes * 60_000));
  const refreshed = await getAccountApiKey(db, manager.accountId, old.id, manager);
  return { new_key: issued, old_key: presentApiKey(refreshed) };
}
