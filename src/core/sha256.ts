import * as crypto from 'node:crypto';

/**
 * SHA-256 of a text, as hex. On the request path (API keys, idempotency hashes) the one-shot
 * crypto.hash (Node 20.12) makes no Hash object: a third of createHash's cost. Older Node 20
 * releases take createHash.
 */
export const sha256Hex: (text: string) => string =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'hex')
    : (text) => crypto.createHash('sha256').update(text).digest('hex');
