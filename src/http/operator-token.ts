import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../core/errors.ts';

/**
 * A check of a bearer token the operator configures (METRICS_TOKEN, OPERATOR_TOKEN): routes that
 * take no API key because they are the operator's, not a merchant's. Compared in constant time.
 */
export function operatorBearerCheck(
  token: string,
  words: {
    /** The 401 when no bearer was sent: what to send. */
    missing: string;
    /** The 401 when another one was. */
    invalid: string;
    realm: string;
  },
): (authorization: string | undefined) => void {
  const expected = sha256(token);
  return (authorization) => {
    const presented = /^Bearer +(\S+)$/i.exec(authorization ?? '')?.[1];
    if (presented === undefined) {
      throw new AppError('authentication_required', words.missing, {
        headers: { 'WWW-Authenticate': `Bearer realm="${words.realm}"` },
      });
    }
    // Digests of equal length: the comparison takes the same time whatever was sent.
    if (!timingSafeEqual(sha256(presented), expected)) {
      throw new AppError('authentication_failed', words.invalid, {
        headers: { 'WWW-Authenticate': `Bearer realm="${words.realm}", error="invalid_token"` },
      });
    }
  };
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
