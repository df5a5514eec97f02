// Standard Webhooks signing (https://www.standardwebhooks.com), the scheme Svix and others verify:
// headers webhook-id / webhook-timestamp / webhook-signature, where the signature is
// "v1,<base64 HMAC-SHA256(secret, `${id}.${timestamp}.${body}`)>". Receivers can use any Standard
// Webhooks library, so our output must match the reference byte for byte (see signer.test.ts).

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** Replay window on both sides of now, as in the reference libraries. */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

// The spec: "Random. At least 24 bytes (192 bits, 512 maximum)". We generate 32.
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;
const GENERATED_SECRET_BYTES = 32;

// Strict base64 (standard alphabet, padded), because Buffer.from(…, 'base64') silently skips junk
// and a mangled secret must fail loudly rather than yield a different key.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

// The id is part of the signed text "id.timestamp.body"; the spec forbids "." in it so that the
// three parts cannot be re-split differently. Printable ASCII only, since it travels as a header.
const MESSAGE_ID = /^[\x21-\x2d\x2f-\x7e]{1,256}$/;

// Seconds since the epoch; anything beyond this (year 5138) is almost certainly milliseconds.
const MAX_TIMESTAMP_SECONDS = 100_000_000_000;

export type WebhookHeaders = {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
};

/** A new per-endpoint secret: "whsec_" + base64 of 32 random bytes. Shown to the merchant once. */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(GENERATED_SECRET_BYTES).toString('base64');
}

/**
 * The HMAC key inside a secret. Accepts "whsec_<base64>" and, like the reference libraries, the bare
 * base64. Throws (without echoing the secret) when it is not strict base64 of 24–64 bytes.
 */
export function decodeWebhookSecret(secret: string): Buffer {
  const encoded = secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret;
  if (encoded === '' || !BASE64.test(encoded)) {
    throw new TypeError('webhook secret must be "whsec_" followed by standard base64');
  }
  const key = Buffer.from(encoded, 'base64');
  if (key.length < MIN_SECRET_BYTES || key.length > MAX_SECRET_BYTES) {
    throw new RangeError(
      `webhook secret must decode to ${MIN_SECRET_BYTES}–${MAX_SECRET_BYTES} bytes, got ${key.length}`,
    );
  }
  return key;
}

function hmac(key: Buffer, id: string, timestamp: number, body: string): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestamp}.${body}`, 'utf8').digest();
}

export interface SignWebhookInput {
  /** The event's id; stays the same across retries so receivers can deduplicate. */
  readonly id: string;
  /** Seconds since the epoch of this delivery attempt (not of the event). */
  readonly timestamp: number;
  /** The exact bytes that will be sent, as a string: receivers verify the raw body. */
  readonly body: string;
  /** Current secret first; during rotation also the previous one, so either verifies. */
  readonly secrets: readonly string[];
}

/** Signs one delivery attempt; the result is the three headers to send. */
export function signWebhook(input: SignWebhookInput): WebhookHeaders {
  const { id, timestamp, body, secrets } = input;
  if (!MESSAGE_ID.test(id)) {
    throw new TypeError('webhook id must be 1–256 printable ASCII characters without "." or spaces');
  }
  if (!Number.isSafeInteger(timestamp) || timestamp < 0 || timestamp >= MAX_TIMESTAMP_SECONDS) {
    throw new RangeError(`webhook timestamp must be whole seconds since the epoch, got ${timestamp}`);
  }
  if (secrets.length === 0) throw new RangeError('signWebhook needs at least one secret');
  const signatures = secrets.map(
    (secret) => `v1,${hmac(decodeWebhookSecret(secret), id, timestamp, body).toString('base64')}`,
  );
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatures.join(' '),
  };
}

export type WebhookVerificationFailure =
  | 'missing_headers'
  | 'invalid_timestamp'
  | 'timestamp_too_old'
  | 'timestamp_too_new'
  | 'no_matching_signature';

export type WebhookVerification =
  | { ok: true; id: string; timestamp: number }
  | { ok: false; reason: WebhookVerificationFailure };

export interface VerifyWebhookInput {
  /** The raw request body, exactly as received (never re-serialised JSON). */
  readonly body: string;
  /** Request headers; names are matched case-insensitively (node lower-cases them, fetch Headers too). */
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** Any of these may have signed it (rotation). */
  readonly secrets: readonly string[];
  /** Seconds since the epoch; defaults to the clock. */
  readonly now?: number;
  readonly toleranceSeconds?: number;
}

function header(headers: VerifyWebhookInput['headers'], name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    if (typeof value === 'string') return value;
    // A repeated signature header is ambiguous; refuse rather than guess which one counts.
    return value !== undefined && value.length === 1 ? value[0] : undefined;
  }
  return undefined;
}

/**
 * Verifies a delivery the way a receiver should: timestamp within tolerance (replay protection),
 * then any "v1," signature matching any secret, compared in constant time. For our tests and
 * examples; production receivers can equally use the standardwebhooks or svix packages.
 */
export function verifyWebhook(input: VerifyWebhookInput): WebhookVerification {
  const id = header(input.headers, 'webhook-id');
  const timestampText = header(input.headers, 'webhook-timestamp');
  const signatureHeader = header(input.headers, 'webhook-signature');
  if (!id || !timestampText || !signatureHeader) return { ok: false, reason: 'missing_headers' };

  if (!/^\d{1,15}$/.test(timestampText)) return { ok: false, reason: 'invalid_timestamp' };
  const timestamp = Number(timestampText);
  const now = input.now ?? Math.floor(Date.now() / 1000);
  const tolerance = input.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS;
  if (now - timestamp > tolerance) return { ok: false, reason: 'timestamp_too_old' };
  if (timestamp - now > tolerance) return { ok: false, reason: 'timestamp_too_new' };

  const candidates: Buffer[] = [];
  for (const entry of signatureHeader.split(' ')) {
    const comma = entry.indexOf(',');
    // Other schemes (e.g. "v1a," asymmetric) are skipped, not failed: the header may carry several.
    if (comma === -1 || entry.slice(0, comma) !== 'v1') continue;
    const encoded = entry.slice(comma + 1);
    if (BASE64.test(encoded)) candidates.push(Buffer.from(encoded, 'base64'));
  }

  for (const secret of input.secrets) {
    const expected = hmac(decodeWebhookSecret(secret), id, timestamp, input.body);
    for (const candidate of candidates) {
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) {
        return { ok: true, id, timestamp };
      }
    }
  }
  return { ok: false, reason: 'no_matching_signature' };
}
