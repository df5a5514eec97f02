import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Cross-site request forgery defences of the dashboard's forms. Two independent checks:
 *
 * 1. A synchronizer token: every form of a session carries the session's random csrf_token in a
 *    hidden field, and a POST must present it (compared in constant time). Another site can make
 *    a browser send the cookie only if SameSite fails, and even then it cannot read the token.
 * 2. The browser's own word on where the request came from (Sec-Fetch-Site, else Origin), the
 *    same check as the checkout host's (isSameOriginPost in checkout/csrf.ts). The sign-in form has no session and so
 *    no token yet: this check is what stops another site from signing a browser in with the
 *    attacker's key (login CSRF).
 */

export const CSRF_FIELD = 'csrf_token';

export function csrfTokenMatches(expected: string, presented: string | null | undefined): boolean {
  if (typeof presented !== 'string' || presented.length === 0) return false;
  // Hashing first gives equal lengths, so neither the comparison nor its length check leaks.
  const a = createHash('sha256').update(expected).digest();
  const b = createHash('sha256').update(presented).digest();
  return timingSafeEqual(a, b);
}
