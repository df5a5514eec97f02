import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

/**
 * The checkout page's static files, read once at start-up and served from the checkout host
 * itself (the CSP allows 'self' only). Each is addressed by a hash of its content, so it can be
 * cached for a year and a new release is never mixed with an old stylesheet or script.
 */
export interface StaticAsset {
  /** URL path on the checkout host, e.g. /assets/checkout.3f9a0c1d2e.js */
  path: string;
  contentType: string;
  body: Buffer;
}

function load(file: string, contentType: string): StaticAsset {
  const body = readFileSync(new URL(`./assets/${file}`, import.meta.url));
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 10);
  const dot = file.lastIndexOf('.');
  return { path: `/assets/${file.slice(0, dot)}.${hash}${file.slice(dot)}`, contentType, body };
}

export interface CheckoutAssets {
  css: StaticAsset;
  js: StaticAsset;
}

let loaded: CheckoutAssets | undefined;

export function checkoutAssets(): CheckoutAssets {
  loaded ??= {
    css: load('checkout.css', 'text/css; charset=utf-8'),
    js: load('checkout.js', 'text/javascript; charset=utf-8'),
  };
  return loaded;
}
