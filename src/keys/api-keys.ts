import { z } from 'zod';
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
import { keysetOf, type PageRequest, pageFrom } from '../db/pagination.ts';
import { isSamePrincipal } from './lineage.ts';

/**
 * What a client sees of a key: never the secret, never its hash. Timestamps follow the API's one
 * rule (`created`, then `<event>_at`); `last_used`, `expires` and `revoked` are the names of the
 * previous release, kept beside the new ones for one release (docs/api.md).
 */
export const apiKeyOutput = z
  .object({
    id: z.string(),
    object: z.literal('api_key'),
    name: z.string().nullable(),
    livemode: z.boolean(),
    prefix: z.string().describe('The first characters of the secret, for recognising it.'),
    last4: z.string(),
    redacted: z.string().describe('e.g. "sk_test_4f9Q…x7Kd", for display.'),
    scopes: z.array(z.string()),
    created: z.string(),
    last_used_at: z.string().nullable().describe('When the key last authenticated a request (to the minute).'),
    expires_at: z.string().nullable().describe('When the key stops working (a rotated key), or null.'),
    revoked_at: z.string().nullable().describe('When the key was revoked, or null.'),
    rotated_from: z.string().nullable(),
    assistant: z
      .boolean()
      .describe(
        "An assistant's key: every call made with it is judged by the policy's mcp limits as well as its own channel's (docs/policy.md).",
      ),
    last_used: z.string().nullable().describe('Deprecated: last_used_at. Removed in the next release.'),
    expires: z.string().nullable().describe('Deprecated: expires_at. Removed in the next release.'),
    revoked: z.string().nullable().describe('Deprecated: revoked_at. Removed in the next release.'),
  })
  .describe('An API key, without its secret.');

export type ApiKeyView = z.output<typeof apiKeyOutput>;

export interface IssuedApiKey extends ApiKeyView {
  /** The secret, returned once at creation and never again. */
  secret: string;
}

export function presentApiKey(row: ApiKeyRow): ApiKeyView {
  const lastUsed = row.last_used_at?.toISOString() ?? null;
  const expires = row.expires_at?.toISOString() ?? null;
  const revoked = row.revoked_at?.toISOString() ?? null;
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
    last_used_at: lastUsed,
    expires_at: expires,
    revoked_at: revoked,
    rotated_from: row.rotated_from,
    assistant: row.assistant,
    last_used: lastUsed,
    expires,
    revoked,
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
    /** The key whose authority creates it; left out (null) only by the operator's CLI and account creation. */
    createdByKey?: string | null;
    /** An assistant's key (docs/policy.md "Keys for assistants"); fixed for the key's life. */
    assistant?: boolean;
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
    created_by_key: input.createdByKey ?? null,
    assistant: input.assistant ?? false,
  });
  return { ...presentApiKey(row), secret: generated.secret };
}

const keyChangeListeners = new Set<(keyId: string) => void>();

/**
 * Calls `listener` with a key's id when this process revokes it or shortens its life (a rotation),
 * once the change is written: the key cache (http/plugins/auth.ts) drops it at once, without
 * waiting for the notification that tells every process (migration 021).
 */
export function onApiKeyChanged(listener: (keyId: string) => void): void {
  keyChangeListeners.add(listener);
}

function announceKeyChange(keyId: string): void {
  for (const listener of keyChangeListeners) listener(keyId);
}

/** The key doing the managing (an API key on POST /keys…, or the key signed in on the dashboard). */
export interface KeyManager {
  accountId: string;
  livemode: boolean;
  keyId: string;
  scopes: ReadonlySet<string>;
  /** The managing key is an assistant's: it may only make and manage assistant keys. */
  assistant: boolean;
}

/**
 * Keys are objects of one mode, like payments: a key lists, reads, revokes and rotates only keys of
 * its own account and mode, and another mode's key id is a 404 as any other object's would be. The
 * operator's CLI (no managing key) sees both modes.
 */
function ownerOf(accountId: string, manager: KeyManager | null): KeyOwner {
  return manager ? { accountId: manager.accountId, livemode: manager.livemode } : { accountId };
}

/** The scopes of `scopes` that the managing key does not hold itself. */
export function scopesNotHeld(manager: KeyManager, scopes: readonly string[]): string[] {
  return scopes.filter((scope) => !manager.scopes.has(scope));
}

/**
 * A key never mints or obtains a more powerful key: a test key cannot create a live key, an
 * assistant's key cannot create a key without the assistant's limits, and only scopes the managing
 * key holds can be granted (a live key may create a test key, which is less). One rule for the API
 * and the dashboard.
 */
