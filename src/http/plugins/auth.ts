import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { AppError } from '../../core/errors.ts';
import type { ApiKeyRow, Database } from '../../db/database.ts';
import { findApiKeyByHash, touchApiKey } from '../../db/repositories/api-keys.ts';
import { type ApiKeyScope, hashApiKey, parseApiKey } from '../../domain/api-key-secret.ts';
import { NOTIFICATION_CHANNELS, type Notifications, noNotifications } from '../../db/notifications.ts';
import { onApiKeyChanged } from '../../keys/api-keys.ts';
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/logger.ts';

/**
 * What checking an API key uses: the key rows, the notifications that tell the cache of a change to
 * one, a logger, and the clock its expiry is judged by. One object per process (a Runtime is one): the
 * key cache is kept per object, so the API host, the dashboard and MCP must hand in the same one.
 */
export interface ApiKeyCheck {
  db: Kysely<Database>;
  notifications: Notifications;
  logger: Logger;
  clock: Clock;
}

/** Who is calling: the key's account, mode and scopes. Every tool call carries one. */
export interface AuthContext {
  readonly accountId: string;
  readonly keyId: string;
  readonly livemode: boolean;
  readonly scopes: ReadonlySet<string>;
  /** An assistant's key (docs/policy.md "Keys for assistants"). */
  readonly assistant: boolean;
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
 * How long a key row read from the database is used without reading it again. Changes reach the
 * cache sooner, by notification (KeyCache); this bounds what a lost notification can cost.
 */
export const KEY_CACHE_TTL_MS = 1_000;
/**
 * How long a key this process changed is not cached again unless its notification comes first: the
 * change is announced here before its transaction commits, so a read meanwhile sees the old row.
 */
const CHANGE_SETTLE_MS = 5_000;
/** Past this many keys the cache starts over: memory stays bounded whatever keys are presented. */
const KEY_CACHE_MAX = 10_000;

interface CachedKey {
  row: ApiKeyRow;
  /** performance.now() when it was read: the TTL is real time, whatever clock the runtime runs on. */
  readAt: number;
}

/** Key lookups in flight, by key hash: requests that miss while one runs share its query. */
export type KeyLookups = Map<string, Promise<ApiKeyRow | undefined>>;

/**
 * API key rows by key hash, so that a request with a known key makes no query (bench/http.ts
 * `ping`). A change to a key reaches the cache at once: the trigger of migration 021 notifies
 * `plainpay_api_keys` with the key's id when anything but last_used_at changes (a revoke, a
 * rotation's expiry, new scopes), and the entry is dropped when the notification arrives; a
 * process whose listening connection was lost drops everything when it is back (payload '').
 * Revokes and rotations made in this process drop it before they return (onApiKeyChanged), and the
 * key is not cached again until its notification is heard (the announcement may come before the
 * change commits, and a read in between sees the old row), so the next request here is refused.
 * Another process (another instance, the operator's CLI) hears of a change by the notification,
 * which Postgres sends at commit: within milliseconds as a rule, and within KEY_CACHE_TTL_MS, the
 * safety net, if a notification is lost on a connection that still looks alive. An expiry is judged
 * on every request against the runtime's clock, cached row or not. Nothing is cached, and nothing
 * cached is used, while changes are not being heard (before the LISTEN is in place, while Postgres's
 * listening connection is down), and a row read while a change was announced is not kept. Unknown keys are not cached (a key created a moment
 * later must work at once); revoked and expired ones may be, since neither comes back. Requests
 * that miss while a lookup of the same key runs share that query.
 */
export class KeyCache {
  private readonly rows = new Map<string, CachedKey>();
  private readonly hashById = new Map<string, string>();
  private readonly inFlight: KeyLookups = new Map();
  /** Counts announced changes: a lookup that saw one while it ran does not keep its row. */
  private changes = 0;
  /** Keys changed by this process whose notification has not been heard yet, with when (performance.now()). */
  private readonly changing = new Map<string, number>();
  private listening = false;
  /**
   * Hashes of the secrets of cached keys presented lately: a request with a key in use skips the
   * SHA-256 (bench/http.ts `ping`). A pure function's memo, so no change to a key can make it
   * wrong (the rows above carry revokes and expiries). Emptied KEY_CACHE_TTL_MS after its first
   * entry, whether requests come or not, so a presented secret stays here about a second at most;
   * only secrets of keys found are kept, so made-up keys cannot fill it.
   */
  private readonly hashBySecret = new Map<string, string>();
  private forgetHashes: NodeJS.Timeout | undefined;

