// Public identifiers: a type prefix ("pay_", "po_", …) so a pasted id says what it is, then 22
// base62 characters of CSPRNG output (≈131 bits), so ids cannot be guessed or enumerated.
// Randomness is not I/O, which is why this lives in src/domain.

import { randomFillSync } from 'node:crypto';

export const ID_PREFIXES = [
  'pay', // payment (checkout session)
  'po', // payout
  'rf', // refund
  'evt', // webhook event
  'key', // API key
  'acct', // account
  'run', // agent run
  'act', // agent action
  'conf', // pending confirmation
  'batch', // settlement batch
  'tx', // chain transfer
  'req', // request
  'split', // revenue split
  'att', // payment attempt
  'rev', // rail event: a provider callback, verification or refusal
  'rec', // reconciliation run: one daily three-way reconciliation, scheduled or asked for
  'del', // webhook delivery attempt
  'evd', // an event's delivery to one target (a payment's webhook_url or an account endpoint)
  'we', // account webhook endpoint
  'fund', // test-mode balance funding
  'whsec', // webhook signing secret (the row; the secret itself is whsec_ + base64)
  'col', // collection account: the operator's provider integration that collects payers' money
  'xauth', // x402 authorization: an EIP-3009 authorization plainpay was asked to settle
] as const;

export type IdPrefix = (typeof ID_PREFIXES)[number];

/** An id of one type at the type level: `Id<'pay'>` is "pay_" followed by the random part. */
export type Id<P extends IdPrefix> = `${P}_${string}`;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** 62^22 ≈ 2^131, at least the 128 bits asked of an unguessable id. */
export const ID_RANDOM_LENGTH = 22;
// Largest multiple of 62 that fits in a byte: bytes at or above it are discarded so that every
// character is uniformly distributed (plain `byte % 62` would favour the first 8 characters).
const UNBIASED_LIMIT = 248;

const ID_BODY = new RegExp(`^[0-9A-Za-z]{${ID_RANDOM_LENGTH}}$`);

/**
 * CSPRNG bytes fetched 4 KiB at a time and each used once, as node's randomUUID does with its own
 * cache: a call into the CSPRNG per id was 2.5 % of POST /v1/payments' CPU.
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomByte(): number {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const byte = pool[poolOffset]!;
  // Used bytes are overwritten, so no copy of an id's randomness stays in the pool.
  pool[poolOffset] = 0;
  poolOffset += 1;
  return byte;
}

/** A fresh id such as "pay_4fT0q9ZkLw2mXbV7rN1sQe". */
export function newId<P extends IdPrefix>(prefix: P): Id<P> {
  let body = '';
  while (body.length < ID_RANDOM_LENGTH) {
    const byte = randomByte();
    // About 3% of bytes are rejected.
    if (byte < UNBIASED_LIMIT) body += ALPHABET[byte % 62];
  }
  return `${prefix}_${body}`;
}

/** True when `value` is an id of that type: exact prefix, underscore, 22 base62 characters. */
export function isId<P extends IdPrefix>(prefix: P, value: unknown): value is Id<P> {
  if (typeof value !== 'string') return false;
  const head = `${prefix}_`;
  return value.startsWith(head) && ID_BODY.test(value.slice(head.length));
}

/** The pattern for ids of one type, e.g. for a zod `.regex()` in a tool's input schema. */
export function idPattern(prefix: IdPrefix): RegExp {
  return new RegExp(`^${prefix}_[0-9A-Za-z]{${ID_RANDOM_LENGTH}}$`);
}
