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

function read(file: string, minify: (source: string) => string): Buffer {
  return Buffer.from(minify(readFileSync(new URL(`./assets/${file}`, import.meta.url), 'utf8')));
}

function hashOf(...bodies: Buffer[]): string {
  const hash = createHash('sha256');
  for (const body of bodies) hash.update(body);
  return hash.digest('hex').slice(0, 10);
}

/** /assets/<name>.<hash><ext> */
function hashedPath(file: string, hash: string): string {
  const dot = file.lastIndexOf('.');
  return `/assets/${file.slice(0, dot)}.${hash}${file.slice(dot)}`;
}

function asset(path: string, contentType: string, body: Buffer, hash: string): CompressedAsset {
  return {
    path,
    contentType,
    body,
    encoded: compressStatic(body),
    etags: { identity: `"${hash}"`, br: `"${hash}-br"`, gzip: `"${hash}-gz"` },
  };
}

function load(file: string, contentType: string, minify: (source: string) => string): CompressedAsset {
  const body = read(file, minify);
  const hash = hashOf(body);
  return asset(hashedPath(file, hash), contentType, body, hash);
}

export interface CheckoutAssets {
  css: CompressedAsset;
  js: CompressedAsset;
  /**
   * "Pay with USDC": a module the page's script imports only when the browser has a wallet. It
   * shares the script's hash, so the script finds it by its own name (checkout.<hash>.js →
   * checkout.<hash>.usdc.js) and carries no second hash for every payer to download.
   */
  usdcJs: CompressedAsset;
}

let loaded: CheckoutAssets | undefined;

export function checkoutAssets(): CheckoutAssets {
  if (!loaded) {
    const JS = 'text/javascript; charset=utf-8';
    const [js, usdcJs] = [read('checkout.js', minifyJs), read('checkout-usdc.js', minifyJs)];
    // Hashed together: a change to either renames both, so neither is ever cached stale.
    const hash = hashOf(js, usdcJs);
    const jsPath = hashedPath('checkout.js', hash);
    loaded = {
      css: load('checkout.css', 'text/css; charset=utf-8', minifyCss),
      js: asset(jsPath, JS, js, hash),
      usdcJs: asset(jsPath.replace(/js$/, 'usdc.js'), JS, usdcJs, hash),
    };
  }
  return loaded;
}