  constructor(private readonly keyCheck: ApiKeyCheck) {
    // A database opened without notifications (a stub) is read on every request.
    if (!keyCheck.notifications || keyCheck.notifications === noNotifications) return;
    keyCheck.notifications
      .listen(NOTIFICATION_CHANNELS.apiKeys, (keyId) => this.changed(keyId))
      .then(() => {
        this.listening = true;
        // A lookup that began before the LISTEN was in place may have missed a change: not kept.
        this.changes += 1;
      })
      .catch((error: unknown) => keyCheck.logger.warn({ err: error }, 'API keys are not cached: no notifications'));
    liveCaches.add(new WeakRef(this));
  }

  /** SHA-256 of a presented secret, as hashApiKey, remembered for a moment while its key is cached. */
  hashOf(presented: string): string {
    let hash = this.hashBySecret.get(presented);
    if (hash === undefined) {
      hash = hashApiKey(presented);
      if (this.rows.has(hash) && this.hashBySecret.size < KEY_CACHE_MAX) {
        this.hashBySecret.set(presented, hash);
        this.forgetHashes ??= setTimeout(() => {
          this.hashBySecret.clear();
          this.forgetHashes = undefined;
        }, KEY_CACHE_TTL_MS).unref();
      }
    }
    return hash;
  }

  /** The cached row of a key by its hash, if it may be used now. */
  fresh(hash: string): ApiKeyRow | undefined {
    const cached = this.rows.get(hash);
    if (cached && performance.now() - cached.readAt < KEY_CACHE_TTL_MS && this.hearing()) return cached.row;
    return undefined;
  }

  /** The row of a key by its hash: cached, joined to the running lookup, or read. */
  find(hash: string, inFlight: KeyLookups = this.inFlight): Promise<ApiKeyRow | undefined> {
    const cached = this.fresh(hash);
    if (cached) return Promise.resolve(cached);
    return inFlight.get(hash) ?? this.read(hash, inFlight);
  }

  /** Whether this hash is cached or being looked up (whoever started that checked the key's format). */
  knows(hash: string, inFlight: KeyLookups = this.inFlight): boolean {
    return this.rows.has(hash) || inFlight.has(hash);
  }

  private read(hash: string, inFlight: KeyLookups): Promise<ApiKeyRow | undefined> {
    const changesBefore = this.changes;
    const lookup = findApiKeyByHash(this.keyCheck.db, hash)
      .then((row) => {
        if (row && this.hearing() && this.changes === changesBefore) this.keep(hash, row);
        return row;
      })
      .finally(() => inFlight.delete(hash));
    inFlight.set(hash, lookup);
    return lookup;
  }

  /** Changes are being heard: the LISTEN is in place and (on Postgres) its connection is up. */
  private hearing(): boolean {
    return this.listening && this.keyCheck.notifications.hearing();
  }

  private keep(hash: string, row: ApiKeyRow): void {
    const changedAt = this.changing.get(row.id);
    if (changedAt !== undefined) {
      if (performance.now() - changedAt < CHANGE_SETTLE_MS) return;
      this.changing.delete(row.id);
    }
    if (this.rows.size >= KEY_CACHE_MAX && !this.rows.has(hash)) this.forgetAll();
    this.rows.set(hash, { row, readAt: performance.now() });
    this.hashById.set(row.id, hash);
  }

  /** This process changed the key (maybe not committed yet): dropped, and not kept until its notification. */
  announced(keyId: string): void {
    this.drop(keyId);
    const now = performance.now();
    // A change rolled back sends no notification: its mark lapses after CHANGE_SETTLE_MS.
    if (this.changing.size >= KEY_CACHE_MAX) {
      for (const [id, at] of this.changing) if (now - at >= CHANGE_SETTLE_MS) this.changing.delete(id);
    }
    this.changing.set(keyId, now);
  }

  /**
   * A change notification ('' after a lost connection: anything may have changed). A mark of this
   * process's own change stays on '': that change may not have committed yet.
   */
  changed(keyId: string): void {
    if (keyId !== '') this.changing.delete(keyId);
    this.drop(keyId);
  }

  private drop(keyId: string): void {
    this.changes += 1;
    if (keyId === '') {
      this.forgetAll();
      return;
    }
    const hash = this.hashById.get(keyId);
    if (hash === undefined) return;
    this.hashById.delete(keyId);
    this.rows.delete(hash);
  }

