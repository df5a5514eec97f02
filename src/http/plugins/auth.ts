import type { FastifyRequest } from 'fastify';
import { AppError } from '../../core/errors.ts';
import type { ApiKeyRow } from '../../db/database.ts';
import { findApiKeyByHash, touchApiKey } from '../../db/repositories/api-keys.ts';
import { type ApiKeyScope, hashApiKey, parseApiKey } from '../../domain/api-key-secret.ts';
import type { Runtime } from '../../runtime.ts';

/** Who is calling: the key's account, mode and scopes. Every tool call carries one. */
export interface AuthContext {
  accountId: string;
  keyId: string;
  livemode: boolean;
  scopes: ReadonlySet<string>;
}

const WWW_AUTHENTICATE = { 'WWW-Authenticate': 'Bearer realm="plainpay"' };
export const MISSING_KEY_MESSAGE =
  'No API key provided. Send your secret key in the Authorization header as a bearer token: ' +
  '"Authorization: Bearer sk_live_..." (or sk_test_... in test mode).';
const INVALID_KEY_MESSAGE =
  'Invalid API key provided. Check the key, or create a new one with POST /keys or on the dashboard.';
/** last_used_at is a hint for humans: writing it at most once a minute keeps auth read-only. */
const TOUCH_INTERVAL_MS = 60_000;

/**
 * Key lookups in flight, by key hash. Requests with the same key that arrive while its lookup is
 * running share that lookup instead of queueing one query each (bench/http.ts: with one query per
 * request, GET /v1/ping reached 12% of a hello-world's throughput). Nothing is kept once the query
 * returns: a revoked or changed key is seen by every lookup started after the change committed, so
 * the most a request can miss is a change that commits while the lookup it joined is running (a
 * millisecond or so, the same race as a request whose own query is in flight). No cache, no TTL.
 */
export type KeyLookups = Map<string, Promise<ApiKeyRow | undefined>>;

/** Starts the lookup of a key, shared with the requests that arrive while it runs. */
function sharedLookup(runtime: Runtime, lookups: KeyLookups | undefined, hash: string): Promise<ApiKeyRow | undefined> {
  if (!lookups) return findApiKeyByHash(runtime.db, hash);
  const lookup = findApiKeyByHash(runtime.db, hash).finally(() => lookups.delete(hash));
  lookups.set(hash, lookup);
  return lookup;
}

/**
 * Resolves the bearer key of a request. Missing → 401 with the seed's message; malformed,
 * unknown, revoked or expired → 401 with another. The lookup is by SHA-256 of the presented
 * secret, so no comparison of secrets happens in code (nothing to time).
 */
export async function authenticate(
  runtime: Runtime,
  header: string | undefined,
  touched: Map<string, number>,
  lookups?: KeyLookups,
): Promise<AuthContext> {
  const presented = extractBearer(header);
  if (presented === undefined) {
    throw new AppError('authentication_required', MISSING_KEY_MESSAGE, { headers: WWW_AUTHENTICATE });
  }
  const invalid = (): AppError =>
    new AppError('authentication_failed', INVALID_KEY_MESSAGE, {
      headers: { 'WWW-Authenticate': 'Bearer realm="plainpay", error="invalid_token"' },
    });
  const hash = hashApiKey(presented);
  // Joining a lookup in flight skips the format check (a second SHA-256): the request that started
  // it passed that check with the same key, since it has the same hash.
  const running = lookups?.get(hash);
  if (!running && !parseApiKey(presented).ok) throw invalid();
  const key = await (running ?? sharedLookup(runtime, lookups, hash));
  const now = runtime.clock.now();
  if (!key || key.revoked_at || (key.expires_at && key.expires_at <= now)) throw invalid();

  const last = touched.get(key.id) ?? key.last_used_at?.getTime() ?? 0;
  if (now.getTime() - last > TOUCH_INTERVAL_MS) {
    touched.set(key.id, now.getTime());
    // Not awaited on the request path; a lost touch only makes "last used" older.
    touchApiKey(runtime.db, key.id, now).catch((error) =>
      runtime.logger.warn({ err: error }, 'could not record key use'),
    );
  }
  return { accountId: key.account_id, keyId: key.id, livemode: key.livemode, scopes: new Set(key.scopes) };
}

function extractBearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^\s*Bearer\s+(\S*)\s*$/i.exec(header);
  // Any other scheme (Basic, a bare key) carries no bearer key: report it as missing, with
  // the message that shows the right form.
  if (!match || match[1] === '') return undefined;
  return match[1];
}

export function requireScope(auth: AuthContext, scope: ApiKeyScope): void {
  if (!auth.scopes.has(scope)) {
    throw new AppError('permission_denied', `This API key does not have the '${scope}' scope needed for this request.`);
  }
}

export function requestAuth(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new AppError('authentication_required', MISSING_KEY_MESSAGE, { headers: WWW_AUTHENTICATE });
  return request.auth;
}

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
  }
  interface FastifyContextConfig {
    /** Developer endpoints set this: the request needs a valid key (and this scope, if given). */
    auth?: { scope?: ApiKeyScope } | false;
  }
}
