import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../core/sha256.ts';
import type { Db } from '../db/database.ts';
import {
  findLiveDashboardSession,
  insertDashboardSession,
  revokeDashboardSession,
  revokeKeyDashboardSessions,
  touchDashboardSession,
} from '../db/repositories/dashboard-sessions.ts';
import type { AuthContext } from '../http/plugins/auth.ts';

/**
 * Dashboard sign-in sessions, kept server-side in dashboard_sessions so that any API instance can
 * serve any request and ending a session is one update.
 *
 * - The cookie holds a random session id (256 bits); the table holds only its SHA-256, so a copy of
 *   the table cannot be replayed as cookies. The API key itself never leaves the sign-in request.
 * - Every request re-reads the session joined to its API key: a revoked or expired key (on the
 *   dashboard, the API or the CLI) ends its sessions at once, and scopes are always the key's own.
 * - A session ends after SESSION_IDLE_MS without a request, and SESSION_MAX_MS after sign-in
 *   whatever happens.
 */

export const SESSION_COOKIE = 'plainpay_session';
export const SESSION_IDLE_MS = 2 * 60 * 60_000;
export const SESSION_MAX_MS = 12 * 60 * 60_000;
/** last_seen_at is written at most this often: reading a page should not be a write each time. */
const SEEN_INTERVAL_MS = 60_000;
const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface DashboardSession {
  idHash: string;
  accountId: string;
  keyId: string;
  livemode: boolean;
  /** The key's scopes as they are now. */
  scopes: ReadonlySet<string>;
  /** The key is an assistant's (docs/policy.md): it makes and manages assistant keys only. */
  assistant: boolean;
  /** The synchronizer token every form of this session must carry. */
  csrfToken: string;
  /** How the signed-in key is shown: its redacted secret and its name. */
  keyLabel: { redacted: string; name: string | null };
  expiresAt: Date;
}

export function hashSessionId(id: string): string {
  return sha256Hex(id);
}

/** Starts a session for a key that has just been authenticated. Returns the id for the cookie. */
export async function createSession(db: Db, auth: AuthContext, now: Date): Promise<{ id: string; expiresAt: Date }> {
  const id = randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + SESSION_MAX_MS);
  await insertDashboardSession(db, {
    id_hash: hashSessionId(id),
    account_id: auth.accountId,
    key_id: auth.keyId,
    livemode: auth.livemode,
    csrf_token: randomBytes(32).toString('base64url'),
    now,
    expiresAt,
  });
  return { id, expiresAt };
}

/**
 * The live session for a cookie value, or undefined: unknown, ended, idle too long, past its
 * absolute limit, or its key is revoked or expired.
 */
export async function loadSession(db: Db, id: string | undefined, now: Date): Promise<DashboardSession | undefined> {
  if (id === undefined || !SESSION_ID_PATTERN.test(id)) return undefined;
  const idHash = hashSessionId(id);
  const row = await findLiveDashboardSession(db, idHash, now, new Date(now.getTime() - SESSION_IDLE_MS));
  if (!row) return undefined;
  if (now.getTime() - row.last_seen_at.getTime() > SEEN_INTERVAL_MS) {
    await touchDashboardSession(db, idHash, now);
  }
  return {
    idHash,
    accountId: row.account_id,
    keyId: row.key_id,
    livemode: row.livemode,
    scopes: new Set(row.scopes),
    assistant: row.assistant,
    csrfToken: row.csrf_token,
    keyLabel: { redacted: `${row.display_prefix}…${row.last4}`, name: row.name },
    expiresAt: row.expires_at,
  };
}

/** Sign-out: the session can never be used again. */
export async function endSession(db: Db, idHash: string, now: Date): Promise<void> {
  await revokeDashboardSession(db, idHash, now);
}

/**
 * Ends every session signed in with a key (when the key is revoked). loadSession already refuses a
 * revoked key's sessions; ending them as well keeps that true if the key check ever changes.
 */
export async function endKeySessions(db: Db, accountId: string, keyId: string, now: Date): Promise<void> {
  await revokeKeyDashboardSessions(db, accountId, keyId, now);
}

/** The session cookie: unreadable by scripts, never sent cross-site, only to /dashboard. */
export function sessionCookie(id: string, maxAgeSeconds: number, secure: boolean): string {
  return [
    `${SESSION_COOKIE}=${id}`,
    'HttpOnly',
    'SameSite=Strict',
    'Path=/dashboard',
    `Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

export function clearedSessionCookie(secure: boolean): string {
  return sessionCookie('', 0, secure);
}

/** The session id from a Cookie header (the first plainpay_session cookie). */
export function readSessionCookie(header: string | undefined): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}