export function assertCanGrant(
  manager: KeyManager,
  livemode: boolean,
  scopes: readonly string[],
  assistant: boolean,
): void {
  if (manager.assistant && !assistant) {
    throw new AppError(
      'permission_denied',
      "An assistant's key can only create assistant keys: a key without the assistant's limits would step around them.",
      { param: 'assistant' },
    );
  }
  if (livemode && !manager.livemode) {
    throw new AppError('permission_denied', 'A test-mode key cannot create live-mode keys. Use a live key.', {
      param: 'live',
    });
  }
  const missing = scopesNotHeld(manager, scopes);
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

/**
 * A key revokes or rotates only keys whose scopes are all its own: otherwise a key with little more
 * than the `keys` scope could lock the account's full key out (revoke), or obtain its powers (rotate
 * hands out a new secret with the target's scopes). Keys of another mode are already out of reach
 * (ownerOf). One rule for the API and the dashboard.
 */
export function assertCanManage(manager: KeyManager, target: ApiKeyRow): void {
  const refused = manageRefusal(manager, target);
  if (refused) throw refused;
}

/**
 * Why `manager` may not revoke or rotate `target`: scopes it does not hold, or (for an assistant's
 * key) a target without the assistant's limits, whose rotation would hand it a freer secret.
 */
export function manageRefusal(manager: KeyManager, target: ApiKeyRow): AppError | undefined {
  const missing = scopesNotHeld(manager, target.scopes);
  if (missing.length > 0) {
    return new AppError(
      'permission_denied',
      `The calling key cannot revoke or rotate API key '${target.id}': it holds scopes the calling key does not (${missing.join(', ')}). Use a key that holds every one of them.`,
      { param: 'id' },
    );
  }
  if (manager.assistant && !target.assistant) {
    return new AppError(
      'permission_denied',
      `The calling key cannot revoke or rotate API key '${target.id}': the calling key is an assistant's, and that key is not.`,
      { param: 'id' },
    );
  }
  return undefined;
}

/**
 * Why `manager` may not rotate `target`, or undefined when it may. Rotation hands the caller the new
 * secret, and the successor counts as the caller's (src/keys/lineage.ts). A key holding `approvals`
 * that is another principal than the caller may judge the caller's requests: rotating it would lock
 * that approver out of them (its old key expires, and its successor is the caller's), so a requester
 * holding `keys` could silence its own approvers. Only the approver's own principal (the key itself,
 * the keys that created it, directly or through others) or the operator's CLI rotates such a key;
 * its successor then keeps its standing. One rule for the API and the dashboard.
 */
export async function rotationRefusal(db: Db, manager: KeyManager, target: ApiKeyRow): Promise<AppError | undefined> {
  const refused = manageRefusal(manager, target);
  if (refused) return refused;
  if (!target.scopes.includes('approvals')) return undefined;
  if (await isSamePrincipal(db, manager.accountId, manager.keyId, target.id)) return undefined;
  return new AppError(
    'permission_denied',
    `The calling key cannot rotate API key '${target.id}': it holds the approvals scope and is another principal, so it may approve the calling key's requests. It is rotated by itself or by the key that created it.`,
    { param: 'id' },
  );
}

/** The keys `manager` may see (its account and mode), or all of an account's keys for the CLI. */
export async function listAccountApiKeys(db: Db, accountId: string, manager: KeyManager | null): Promise<ApiKeyView[]> {
  return (await listApiKeys(db, ownerOf(accountId, manager))).map(presentApiKey);
}

/** One page of the keys `manager` may see (GET /keys). */
export async function pageAccountApiKeys(
  db: Db,
  accountId: string,
  manager: KeyManager,
  page: PageRequest,
): Promise<{ data: ApiKeyView[]; has_more: boolean }> {
  const owner = ownerOf(accountId, manager);
  const keyset = await keysetOf(page, 'API key', (id) => findApiKey(db, owner, id));
  const rows = await listApiKeys(db, owner, { keyset, limit: page.limit });
  const { data, has_more } = pageFrom(rows, page.limit, keyset);
  return { data: data.map(presentApiKey), has_more };
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
  if (manager) assertCanManage(manager, await getAccountApiKey(db, accountId, keyId, manager));
  const row = await revokeApiKey(db, ownerOf(accountId, manager), keyId, now);
  if (!row) throw new AppError('not_found', `No API key with id '${keyId}'.`, { param: 'id' });
  announceKeyChange(row.id);
  return presentApiKey(row);
}

/**
 * Rotation issues a new key with the same mode, scopes and name, and keeps the old key valid
 * until `now + oldKeyExpiresInMinutes` (0 = at once) so deployments can switch without downtime.
 * The new key is the rotation caller's creation: the caller holds its secret (src/keys/lineage.ts).
 */
export async function rotateAccountApiKey(
  db: Db,
  input: { keyId: string; oldKeyExpiresInMinutes: number; now: Date; manager: KeyManager },
): Promise<{ new_key: IssuedApiKey; old_key: ApiKeyView }> {
  const { manager } = input;
  const old = await getAccountApiKey(db, manager.accountId, input.keyId, manager);
  const refused = await rotationRefusal(db, manager, old);
  if (refused) throw refused;
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
    createdByKey: manager.keyId,
    assistant: old.assistant,
  });
  await expireApiKeyAt(db, old.id, new Date(input.now.getTime() + input.oldKeyExpiresInMinutes * 60_000));
  announceKeyChange(old.id);
  const refreshed = await getAccountApiKey(db, manager.accountId, old.id, manager);
  return { new_key: issued, old_key: presentApiKey(refreshed) };
}
