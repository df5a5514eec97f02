import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type ContentCoding, compressStatic } from './encoding.ts';

/**
 * The checkout page's static files, read once at start-up and served from the checkout host
 * itself (the CSP allows 'self' only). Each is addressed by a hash of its content, so it can be
 * cached for a year and a new release is never mixed with an old stylesheet or script. Comments
 * and indentation are stripped and each encoding compressed once, here: a payer's phone receives
 * about a third of the source's bytes.
 */
export interface StaticAsset {
  /** URL path on the checkout host, e.g. /assets/checkout.3f9a0c1d2e.js */
  path: string;
  contentType: string;
  /** The bytes as served without Content-Encoding. */
  body: Buffer;
}

export interface CompressedAsset extends StaticAsset {
  /** The same bytes compressed, by coding. */
  encoded: Record<ContentCoding, Buffer>;
  /** Strong validator of each representation (the content hash, and the coding). */
  etags: Record<ContentCoding | 'identity', string>;
}

/**
 * Stylesheet without its comments, the whitespace around punctuation and the zero before a decimal
 * point (0.75rem is .75rem). Safe for this file: no string in it holds a brace, a semicolon, a
 * comment marker or a number, and no selector has a space before a colon.
 */
export function minifyCss(source: string): string {
  return source
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\s+/g, ' ')
    .replace(/\s*([{};,>])\s*/g, '$1')
    .replace(/:\s+/g, ':')
    .replace(/;}/g, '}')
    .replace(/(^|[^\d.])0\.(\d)/g, '$1.$2')
    .trim();
}

/**
 * Script without its whole-line comments and indentation, and without the line breaks after a
 * `;`, `{`, `,` or `(`, where a line break never ends a statement (no automatic semicolon goes
 * there). Safe for these files: no string or template literal spans lines, so trimming or joining
 * lines never changes a value; comments after code stay (a `//` may sit inside a string or a
 * regular expression), and a line holding `//` is never joined to the next, which it could comment out.
 */
export function minifyJs(source: string): string {
  const lines = source
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('//'));
  return lines
    .map((line, i) => (i < lines.length - 1 && /[;{,(]$/.test(line) && !line.includes('//') ? line : `${line}\n`))
    .join('')
    .trimEnd();
}

function load(file: string, contentType: string, minify: (source: string) => string): CompressedAsset {
  const body = Buffer.from(minify(readFileSync(new URL(`./assets/${file}`, import.meta.url), 'utf8')));
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 10);
  const dot = file.lastIndexOf('.');
  return {
    path: `/assets/${file.slice(0, dot)}.${hash}${file.slice(dot)}`,
    contentType,
    body,
    encoded: compressStatic(body),
    etags: { identity: `"${hash}"`, br: `"${hash}-br"`, gzip: `"${hash}-gz"` },
  };
}

export interface CheckoutAssets {
  css: CompressedAsset;
  js: CompressedAsset;
  /** "Pay with USDC": a module the page's script imports only when the browser has a wallet (its path is in js). */
  usdcJs: CompressedAsset;
}

let loaded: CheckoutAssets | undefined;

/** The module's path as checkout.js names it; replaced by its content-hashed path before hashing checkout.js. */
const USDC_SCRIPT_NAME = "'/assets/checkout-usdc.js'";

export function checkoutAssets(): CheckoutAssets {
  if (!loaded) {
    const usdcJs = load('checkout-usdc.js', 'text/javascript; charset=utf-8', minifyJs);
    const js = load('checkout.js', 'text/javascript; charset=utf-8', (source) =>
      minifyJs(source).replace(USDC_SCRIPT_NAME, `'${usdcJs.path}'`),
    );
    loaded = { css: load('checkout.css', 'text/css; charset=utf-8', minifyCss), js, usdcJs };
  }
  return loaded;
}
