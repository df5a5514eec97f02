import { createHash, randomInt } from 'node:crypto';
import { sha256Hex } from '../core/sha256.ts';

/**
 * API key secrets: `sk_live_` or `sk_test_`, 32 random base62 characters (190.5 bits), then a
 * 6-character checksum. The checksum lets us reject a mistyped or truncated key without a
 * database lookup, and lets secret scanners recognise our keys.
 */

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = /^sk_(live|test)_([0-9A-Za-z]{32})([0-9A-Za-z]{6})$/;

export const API_KEY_SCOPES = [
  'payments:read',
  'payments:write',
  'payouts:write',
  'refunds:write',
  'agent',
  'approvals',
  'keys',
  'policy',
  'webhooks',
] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

export interface GeneratedApiKey {
  secret: string;
  secretHash: string;
  displayPrefix: string;
  last4: string;
  livemode: boolean;
}

export function generateApiKey(livemode: boolean): GeneratedApiKey {
  const prefix = livemode ? 'sk_live_' : 'sk_test_';
  let body = '';
  // randomInt draws without modulo bias.
  for (let i = 0; i < BODY_LENGTH; i++) body += BASE62[randomInt(62)];
  const secret = prefix + body + checksum(prefix + body);
  return {
    secret,
    secretHash: hashApiKey(secret),
    displayPrefix: secret.slice(0, prefix.length + 4),
    last4: secret.slice(-4),
    livemode,
  };
}

export type ParsedApiKey = { ok: true; livemode: boolean } | { ok: false };

/** Checks the shape and checksum of a presented key; says nothing about whether it exists. */
export function parseApiKey(presented: string): ParsedApiKey {
  const match = KEY_PATTERN.exec(presented);
  if (!match) return { ok: false };
  const [, mode, body, sum] = match;
  const prefix = `sk_${mode}_`;
  if (checksum(prefix + body) !== sum) return { ok: false };
  return { ok: true, livemode: mode === 'live' };
}

/** SHA-256 hex of the whole secret: what the database stores and looks keys up by. */
export function hashApiKey(secret: string): string {
  return sha256Hex(secret);
}

function checksum(text: string): string {
  const digest = createHash('sha256').update(text).digest();
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) out += BASE62[digest[i]! % 62];
  return out;
}
