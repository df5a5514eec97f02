import { safeHref } from './html.ts';

/**
 * Where the payer goes back to: the payment's redirect_url with `payment_id` and `status`
 * appended. The merchant's own query is kept byte for byte (re-serialising it through
 * URLSearchParams would turn %20 into + and reorder nothing but still change bytes a merchant
 * may sign); only earlier `payment_id` / `status` pairs are dropped so that ours are the only ones.
 * The fragment stays at the end. Returns undefined for anything that is not http(s).
 */
export function returnUrl(redirectUrl: string, paymentId: string, status: string): string | undefined {
  const href = safeHref(redirectUrl);
  if (href === undefined) return undefined;
  const url = new URL(href);
  const kept = url.search
    .slice(1)
    .split('&')
    .filter((pair) => pair !== '' && !OURS.has(decodeName(pair)));
  kept.push(`payment_id=${encodeURIComponent(paymentId)}`, `status=${encodeURIComponent(status)}`);
  url.search = `?${kept.join('&')}`;
  return url.href;
}

const OURS = new Set(['payment_id', 'status']);

function decodeName(pair: string): string {
  const name = pair.split('=', 1)[0] ?? '';
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}