  private forgetAll(): void {
    this.rows.clear();
    this.hashById.clear();
  }
}

const keyCaches = new WeakMap<ApiKeyCheck, KeyCache>();
/** Every cache of this process, told of the revokes and rotations made here before they return. */
const liveCaches = new Set<WeakRef<KeyCache>>();
onApiKeyChanged((keyId) => {
  for (const ref of liveCaches) {
    const cache = ref.deref();
    if (cache) cache.announced(keyId);
    else liveCaches.delete(ref);
  }
});

/** One key cache per key check (a process has one: its runtime): the API host, the dashboard's sign-in and MCP share it. */
export function keyCacheOf(keyCheck: ApiKeyCheck): KeyCache {
  let cache = keyCaches.get(keyCheck);
  if (!cache) {
    cache = new KeyCache(keyCheck);
    keyCaches.set(keyCheck, cache);
  }
  return cache;
}

/**
 * Resolves the bearer key of a request. Missing → 401 with the seed's message; malformed,
 * unknown, revoked or expired → 401 with another. The lookup is by SHA-256 of the presented
 * secret, so no secret is compared with a stored one (nothing to time); the memo of recent hashes
 * (KeyCache.hashOf) holds only secrets presented and found, matched as map keys.
 */
export async function authenticate(
  keyCheck: ApiKeyCheck,
  header: string | undefined,
  touched: Map<string, number>,
  /** Lookups in flight to share instead of the cache's own (tests watch them). */
  lookups?: KeyLookups,
): Promise<AuthContext> {
  return authenticateNow(keyCheck, header, touched, lookups);
}

/**
 * authenticate() for the API's hot path: with the key's row cached, it answers (or throws) at once,
 * without a promise; otherwise it returns the lookup's promise.
 */
export function authenticateNow(
  keyCheck: ApiKeyCheck,
  header: string | undefined,
  touched: Map<string, number>,
  lookups?: KeyLookups,
): AuthContext | Promise<AuthContext> {
  const presented = extractBearer(header);
  if (presented === undefined) {
    throw new AppError('authentication_required', MISSING_KEY_MESSAGE, { headers: WWW_AUTHENTICATE });
  }
  const keys = keyCacheOf(keyCheck);
  const hash = keys.hashOf(presented);
  // A key cached or being looked up skips the format check (a second SHA-256): whoever read it
  // passed that check with the same key, since it has the same hash.
  if (!keys.knows(hash, lookups) && !parseApiKey(presented).ok) throw invalidKey();
  const cached = keys.fresh(hash);
  if (cached) return admitKey(keyCheck, cached, touched);
  return keys.find(hash, lookups).then((row) => admitKey(keyCheck, row, touched));
}

function invalidKey(): AppError {
  return new AppError('authentication_failed', INVALID_KEY_MESSAGE, {
    headers: { 'WWW-Authenticate': 'Bearer realm="plainpay", error="invalid_token"' },
  });
}

/** The caller of a key row found (or not) for the presented secret; the row's use is recorded. */
function admitKey(keyCheck: ApiKeyCheck, key: ApiKeyRow | undefined, touched: Map<string, number>): AuthContext {
  const now = keyCheck.clock.now();
  if (!key || key.revoked_at || (key.expires_at && key.expires_at <= now)) throw invalidKey();

  const last = touched.get(key.id) ?? key.last_used_at?.getTime() ?? 0;
  if (now.getTime() - last > TOUCH_INTERVAL_MS) {
    touched.set(key.id, now.getTime());
    // Not awaited on the request path; a lost touch only makes "last used" older.
    touchApiKey(keyCheck.db, key.id, now).catch((error) =>
      keyCheck.logger.warn({ err: error }, 'could not record key use'),
    );
  }
  return authContextOf(key);
}

/** One context per row read: a cached key's requests share it instead of building a scope set each. */
const authContexts = new WeakMap<ApiKeyRow, AuthContext>();
function authContextOf(key: ApiKeyRow): AuthContext {
  let context = authContexts.get(key);
  if (!context) {
    context = {
      accountId: key.account_id,
      keyId: key.id,
      livemode: key.livemode,
      scopes: new Set(key.scopes),
      assistant: key.assistant,
    };
    authContexts.set(key, context);
  }
  return context;
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
    /**
     * Developer endpoints set this: the request needs a valid key (and this scope, if given). Read
     * when the route is added (app.ts gives the route its auth hook then), so set it in the route's
     * options, not later; the hook runs after the host's and the plugin's own onRequest hooks.
     */
    auth?: { scope?: ApiKeyScope } | false;
  }
}
