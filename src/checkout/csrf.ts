import type { IncomingHttpHeaders } from 'node:http';

/**
 * Cross-site request forgery check for the payer's form post (POST /pay/:id).
 *
 * The checkout host has no cookies and no login: the unguessable payment id in the URL is the
 * only capability, so a forged post from another site can do nothing the forger could not do
 * by posting the same form itself. What the check still buys: another site cannot make a
 * payer's browser pay (or decline) a session behind the payer's back, which matters as soon as a
 * real rail authenticates the payer by something ambient. A per-page token would add state or a
 * signing key for no gain here, so the check is on the headers browsers set and pages cannot:
 *
 * 1. Sec-Fetch-Site (every current browser): `same-origin` or `none` (typed/bookmarked) pass;
 *    `same-site` and `cross-site` are refused.
 * 2. Without it, Origin must equal the checkout host's public origin (CHECKOUT_BASE_URL).
 *    `Origin: null` (sandboxed frames, privacy redirects) is refused.
 * 3. With neither header the request did not come from a browser form (curl, a server), which is
 *    not what CSRF is about, so it passes.
 *
 * This is why the pages send `Referrer-Policy: same-origin` rather than `no-referrer`: under
 * no-referrer a browser sends `Origin: null` even on a same-origin form post, which would make
 * rule 2 refuse honest payers on browsers without Sec-Fetch-Site. Cross-origin requests (the
 * navigation to the merchant's redirect_url) still carry no Referer.
 */
export function isSameOriginPost(headers: IncomingHttpHeaders, checkoutOrigin: string): boolean {
  const site = headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none';
  const origin = headers.origin;
  if (typeof origin === 'string') return origin === checkoutOrigin;
  return true;
}
